"""View models of the catalogue for the Airflow UI page: typed rows and series, no web framework.

``catalogue`` is the table of every contract version, ``contract_view`` the page of one, and
``run_activity`` the contracts one DAG run acted on. Statuses and the latest evidence come from
``status`` (the same code as ``contractctl status``); retirement readiness is the lifecycle's own
guards for ``deprecated -> retired``. Time series come straight from the registry store (consumers per
version from the reader sessions the broker activity recorder stored, ``consumer_series``), and the
reader timeline from the latest retirement audit's ``readers`` check (``readers_view``).

At estate scale (2,000 versions) the catalogue is read in a handful of queries for all versions
(``BatchReads``), filtered (``filter_rows``, with ``findings``: what ``FINDINGS_HELP`` says), sorted, and
cut into pages (``page_of``); benchmarks/README.md#estate-scale-the-contracts-page has the figures.
``quality_view`` makes the latest envelope quality evidence readable expectation by expectation.

A retired version is judged by what happened up to its retirement: the migration parity it shows is the
latest recorded by then (``parity_until_retired``; a run after the retirement judges a finished migration),
and messages still received on it are an alarm of their own (``retired_traffic_view``).

The views by page: ``evidence`` (what every page shows of stored evidence), ``catalogue``, ``contract``,
``readers`` (the contract page's reader timeline) and ``runs``; this package re-exports each page's names.
"""

from __future__ import annotations

from contract_platform_airflow.ui.views.catalogue import (
    FINDING_KINDS,
    FINDINGS_HELP,
    ROW_KINDS,
    BatchReads,
    CatalogueRow,
    Page,
    RetirementView,
    SortKey,
    catalogue,
    catalogue_per_version,
    filter_rows,
    findings,
    page_of,
    retirement,
    row_of,
    sort_rows,
    with_summaries,
)
from contract_platform_airflow.ui.views.contract import (
    CONSUMERS_WINDOW,
    ContractView,
    FixtureView,
    consumer_series,
    contract_view,
    runtime_view,
)
from contract_platform_airflow.ui.views.evidence import (
    EVIDENCE_DAGS,
    MANY,
    EvidenceItem,
    ExpectationView,
    MigrationView,
    Point,
    ProducerTrafficView,
    QualityView,
    ReplayView,
    RetiredTrafficView,
    Series,
    ViewModel,
    count_of,
    dag_of,
    evidence_item,
    invalid_rate,
    invalid_rate_series,
    latest_item,
    moment_of,
    parity_until_retired,
    quality_view,
    retired_at,
    retired_traffic_view,
    status_values,
    text_of,
)
from contract_platform_airflow.ui.views.readers import (
    ObstacleView,
    ReaderSessionView,
    ReadersView,
    Span,
    latest_readers,
    readers_view,
)
from contract_platform_airflow.ui.views.runs import (
    RUNS_PER_PAGE,
    RunActivity,
    RunReads,
    RunTouch,
    dag_activity,
    run_activity,
)

__all__ = [
    "BatchReads",
    "CONSUMERS_WINDOW",
    "CatalogueRow",
    "ContractView",
    "EVIDENCE_DAGS",
    "EvidenceItem",
    "ExpectationView",
    "FINDINGS_HELP",
    "FINDING_KINDS",
    "FixtureView",
    "MANY",
    "MigrationView",
    "ObstacleView",
    "Page",
    "Point",
    "ProducerTrafficView",
    "QualityView",
    "ROW_KINDS",
    "RUNS_PER_PAGE",
    "ReaderSessionView",
    "ReadersView",
    "ReplayView",
    "RetiredTrafficView",
    "RetirementView",
    "RunActivity",
    "RunReads",
    "RunTouch",
    "Series",
    "SortKey",
    "Span",
    "ViewModel",
    "catalogue",
    "catalogue_per_version",
    "consumer_series",
    "contract_view",
    "count_of",
    "dag_activity",
    "dag_of",
    "evidence_item",
    "filter_rows",
    "findings",
    "invalid_rate",
    "invalid_rate_series",
    "latest_item",
    "latest_readers",
    "moment_of",
    "page_of",
    "parity_until_retired",
    "quality_view",
    "readers_view",
    "retired_at",
    "retired_traffic_view",
    "retirement",
    "row_of",
    "run_activity",
    "runtime_view",
    "sort_rows",
    "status_values",
    "text_of",
    "with_summaries",
]

"""Run the envelope quality suites with Great Expectations on Spark, in a file-mode GX context.

Per message type found in the window (``contractType`` of the envelopes frame): a Spark datasource
``envelope_quality.<type>`` with one dataframe asset and a whole-dataframe batch definition, the
suite from ``suite_for``, a validation definition and a checkpoint of the same name whose
``UpdateDataDocsAction`` renders the result into the Data Docs. Everything is added with
``add_or_update_*``, so re-running over the same context replaces, never duplicates.

Where GX computes (``choose_engine``): a window of at most ``IN_PROCESS_ROWS`` envelopes (all types judged
together) is collected once from Spark and judged by GX's pandas engine in this process; a larger one stays on
Spark. The suites, the frame they judge (prepared by the same Spark transforms) and the samples
(``quality.samples``, on the Spark frame) are the same either way; what changes is that GX's metrics, some twenty
small Spark jobs per type, run in this process instead (``tests/spark/test_envelope_quality.py`` holds the two
engines' results equal). The report says which engine ran and why (``QualityReport.engine``).

The checkpoints render nothing themselves: the Data Docs are built once per run, after every type was judged,
for this run's validation results and only the suites whose expectations changed (a suite's page is rendered
again only when its configuration differs from the one stored, or the page is missing).

The context lives in ``<data>/gx`` (``settings.data_dir()``) unless ``context_root`` says otherwise;
the Data Docs in ``<gx>/uncommitted/data_docs/local_site/index.html``, their pages pointed at the scripts and
styles the platform ships instead of CDNs, so the site opens offline (``quality.offline_site``), and beside them
``envelope_quality.html``, the same results on one page without scripts (``quality.results_page``). Neither Great
Expectations nor PySpark is imported until ``run_suite`` runs, and GX's usage analytics are off before it is
(``quality.telemetry``).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from contract_platform import settings
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.errors import QualityError, UsageError
from contract_platform.quality import columns as col
from contract_platform.quality.offline_site import make_offline
from contract_platform.quality.report import NO_TYPE, ExpectationResult, QualityReport, TypeQuality
from contract_platform.quality.results_page import RESULTS_PAGE_NAME, write_results_page
from contract_platform.quality.samples import sample_message_ids
from contract_platform.quality.suite import ExpectationSpec, suite_for
from contract_platform.quality.telemetry import analytics_off

__all__ = [
    "DATA_DOCS_INDEX",
    "IN_PROCESS",
    "IN_PROCESS_ROWS",
    "PREFIX",
    "RESULTS_PAGE",
    "RESULT_FORMAT",
    "data_docs_index",
    "choose_engine",
    "default_context_root",
    "results_page_path",
    "run_suite",
]

PREFIX = "envelope_quality"  # GX names: <PREFIX>.<messageType> for datasource, suite, validation, checkpoint
ASSET = "envelopes"
BATCH = "whole"
DATA_DOCS_INDEX = Path("uncommitted", "data_docs", "local_site", "index.html")
RESULTS_PAGE = DATA_DOCS_INDEX.with_name(RESULTS_PAGE_NAME)  # the results on one page without scripts
RESULT_FORMAT = {"result_format": "SUMMARY"}  # samples come from quality.samples (GX's index lists cost 2x)
ROWS_PER_PARTITION = 1_000_000  # a type's envelopes are coalesced to this: GX runs many small Spark jobs
# Envelopes of a run (every type judged, together) up to which GX judges them on pandas in this process: collected
# once, they are a few MB; GX's twenty-odd Spark jobs per type cost seconds each on two cores, its pandas metrics
# milliseconds (benchmarks/README.md, "Envelope quality and archive validation: fixed cost per type").
IN_PROCESS_ROWS = 100_000
IN_PROCESS, SPARK = "in-process", "spark"  # the engines GX computes on


def default_context_root() -> Path:
    return settings.data_dir() / "gx"


def data_docs_index(context_root: str | Path | None = None) -> Path:
    """Where the Data Docs index of a context is (whether or not it has been built yet)."""
    return Path(context_root or default_context_root()) / DATA_DOCS_INDEX


def results_page_path(context_root: str | Path | None = None) -> Path:
    """Where the offline envelope quality results page of a context is (``quality.results_page``)."""
    return Path(context_root or default_context_root()) / RESULTS_PAGE


def choose_engine(rows: int, limit: int = IN_PROCESS_ROWS) -> tuple[str, str]:
    """(engine, why): ``IN_PROCESS`` for at most ``limit`` envelopes judged in a run, else ``SPARK``."""
    if rows <= limit:
        return (
            IN_PROCESS,
            f"{rows:,} envelopes, at most {limit:,}: GX judged them in-process (pandas), no Spark job per expectation",
        )
    return SPARK, f"{rows:,} envelopes, over {limit:,}: GX judged them on Spark"


def run_suite(
    envelopes_df: Any,
    catalog: Catalog,
    *,
    context_root: str | Path | None = None,
    data_docs: bool = True,
    in_process_rows: int = IN_PROCESS_ROWS,
) -> QualityReport:
    """Validate every type found in ``envelopes_df`` (a Spark DataFrame with ``columns.REQUIRED``).

    ``in_process_rows``: the most envelopes GX judges in this process (``choose_engine``); 0 keeps GX on Spark.

    Raises ``UsageError`` when the frame lacks columns (build it with
    ``spark_jobs.envelope_quality.prepare``) or the context folder cannot be written, and
    ``CatalogError`` when a contract's ``quality.mostly`` names an unknown expectation.
    """
    missing = [name for name in col.REQUIRED if name not in envelopes_df.columns]
    if missing:
        raise UsageError(
            f"the envelopes frame lacks {', '.join(missing)}: build it with spark_jobs.envelope_quality.prepare"
        )
    started = time.perf_counter()
    rows, unassigned = _count_types(envelopes_df, catalog)
    judged = [contract for contract in catalog if contract.message_type in rows]
    suites = {contract.message_type: suite_for(contract) for contract in judged}  # CatalogError before GX starts
    root = Path(context_root) if context_root is not None else default_context_root()
    engine, why = choose_engine(sum(rows[contract.message_type] for contract in judged), in_process_rows)
    local = _collected(envelopes_df, [c.message_type for c in judged]) if engine == IN_PROCESS and judged else None
    context = _open_context(root)
    types: list[TypeQuality] = []
    rendered: list[Any] = []  # what the Data Docs render: this run's results, the suites that changed
    for contract in judged:
        quality, identifiers = _validate(
            context,
            envelopes_df,
            contract,
            suites[contract.message_type],
            rows[contract.message_type],
            local[contract.message_type] if local is not None else None,
            root if data_docs else None,
        )
        types.append(quality)
        rendered.extend(identifiers)
    index = root / DATA_DOCS_INDEX
    if data_docs and rendered:
        _build_data_docs(context, rendered)
    report = QualityReport(
        types=tuple(types),
        data_docs=str(index) if data_docs and index.exists() else None,
        gx_root=str(root),
        unassigned=unassigned,
        elapsed_seconds=time.perf_counter() - started,
        engine=engine,
        engine_reason=why,
    )
    if not data_docs:
        return report
    try:  # GX's pages load their scripts from CDNs: pointed at the copies the platform ships (quality.offline_site)
        make_offline(index.parent)
    except OSError as exc:
        raise UsageError(f"{index.parent}: cannot copy the Data Docs' scripts and styles there ({exc})") from exc
    try:  # beside the Data Docs, from the same results: one page without scripts (quality.results_page)
        page = write_results_page(report, index.parent)
    except OSError as exc:
        raise UsageError(f"{index.parent}: cannot write the envelope quality results page there ({exc})") from exc
    return replace(report, results_page=str(page))


def _count_types(envelopes_df: Any, catalog: Catalog) -> tuple[dict[str, int], dict[str, int]]:
    """(envelopes per catalogued contractType, envelopes no suite judges by their messageType)."""
    rows: Counter[str] = Counter()
    unassigned: Counter[str] = Counter()
    for group in envelopes_df.groupBy(col.CONTRACT_TYPE, "messageType").count().collect():
        contract_type, message_type, count = group[0], group[1], int(group[2])
        if contract_type is not None and contract_type in catalog:
            rows[contract_type] += count
        else:
            unassigned[message_type if message_type is not None else NO_TYPE] += count
    return dict(rows), dict(sorted(unassigned.items()))


def _collected(envelopes_df: Any, types: list[str]) -> dict[str, Any]:
    """The judged types' envelopes as one pandas frame each, collected from Spark in one job."""
    from pyspark.sql import functions as F

    frame = envelopes_df.where(F.col(col.CONTRACT_TYPE).isin(types)).toPandas()
    return {name: part.reset_index(drop=True) for name, part in frame.groupby(col.CONTRACT_TYPE, sort=False)}


def _build_data_docs(context: Any, identifiers: list[Any]) -> None:
    from great_expectations.exceptions import GreatExpectationsError

    try:
        context.build_data_docs(resource_identifiers=identifiers)
    except GreatExpectationsError as exc:
        raise QualityError(f"Great Expectations could not build the Data Docs: {exc}") from exc


def _source(context: Any, name: str, *, pandas: bool) -> Any:
    """The type's datasource for the engine that runs (one kept from the other engine's run is replaced)."""
    kind = "pandas" if pandas else "spark"
    if name in context.data_sources.all() and context.data_sources.get(name).type != kind:
        context.data_sources.delete(name)
    if pandas:
        source = context.data_sources.add_or_update_pandas(name=name)
    else:
        source = context.data_sources.add_or_update_spark(name=name, persist=False)
    return source.add_dataframe_asset(name=ASSET).add_batch_definition_whole_dataframe(BATCH)


def _suite_page(root: Path, name: str) -> Path:
    """Where the Data Docs keep a suite's page (GX cuts the name at its dots into folders)."""
    return (root / DATA_DOCS_INDEX).parent / "expectations" / Path(*name.split(".")).with_suffix(".html")


def _fingerprint(configurations: list[dict[str, Any]], meta: Mapping[str, Any]) -> str:
    text = json.dumps([configurations, dict(meta)], sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _suite_unchanged(context: Any, name: str, fingerprint: str) -> bool:
    from great_expectations.exceptions import DataContextError

    try:
        stored = context.suites.get(name)
    except DataContextError:  # not stored yet
        return False
    return bool((stored.meta or {}).get("fingerprint") == fingerprint)


def _open_context(root: Path) -> Any:
    analytics_off()  # before GX's first import, which is where GX reads it (quality.telemetry)
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig
    from great_expectations.exceptions import GreatExpectationsError

    try:
        root.mkdir(parents=True, exist_ok=True)
        context = gx.get_context(mode="file", context_root_dir=str(root))
    except OSError as exc:
        raise UsageError(f"{root}: cannot use it as the Great Expectations folder ({exc}); give another") from exc
    except GreatExpectationsError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise QualityError(
            f"{root}: Great Expectations cannot read its configuration there ({first}); "
            "fix great_expectations.yml or give another --gx-root"
        ) from exc
    if _progress_bars_shown(context.variables.progress_bars):  # logs, not terminals, read our runs
        context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
        context.variables.save()
    return context


def _progress_bars_shown(bars: Any) -> bool:
    """``bars`` is None, a ``ProgressBarsConfig``, or a dict once GX has read it back from its file."""
    if bars is None:
        return True
    shown = bars if isinstance(bars, Mapping) else vars(bars)
    return bool(shown.get("globally", True) or shown.get("metric_calculations", True))


def _validate(
    context: Any,
    envelopes_df: Any,
    contract: Contract,
    specs: list[ExpectationSpec],
    rows: int,
    local: Any,
    docs_root: Path | None,
) -> tuple[TypeQuality, list[Any]]:
    """One type's suite run, on its pandas frame ``local`` (in-process) or else on Spark; with what the Data Docs
    render of it when ``docs_root`` is given (its validation result; its suite only when that changed)."""
    import great_expectations as gx
    from great_expectations.data_context.types.resource_identifiers import ExpectationSuiteIdentifier
    from great_expectations.exceptions import GreatExpectationsError
    from great_expectations.expectations.expectation_configuration import ExpectationConfiguration
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    name = f"{PREFIX}.{contract.message_type}"
    judged = [spec for spec in specs if spec.skip is None and rows >= spec.min_rows]
    skipped = {
        spec.id: spec.skip or f"needs at least {spec.min_rows} envelopes in the window, found {rows}"
        for spec in specs
        if spec not in judged
    }
    batch = _source(context, name, pandas=local is not None)
    configurations = [spec.configuration() for spec in judged]
    meta = {"contract_version": contract.version, "built_by": "contract_platform.quality.suite_for"}
    fingerprint = _fingerprint(configurations, meta)
    unchanged = _suite_unchanged(context, name, fingerprint)
    suite = context.suites.add_or_update(
        gx.ExpectationSuite(
            name=name,
            expectations=[ExpectationConfiguration(**config).to_domain_obj() for config in configurations],
            meta={**meta, "fingerprint": fingerprint},
        )
    )
    validation = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=name, data=batch, suite=suite)
    )
    checkpoint = context.checkpoints.add_or_update(
        gx.Checkpoint(name=name, validation_definitions=[validation], actions=[], result_format=RESULT_FORMAT)
    )
    frame = envelopes_df.where(F.col(col.CONTRACT_TYPE) == contract.message_type)
    if local is None:
        frame = frame.coalesce(max(1, min(frame.rdd.getNumPartitions(), math.ceil(rows / ROWS_PER_PARTITION))))
        frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        try:
            outcome = checkpoint.run(batch_parameters={"dataframe": local if local is not None else frame})
        except GreatExpectationsError as exc:
            raise QualityError(f"{name}: Great Expectations could not run the suite: {exc}") from exc
        [(result_id, result)] = outcome.run_results.items()
        evaluated = {_platform_id(r): r for r in result.results}
        rejected = [spec for spec in judged if spec.id in evaluated and _unexpected_count(evaluated[spec.id])]
        samples = sample_message_ids(frame, rejected)  # on Spark either way: one implementation of the conditions
    finally:
        if local is None:
            frame.unpersist(blocking=True)
    rendered: list[Any] = []
    if docs_root is not None:
        rendered.append(result_id)
        if not unchanged or not _suite_page(docs_root, name).is_file():
            rendered.append(ExpectationSuiteIdentifier(name=name))
    quality = TypeQuality(
        message_type=contract.message_type,
        contract_version=contract.version,
        rows=rows,
        results=tuple(
            _expectation_result(evaluated[spec.id], spec, samples.get(spec.id, ()))
            for spec in judged
            if spec.id in evaluated
        ),
        skipped=skipped,
        suite=name,
    )
    return quality, rendered


def _platform_id(result: Any) -> str:
    return str(result.expectation_config.meta["id"])


def _unexpected_count(result: Any) -> int:
    return int((result.result or {}).get("unexpected_count") or 0)


def _expectation_result(result: Any, spec: ExpectationSpec, samples: tuple[str, ...]) -> ExpectationResult:
    figures: Mapping[str, Any] = result.result or {}
    error = _error(result.exception_info)
    elements = int(figures.get("element_count") or 0)
    judged = elements - int(figures.get("missing_count") or 0)
    unexpected = _unexpected_count(result)
    return ExpectationResult(
        id=spec.id,
        gx_type=spec.gx_type,
        mostly=spec.mostly,
        success=bool(result.success) and error is None,
        judged=judged,
        unexpected=unexpected,
        observed=(judged - unexpected) / judged if judged and error is None else None,
        samples=samples,
        error=error,
    )


def _error(info: Any) -> str | None:
    """GX's exception info is flat (``raised_exception``) or keyed by metric; the first message, if any."""
    if not isinstance(info, Mapping):
        return None
    if info.get("raised_exception"):
        return str(info.get("exception_message") or "raised an exception")
    for value in info.values():
        if isinstance(value, Mapping) and value.get("raised_exception"):
            return str(value.get("exception_message") or "raised an exception")
    return None

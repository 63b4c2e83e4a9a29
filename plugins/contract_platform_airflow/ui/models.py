"""The JSON the ``/contracts/api`` endpoints return: pydantic models, camelCase on the wire.

The views the pages show are models of the same kind (``views.ViewModel``) and the API returns them as they are:
each field is declared once, in the view. This module holds only what the API says beyond the pages (links,
run URLs, the contract's own fields) and the domain's dataclasses described for the wire, read by attribute."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field

from contract_platform.evidence.runtime import RuntimeWindow
from contract_platform_airflow.ui import views

__all__ = [
    "CatalogueOut",
    "ContractDetailOut",
    "ContractSummaryOut",
    "ErrorOut",
    "EvidenceListOut",
    "EvidenceOut",
    "ReadersOut",
    "ReplayOut",
    "RetiredTrafficOut",
    "RunOut",
]


_Out = views.ViewModel
EvidenceOut = views.EvidenceItem
RetirementOut = views.RetirementView
SeriesOut = views.Series
RetiredTrafficOut = views.RetiredTrafficView
ReadersOut = views.ReadersView


class ErrorOut(_Out):
    detail: str = Field(description="What went wrong and what to do about it.")


class LinksOut(_Out):
    page: str
    api: str


class ContractSummaryOut(views.CatalogueRow):
    description: str = Field("", exclude=True)  # the detail says it; a summary leaves it out
    retired_traffic: Any = Field(None, exclude=True)  # the detail says it in full
    findings: list[str] = Field(
        default_factory=list, description="Open findings or blockers (the catalogue's findings filter); empty: none."
    )
    links: LinksOut

    @classmethod
    def of(cls, row: views.CatalogueRow, base: str) -> ContractSummaryOut:
        links = LinksOut(page=f"{base}/c/{row.message_type}", api=f"{base}/api/contracts/{row.message_type}")
        return cls.model_validate({**dict(row), "findings": views.findings(row), "links": links})


class CatalogueOut(_Out):
    total: int = Field(description="Contract versions in the catalogue, before filtering.")
    contracts: list[ContractSummaryOut] = Field(description="The page asked for (page, perPage) of the matching ones.")
    matching: int = Field(0, description="Contract versions the filters and search keep, over all pages.")
    page: int = Field(1, description="This page's number, from 1.")
    per_page: int = Field(0, description="Rows per page.")
    pages: int = Field(1, description="Pages of matching versions (at least 1).")


class TransitionOut(_Out):
    at: str | None
    from_status: str | None = Field(alias="from")
    to_status: str = Field(alias="to")
    actor: str
    run_id: str | None
    reason: str
    dag_id: str | None = Field(description="The DAG that applied it, when a DAG run did.")
    run_url: str | None = Field(description="The DAG run in the Airflow UI.")


class RefusalOut(_Out):
    at: str | None
    from_status: str | None = Field(alias="from")
    to_status: str = Field(alias="to")
    reasons: list[str]


class FieldOut(_Out):
    path: str
    type: str
    required: bool
    constraints: str
    description: str


class MigrationOut(_Out):
    from_type: str
    to_type: str
    parity: EvidenceOut | None


class GuardTallyOut(_Out):
    service: str
    side: str = Field(description="publish or consume")
    checked: int
    rejected: int
    rate: float | None
    by_reason: dict[str, int]
    tolerated: int
    migrated: int
    business_rejected: int = Field(description="The handler's own refusals: never in the rate.")
    until: str | None = Field(description="The end of the latest period counted.")


class RuntimeOut(_Out):
    """What services' guards judged of this version over the validation window (docs/service-client.md)."""

    days: int
    target: float
    checked: int
    rejected: int
    rate: float | None
    over_target: bool = Field(description="Over validation.invalidRateTarget: promotion is refused.")
    dropped: int = Field(description="Periods' counts services dropped: the figures undercount them.")
    services: list[GuardTallyOut] = Field(validation_alias=AliasChoices("services", "tallies"))

    @classmethod
    def of(cls, window: RuntimeWindow | None) -> RuntimeOut | None:
        return None if window is None else cls.model_validate(window)


class ReplayOut(views.ReplayView):
    """The latest replay of one version: its decision, the figures behind it, and the run that recorded it."""

    run_url: str | None = Field(description="The contract_change run in the Airflow UI.")


class ContractDetailOut(ContractSummaryOut):
    description: str
    exchange: str
    routing_key: str
    compatibility_policy: str
    superseded_by: str | None
    sunset: str | None
    holds_in_force: list[str]
    consumers: list[dict[str, str]]
    fields: list[FieldOut]
    fixtures: list[views.FixtureView]
    history: list[TransitionOut]
    refusals: list[RefusalOut]
    latest_evidence: dict[str, EvidenceOut]
    consumers_over_time: list[SeriesOut]
    invalid_rate_over_time: SeriesOut
    migrations: list[MigrationOut]
    replay: list[ReplayOut] = Field(default=[], description="The latest replay of each version, newest first.")
    readers: ReadersOut | None = Field(
        default=None,
        description="The latest retirement audit's readers check (None when it had none): the page's reader timeline.",
    )
    retired_traffic: RetiredTrafficOut | None = Field(
        default=None,
        description="A retired version's messages received after its retirement (None: none seen, or not retired).",
    )
    runtime: RuntimeOut | None = Field(
        default=None,
        description="Services' guards over the validation window, beside archive validation (None: no service reports).",
    )


class EvidenceListOut(_Out):
    message_type: str
    evidence: list[EvidenceOut]


class RunContractOut(views.RunTouch):
    page: str


class RunOut(_Out):
    dag_id: str
    run_id: str
    run_url: str = Field(description="The DAG run in the Airflow UI.")
    contracts: list[RunContractOut]

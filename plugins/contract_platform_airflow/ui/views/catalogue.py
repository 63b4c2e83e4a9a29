"""The catalogue page: one row per version (declared and effective status, the latest evidence, the retirement guards), read for every version in a handful of queries, then filtered, sorted and cut into pages."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, Protocol, cast

from pydantic import Field

from contract_platform.catalog.model import Catalog, Contract, Status
from contract_platform.evidence import EvidenceKind, Registry
from contract_platform.evidence.records import EvidenceRecord, RefusalRecord, TransitionRecord
from contract_platform.lifecycle import GuardContext, check_step
from contract_platform.status import contract_status, evidence_summary, overview, status_entry
from contract_platform_airflow.ui.views.evidence import (
    EvidenceItem,
    ViewModel,
    evidence_item,
    invalid_rate,
    latest_item,
    moment_of,
    parity_until_retired,
    retired_at,
)

__all__ = [
    "BatchReads",
    "CatalogueRow",
    "FINDINGS_HELP",
    "FINDING_KINDS",
    "Page",
    "ROW_KINDS",
    "RetirementView",
    "SortKey",
    "catalogue",
    "catalogue_per_version",
    "filter_rows",
    "findings",
    "page_of",
    "retirement",
    "row_of",
    "sort_rows",
    "with_summaries",
]


class RetirementView(ViewModel):
    """Whether ``deprecated -> retired`` could be taken now, by the lifecycle's own guards."""

    applicable: bool = Field(description="Only superseded and deprecated versions are judged.")
    ready: bool
    verdict: str | None = Field(description="Verdict of the latest retirement audit, if any.")
    blockers: tuple[str, ...]


class CatalogueRow(ViewModel):
    message_type: str
    domain: str
    kind: str
    version: str
    owner_team: str
    owner_service: str
    declared: str
    effective: str | None = Field(description="None until the registry has seen the contract.")
    in_sync: bool
    compatibility: str
    last_transition_at: str | None
    last_refusal: str | None
    invalid_rate: float | None = Field(description="Of the latest archive validation.")
    invalid_rate_target: float
    validation: EvidenceItem | None
    quality: EvidenceItem | None
    parity: EvidenceItem | None
    retirement: RetirementView
    description: str = ""
    # a retired version's messages received after its retirement (the API says it as ``retiredTraffic`` in full)
    retired_traffic: EvidenceItem | None = None


class SortKey(StrEnum):
    MESSAGE_TYPE = "messageType"
    DOMAIN = "domain"
    OWNER = "owner"
    DECLARED = "declared"
    EFFECTIVE = "effective"
    INVALID_RATE = "invalidRate"
    LAST_TRANSITION = "lastTransition"


class BatchReads(Registry, Protocol):
    """What ``catalogue`` reads in one query each, whatever the number of versions (the SQL store has them)."""

    def latest_transitions(self) -> dict[str, TransitionRecord]: ...

    def latest_refusals(self) -> dict[str, RefusalRecord]: ...

    def latest_evidence_of(
        self, kinds: Iterable[EvidenceKind | str], message_types: Iterable[str] | None = None
    ) -> dict[tuple[str, EvidenceKind], EvidenceRecord]: ...


# The evidence a catalogue row shows; the first three are its findings when they did not pass.
FINDING_KINDS = (EvidenceKind.ARCHIVE_VALIDATION, EvidenceKind.ENVELOPE_QUALITY, EvidenceKind.MIGRATION_PARITY)


ROW_KINDS = (*FINDING_KINDS, EvidenceKind.RETIREMENT_AUDIT, EvidenceKind.RETIRED_TRAFFIC)


FINDINGS_HELP = (
    "Versions with open findings or blockers: the latest archive validation, envelope quality or migration "
    "parity did not pass (failed or inconclusive; a retired version's parity as of its retirement); the "
    "effective status is not the declared one (a step was refused or is still pending); a superseded or "
    "deprecated version has retirement blockers; or a retired version still received messages."
)


class _Prefetched:
    """A registry whose ``latest_evidence`` answers from what was read in one batch; anything else goes to the store."""

    def __init__(self, registry: Registry, latest: Mapping[tuple[str, EvidenceKind], EvidenceRecord]) -> None:
        self._registry, self._latest = registry, latest

    def latest_evidence(
        self, message_type: str, kind: EvidenceKind | str, *, contract_version: str | None = None
    ) -> EvidenceRecord | None:
        key = EvidenceKind(kind)
        if contract_version is not None or key not in ROW_KINDS:
            return self._registry.latest_evidence(message_type, kind, contract_version=contract_version)
        return self._latest.get((message_type, key))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._registry, name)


def retirement(
    contract: Contract,
    registry: Registry,
    effective: str | None,
    now: datetime | None = None,
    *,
    latest: EvidenceRecord | None | Literal[False] = False,
) -> RetirementView:
    """``latest``: the latest retirement audit when the caller read it already (None: there is none)."""
    if latest is False:
        latest = registry.latest_evidence(contract.message_type, EvidenceKind.RETIREMENT_AUDIT)
    verdict = str(latest.verdict) if latest is not None else None
    if effective not in (Status.SUPERSEDED, Status.DEPRECATED):
        return RetirementView(applicable=False, ready=effective == Status.RETIRED, verdict=verdict, blockers=())
    ctx = GuardContext(contract, registry, now=now or datetime.now(UTC))
    blockers = tuple(check_step(Status.DEPRECATED, Status.RETIRED, ctx))
    return RetirementView(applicable=True, ready=not blockers, verdict=verdict, blockers=blockers)


def catalogue(
    catalog: Catalog, registry: Registry, now: datetime | None = None, *, summaries: bool = True
) -> list[CatalogueRow]:
    """One row per contract version, in messageType order.

    The SQL store answers in a handful of queries for the whole catalogue (``BatchReads``); a registry
    without them is asked per version, as ``contractctl status`` asks. ``summaries=False`` leaves the
    evidence's one-line summaries empty (filtering and sorting do not need them): ``with_summaries``
    fills them in for the rows shown.
    """
    if not all(hasattr(registry, name) for name in ("latest_transitions", "latest_refusals", "latest_evidence_of")):
        return catalogue_per_version(catalog, registry, now)
    batch = cast(BatchReads, registry)
    states = {state.message_type: state for state in batch.all_effective()}
    last = batch.latest_transitions()
    refused = batch.latest_refusals()
    latest = batch.latest_evidence_of(ROW_KINDS)
    prefetched = cast(Registry, _Prefetched(batch, latest))
    rows = []
    for contract in catalog:
        message_type = contract.message_type
        state = states.get(message_type)
        effective = str(state.status) if state else None
        transition = last.get(message_type) if state else None
        refusal = refused.get(message_type) if state else None
        summary = {
            "declared": str(contract.status),
            "effective": effective,
            "inSync": effective == str(contract.status),
            "lastTransitionAt": transition.at.isoformat(timespec="seconds") if transition else None,
            "lastRefusal": "; ".join(refusal.reasons) if refusal else None,
        }
        evidence = {
            str(kind): status_entry(record, summary=summaries)
            for kind in ROW_KINDS
            if (record := latest.get((message_type, kind))) is not None
        }
        rows.append(row_of(catalog, prefetched, contract, summary, now, evidence))
    return rows


def catalogue_per_version(catalog: Catalog, registry: Registry, now: datetime | None) -> list[CatalogueRow]:
    rows = []
    for summary in overview(catalog, registry):
        contract = catalog.get(summary["messageType"])
        assert contract is not None, "overview() lists catalogue contracts only"
        rows.append(row_of(catalog, registry, contract, summary, now))
    return rows


def row_of(
    catalog: Catalog,
    registry: Registry,
    contract: Contract,
    summary: Mapping[str, Any],
    now: datetime | None,
    latest: Mapping[str, Any] | None = None,
) -> CatalogueRow:
    if latest is None:
        latest = contract_status(catalog, registry, contract.message_type)["evidence"]
    validation = latest_item(EvidenceKind.ARCHIVE_VALIDATION, latest.get(EvidenceKind.ARCHIVE_VALIDATION))
    audit = latest.get(EvidenceKind.RETIREMENT_AUDIT)
    parity = latest_item(EvidenceKind.MIGRATION_PARITY, latest.get(EvidenceKind.MIGRATION_PARITY))
    traffic = None
    if summary["effective"] == Status.RETIRED:  # judged by what happened up to its retirement, and alarmed after
        retired = retired_at(registry, contract.message_type)
        if parity is not None and retired is not None and (moment_of(parity.collected_at) or retired) > retired:
            kept = parity_until_retired(registry, contract.message_type, retired)
            parity = evidence_item(kept) if kept is not None else None
        traffic = latest_item(EvidenceKind.RETIRED_TRAFFIC, latest.get(EvidenceKind.RETIRED_TRAFFIC))
    return CatalogueRow(
        message_type=contract.message_type,
        domain=contract.domain,
        kind=str(contract.kind),
        version=contract.version,
        owner_team=contract.owner.team,
        owner_service=contract.owner.service,
        declared=str(summary["declared"]),
        effective=summary["effective"],
        in_sync=bool(summary["inSync"]),
        compatibility=contract.compatibility,
        last_transition_at=summary["lastTransitionAt"],
        last_refusal=summary["lastRefusal"],
        invalid_rate=invalid_rate(validation.figures) if validation else None,
        invalid_rate_target=contract.validation.invalid_rate_target,
        validation=validation,
        quality=latest_item(EvidenceKind.ENVELOPE_QUALITY, latest.get(EvidenceKind.ENVELOPE_QUALITY)),
        parity=parity,
        retirement=_retirement_of(contract, registry, summary["effective"], now, audit),
        description=contract.description,
        retired_traffic=traffic,
    )


def _retirement_of(
    contract: Contract, registry: Registry, effective: str | None, now: datetime | None, audit: Any
) -> RetirementView:
    if audit is None:
        return retirement(contract, registry, effective, now, latest=None)
    return retirement(contract, registry, effective, now)


def with_summaries(rows: Iterable[CatalogueRow]) -> list[CatalogueRow]:
    """``rows`` with the one-line summary of each piece of evidence they show (see ``catalogue``)."""

    def summed(item: EvidenceItem | None) -> EvidenceItem | None:
        return item.model_copy(update={"summary": evidence_summary(item.figures)}) if item is not None else None

    return [
        row.model_copy(
            update={
                "validation": summed(row.validation),
                "quality": summed(row.quality),
                "parity": summed(row.parity),
                "retired_traffic": summed(row.retired_traffic),
            }
        )
        for row in rows
    ]


def findings(row: CatalogueRow) -> list[str]:
    """What makes ``row`` a version with open findings or blockers (``FINDINGS_HELP``); empty: none."""
    found = []
    for item in (row.validation, row.quality, row.parity):
        if item is not None and item.verdict != "pass":
            found.append(f"{item.kind} {item.verdict}")
    if not row.in_sync:
        found.append("refused: " + row.last_refusal if row.last_refusal else "effective status is not the declared one")
    if row.retirement.applicable and row.retirement.blockers:
        found.extend(row.retirement.blockers)
    if row.retired_traffic is not None:
        found.append(f"retired, yet received messages: {row.retired_traffic.summary}")
    return found


@dataclass(frozen=True)
class Page:
    """One page of rows: ``number`` from 1, ``per_page`` rows at most, out of ``matching`` rows."""

    rows: tuple[CatalogueRow, ...]
    number: int
    per_page: int
    matching: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.matching // self.per_page))

    @property
    def first(self) -> int:
        """Position (from 1) of the first row shown; 0 when none is."""
        return (self.number - 1) * self.per_page + 1 if self.rows else 0

    @property
    def last(self) -> int:
        return self.first + len(self.rows) - 1 if self.rows else 0


def page_of(rows: Sequence[CatalogueRow], number: int, per_page: int) -> Page:
    """Page ``number`` (from 1) of ``rows``, with their evidence summaries; past the last page: the last page."""
    pages = max(1, -(-len(rows) // per_page))
    number = min(max(1, number), pages)
    start = (number - 1) * per_page
    return Page(tuple(with_summaries(rows[start : start + per_page])), number, per_page, len(rows))


def filter_rows(
    rows: Iterable[CatalogueRow],
    *,
    domain: str | None = None,
    status: str | None = None,
    owner: str | None = None,
    query: str | None = None,
    open_findings: bool = False,
) -> list[CatalogueRow]:
    """Rows of ``domain``, whose declared or effective status is ``status``, owned by team ``owner``,
    containing ``query`` (case-insensitive) in the messageType, description, owner or service, and
    (``open_findings``) with open findings or blockers (``findings``)."""
    needle = (query or "").strip().lower()
    kept = []
    for row in rows:
        if domain and row.domain != domain:
            continue
        if status and status not in (row.declared, row.effective):
            continue
        if owner and row.owner_team != owner:
            continue
        haystack = " ".join((row.message_type, row.description, row.owner_team, row.owner_service)).lower()
        if needle and needle not in haystack:
            continue
        if open_findings and not findings(row):
            continue
        kept.append(row)
    return kept


def _sort_value(row: CatalogueRow, key: SortKey) -> tuple[Any, ...]:
    rank = {str(s): s.rank for s in Status}
    values: dict[SortKey, tuple[Any, ...]] = {
        SortKey.MESSAGE_TYPE: (row.message_type,),
        SortKey.DOMAIN: (row.domain, row.message_type),
        SortKey.OWNER: (row.owner_team, row.message_type),
        SortKey.DECLARED: (rank[row.declared], row.message_type),
        SortKey.EFFECTIVE: (rank.get(row.effective or "", -1), row.message_type),
        SortKey.INVALID_RATE: (row.invalid_rate is not None, row.invalid_rate or 0.0, row.message_type),
        SortKey.LAST_TRANSITION: (row.last_transition_at or "", row.message_type),
    }
    return values[key]


def sort_rows(rows: Iterable[CatalogueRow], key: SortKey, *, descending: bool = False) -> list[CatalogueRow]:
    return sorted(rows, key=lambda row: _sort_value(row, key), reverse=descending)

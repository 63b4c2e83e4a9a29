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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Literal, Protocol, cast

from contract_platform.catalog.model import Catalog, Contract, Status
from contract_platform.docs import FieldRow, field_rows, render_contract_page
from contract_platform.evidence import EvidenceKind, Registry
from contract_platform.evidence.figures import ProducerTraffic, RetiredTrafficFigures, RuntimeValidationFigures
from contract_platform.evidence.records import EvidenceMark, EvidenceRecord, RefusalRecord, TransitionRecord
from contract_platform.evidence.runtime import RuntimeWindow, runtime_window
from contract_platform.impact.moves import ConsumerMove
from contract_platform.lifecycle import GuardContext, check_step
from contract_platform.migration.readers import readers_over_time, version_sessions
from contract_platform.retirement.observed import observed_moves, platform_vhost
from contract_platform.status import contract_status, evidence_summary, overview, status_entry

__all__ = [
    "EVIDENCE_DAGS",
    "FINDINGS_HELP",
    "BatchReads",
    "Page",
    "CatalogueRow",
    "ContractView",
    "EvidenceItem",
    "ExpectationView",
    "QualityView",
    "FixtureView",
    "MigrationView",
    "ObstacleView",
    "Point",
    "ReaderSessionView",
    "ReadersView",
    "ReplayView",
    "RetiredTrafficView",
    "RetirementView",
    "RunReads",
    "RunActivity",
    "RunTouch",
    "Series",
    "Span",
    "SortKey",
    "catalogue",
    "contract_view",
    "dag_activity",
    "dag_of",
    "evidence_item",
    "filter_rows",
    "findings",
    "invalid_rate",
    "latest_item",
    "page_of",
    "quality_view",
    "readers_view",
    "retired_traffic_view",
    "run_activity",
    "sort_rows",
    "status_values",
    "with_summaries",
]

# Which platform DAG records which kind of evidence (docs/design.md#dags). Evidence rows carry a run_id
# but no dag_id, and scheduled run ids repeat across daily DAGs, so a run claims only its own kinds.
EVIDENCE_DAGS: Mapping[EvidenceKind, str] = {
    EvidenceKind.LINT: "contract_change",
    EvidenceKind.FIXTURES: "contract_change",
    EvidenceKind.COMPATIBILITY: "contract_change",
    EvidenceKind.TOPOLOGY: "contract_change",
    EvidenceKind.MIGRATION_SPEC: "contract_change",
    EvidenceKind.ARCHIVE_VALIDATION: "topic_archive_validation",
    EvidenceKind.ENVELOPE_QUALITY: "envelope_quality",
    EvidenceKind.MIGRATION_PARITY: "dual_publish_migration",
    EvidenceKind.RETIREMENT_AUDIT: "retirement_audit",
    EvidenceKind.REPLAY: "contract_change",
    EvidenceKind.RETIRED_TRAFFIC: "topic_archive_validation",
}

_MANY = 10_000


@dataclass(frozen=True)
class EvidenceItem:
    """One piece of evidence as the page shows it; ``summary`` is ``status``'s one-line figures."""

    kind: str
    verdict: str
    collected_at: str | None
    summary: str
    figures: Mapping[str, Any]
    reference: str | None = None
    run_id: str | None = None
    contract_version: str | None = None


@dataclass(frozen=True)
class RetirementView:
    """Whether ``deprecated -> retired`` could be taken now, by the lifecycle's own guards."""

    applicable: bool  # only versions on their way out (superseded, deprecated) are judged
    ready: bool
    verdict: str | None  # of the latest retirement audit
    blockers: tuple[str, ...]


@dataclass(frozen=True)
class CatalogueRow:
    message_type: str
    domain: str
    kind: str
    version: str
    owner_team: str
    owner_service: str
    declared: str
    effective: str | None
    in_sync: bool
    compatibility: str
    last_transition_at: str | None
    last_refusal: str | None
    invalid_rate: float | None
    invalid_rate_target: float
    validation: EvidenceItem | None
    quality: EvidenceItem | None
    parity: EvidenceItem | None
    retirement: RetirementView
    description: str = ""
    retired_traffic: EvidenceItem | None = None  # a retired version's messages received after its retirement


class SortKey(StrEnum):
    MESSAGE_TYPE = "messageType"
    DOMAIN = "domain"
    OWNER = "owner"
    DECLARED = "declared"
    EFFECTIVE = "effective"
    INVALID_RATE = "invalidRate"
    LAST_TRANSITION = "lastTransition"


@dataclass(frozen=True)
class Point:
    at: datetime
    value: float


@dataclass(frozen=True)
class Series:
    name: str
    points: tuple[Point, ...]


@dataclass(frozen=True)
class FixtureView:
    name: str
    valid: bool
    document: Any


@dataclass(frozen=True)
class MigrationView:
    """The migration between this version and its neighbour; parity is recorded under the older one."""

    from_type: str
    to_type: str
    parity: EvidenceItem | None
    # per consumer of the older version: what it must change, whether it has moved (impact.moves)
    moves: tuple[ConsumerMove, ...] = ()


@dataclass(frozen=True)
class ReplayView:
    """The latest replay of one version (``status.replay_by_version``): its decision and what it rests on."""

    version: str
    decision: str  # confirmed | refused | accepted-on-evidence | unknown | not-applicable
    verdict: str
    collected_at: str | None
    run_id: str | None
    static_verdict: str | None
    replayed: int | float | None
    rejected: int | float | None
    rejection_rate: int | float | None
    already_invalid: int | float | None
    min_messages: int | float | None
    window_days: int | float | None
    top_pointers: tuple[Mapping[str, Any], ...]
    sample_message_ids: tuple[str, ...]
    in_flight_checked: bool
    in_flight_inspected: int | float | None
    in_flight_rejected: int | float | None
    in_flight_queues: tuple[Mapping[str, Any], ...]
    in_flight_note: str | None  # why in-flight messages were not (all) checked
    reasons: tuple[str, ...]

    @classmethod
    def of(cls, shown: Mapping[str, Any]) -> ReplayView:
        in_flight = shown["inFlight"]
        return cls(
            version=shown["version"],
            decision=shown["decision"],
            verdict=shown["verdict"],
            collected_at=shown["collectedAt"],
            run_id=shown["runId"],
            static_verdict=shown["staticVerdict"],
            replayed=shown["replayed"],
            rejected=shown["rejected"],
            rejection_rate=shown["rejectionRate"],
            already_invalid=shown["alreadyInvalid"],
            min_messages=shown["minMessages"],
            window_days=shown["windowDays"],
            top_pointers=tuple(shown["topPointers"]),
            sample_message_ids=tuple(shown["sampleMessageIds"]),
            in_flight_checked=in_flight["inspected"] is not None,
            in_flight_inspected=in_flight["inspected"],
            in_flight_rejected=in_flight["rejected"],
            in_flight_queues=tuple(in_flight["queues"]),
            in_flight_note=in_flight["note"],
            reasons=tuple(shown["reasons"]),
        )


@dataclass(frozen=True)
class RetiredTrafficView:
    """Messages received on a retired version after its retirement, as the latest archive validation that saw
    any recorded them (``retired_traffic`` evidence): who still publishes it, how many, and when."""

    messages: int
    first_received_at: datetime | None
    last_received_at: datetime | None
    retired_at: datetime | None
    producers: tuple[ProducerTraffic, ...]
    collected_at: str | None
    run_id: str | None


@dataclass(frozen=True)
class Span:
    """A stretch of time with what it was: a recorder segment (``note``: why it ended) or a gap (its reason)."""

    start: datetime
    end: datetime
    note: str | None


@dataclass(frozen=True)
class ReaderSessionView:
    """One consumer on one queue of the version, as the broker activity recorder saw it."""

    queue: str  # the label the audit gives the queue
    vhost: str | None
    consumer_tag: str | None
    connection: str | None
    peer_host: str | None
    user: str | None
    attached_at: datetime | None  # None: already attached when the recorder first saw it
    detached_at: datetime | None  # None: still attached


@dataclass(frozen=True)
class ObstacleView:
    """What kept the span from being clean: a reader (fail) or something not known (unknown)."""

    kind: str  # reader | counters | gap | uncovered | deleted
    verdict: str
    start: datetime | None  # None: since before anything was known
    end: datetime | None
    text: str
    queue: str | None


@dataclass(frozen=True)
class ReadersView:
    """The ``readers`` check of the latest retirement audit: who read the version's queues over its window.

    ``window_start``/``window_end`` are None when the check judged no window (the management API was
    missing, or the version has no queues): then only ``queues``, ``verdict`` and ``blocker`` say anything.
    """

    collected_at: str | None
    verdict: str
    blocker: str | None
    clears_at: datetime | None
    window_start: datetime | None
    window_end: datetime | None
    queues: tuple[str, ...]
    sessions: tuple[ReaderSessionView, ...]
    segments: tuple[Span, ...]
    gaps: tuple[Span, ...]
    obstacles: tuple[ObstacleView, ...]
    clean_since: datetime | None
    audits: int | None  # audits in the clean stretch
    required_observations: int | None
    required_span: str | None
    passes_at: datetime | None  # the earliest it can pass, when it did not
    passed_at: datetime | None
    note: str | None


@dataclass(frozen=True)
class ExpectationView:
    """One expectation of the latest envelope quality run, as its evidence recorded it."""

    id: str
    met: bool
    unexpected: int | None
    mostly: float | None
    samples: tuple[str, ...]


@dataclass(frozen=True)
class QualityView:
    """The latest envelope quality run of a version: every expectation met or missed, and what was not judged."""

    verdict: str
    collected_at: str | None
    contract_version: str | None
    rows: int | None
    expectations: tuple[ExpectationView, ...]
    skipped: tuple[tuple[str, str], ...]
    reference: str | None  # the results page (opens offline) or the Data Docs index the run wrote


def quality_view(item: EvidenceItem | None) -> QualityView | None:
    """The readable view of an ``envelope_quality`` evidence item (its figures: docs/design.md#envelope-quality)."""
    if item is None:
        return None
    figures = item.figures
    failed = {str(name) for name in figures.get("failed_expectations") or ()}
    unexpected, mostly = _mapping(figures.get("unexpected")), _mapping(figures.get("mostly"))
    samples = _mapping(figures.get("samples"))
    ids = list(dict.fromkeys([*mostly, *unexpected, *sorted(failed)]))
    expectations = tuple(
        ExpectationView(
            id=str(name),
            met=str(name) not in failed,
            unexpected=_count_of(unexpected.get(name)),
            mostly=float(m) if isinstance((m := mostly.get(name)), int | float) else None,
            samples=tuple(str(s) for s in samples.get(name) or ()),
        )
        for name in ids
    )
    return QualityView(
        verdict=item.verdict,
        collected_at=item.collected_at,
        contract_version=item.contract_version,
        rows=_count_of(figures.get("rows")),
        expectations=tuple(sorted(expectations, key=lambda e: (e.met, e.id))),  # missed first
        skipped=tuple(sorted((str(k), str(v)) for k, v in _mapping(figures.get("skipped")).items())),
        reference=item.reference,
    )


@dataclass(frozen=True)
class ContractView:
    contract: Contract
    row: CatalogueRow
    status: Mapping[str, Any]  # contract_status(): declared, effective, history, refusals, latest evidence
    fields: tuple[FieldRow, ...]
    fixtures: tuple[FixtureView, ...]
    docs_markdown: str
    evidence: tuple[EvidenceItem, ...]
    consumers: tuple[Series, ...]
    invalid_rates: Series
    migrations: tuple[MigrationView, ...]
    holds: tuple[str, ...] = field(default=())
    replays: tuple[ReplayView, ...] = field(default=())  # the latest replay of each version, newest first
    readers: ReadersView | None = None  # the latest retirement audit's readers check, if it had one
    quality: QualityView | None = None  # the latest envelope quality run, expectation by expectation
    retired_traffic: RetiredTrafficView | None = None  # a retired version still receiving messages: an alarm
    runtime: RuntimeWindow | None = None  # what services' guards judged over the validation window, if any guard did


@dataclass(frozen=True)
class RunTouch:
    """What one run did to one contract."""

    message_type: str
    transitions: tuple[str, ...]
    refusals: tuple[str, ...]
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class RunActivity:
    dag_id: str
    run_id: str
    contracts: tuple[RunTouch, ...]


# -- figures ---------------------------------------------------------------------------------------


def invalid_rate(figures: Mapping[str, Any]) -> float | None:
    """``invalid_rate`` as recorded, else ``invalid / total``; None when the figures cannot say."""
    rate = figures.get("invalid_rate")
    if isinstance(rate, int | float) and not isinstance(rate, bool):
        return float(rate)
    invalid, total = figures.get("invalid"), figures.get("total")
    if isinstance(invalid, int) and isinstance(total, int) and total > 0:
        return invalid / total
    return None


def dag_of(actor: str | None) -> str | None:
    """``"dag:contract_change"`` -> ``"contract_change"``; a person's name -> None."""
    if actor and actor.startswith("dag:") and len(actor) > 4:
        return actor[4:]
    return None


def latest_item(kind: str, latest: Mapping[str, Any] | None) -> EvidenceItem | None:
    if latest is None:
        return None
    return EvidenceItem(
        kind=kind,
        verdict=str(latest["verdict"]),
        collected_at=latest.get("collectedAt"),
        summary=str(latest.get("summary", "")),
        figures=dict(latest.get("figures") or {}),
        reference=latest.get("reference"),
    )


def evidence_item(record: Any) -> EvidenceItem:
    collected = record.collected_at.isoformat(timespec="seconds") if record.collected_at else None
    return EvidenceItem(
        kind=str(record.kind),
        verdict=str(record.verdict),
        collected_at=collected,
        summary=_summary(record.figures),
        figures=dict(record.figures),
        reference=record.reference,
        run_id=record.run_id,
        contract_version=record.contract_version,
    )


def _summary(figures: Mapping[str, Any]) -> str:
    shown = [f"{k}={v}" for k, v in figures.items() if isinstance(v, int | float | str | bool)]
    return ", ".join(shown[:8])


# -- the readers check of a retirement audit -------------------------------------------------------


def _moment(value: Any) -> datetime | None:
    """An ISO-8601 instant of the figures (``2026-11-25T12:00:00Z``) as an aware datetime; None if it is none."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _mappings(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _count_of(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def readers_view(figures: Mapping[str, Any], collected_at: str | None = None) -> ReadersView | None:
    """The ``readers`` check of a ``retirement_audit``'s figures; None for an audit without one (older audits).

    Entries whose times cannot be read are left out rather than drawn somewhere they never were.
    """
    check = _mapping(figures.get("checks")).get("readers")
    if not isinstance(check, Mapping):
        return None
    shown = _mapping(check.get("figures"))
    window, coverage, required = (_mapping(shown.get(key)) for key in ("window", "coverage", "required"))
    sessions = tuple(
        ReaderSessionView(
            queue=str(s.get("queue") or ""),
            vhost=_text(s.get("vhost")),
            consumer_tag=_text(s.get("consumerTag")),
            connection=_text(s.get("connection")),
            peer_host=_text(s.get("peerHost")),
            user=_text(s.get("user")),
            attached_at=_moment(s.get("attachedAt")),
            detached_at=_moment(s.get("detachedAt")),
        )
        for s in _mappings(shown.get("sessions"))
    )
    segments = tuple(
        Span(start, end, _text(s.get("endReason")))
        for s in _mappings(coverage.get("segments"))
        if (start := _moment(s.get("from"))) is not None and (end := _moment(s.get("until"))) is not None
    )
    gaps = tuple(
        Span(start, end, _text(g.get("reason")))
        for g in _mappings(coverage.get("gaps"))
        if (start := _moment(g.get("start"))) is not None and (end := _moment(g.get("end"))) is not None
    )
    obstacles = tuple(
        ObstacleView(
            kind=str(o.get("kind") or ""),
            verdict=str(o.get("verdict") or "unknown"),
            start=_moment(o.get("start")),
            end=_moment(o.get("end")),
            text=str(o.get("text") or ""),
            queue=_text(o.get("queue")),
        )
        for o in _mappings(shown.get("obstacles"))
    )
    queues = shown.get("queues")
    return ReadersView(
        collected_at=collected_at,
        verdict=str(check.get("verdict") or "unknown"),
        blocker=_text(check.get("blocker")),
        clears_at=_moment(check.get("clears_at")),
        window_start=_moment(window.get("start")),
        window_end=_moment(window.get("end")),
        queues=tuple(str(q) for q in queues) if isinstance(queues, list) else (),
        sessions=sessions,
        segments=segments,
        gaps=gaps,
        obstacles=obstacles,
        clean_since=_moment(shown.get("cleanSince")),
        audits=_count_of(shown.get("audits")),
        required_observations=_count_of(required.get("observations")),
        required_span=_text(required.get("span")),
        passes_at=_moment(shown.get("passesAt")),
        passed_at=_moment(shown.get("passedAt")),
        note=_text(shown.get("note")),
    )


def _latest_readers(registry: Registry, message_type: str) -> ReadersView | None:
    latest = registry.latest_evidence(message_type, EvidenceKind.RETIREMENT_AUDIT)
    if latest is None:
        return None
    return readers_view(latest.figures, evidence_item(latest).collected_at)


# -- the catalogue ---------------------------------------------------------------------------------


class BatchReads(Registry, Protocol):
    """What ``catalogue`` reads in one query each, whatever the number of versions (the SQL store has them)."""

    def latest_transitions(self) -> dict[str, TransitionRecord]: ...

    def latest_refusals(self) -> dict[str, RefusalRecord]: ...

    def latest_evidence_of(
        self, kinds: Iterable[EvidenceKind | str], message_types: Iterable[str] | None = None
    ) -> dict[tuple[str, EvidenceKind], EvidenceRecord]: ...


class RunReads(Registry, Protocol):
    """What the run pages read in one query each, whatever the number of types (the SQL store has them)."""

    def transitions_by(self, actor: str, run_ids: Iterable[str] | None = None) -> list[TransitionRecord]: ...

    def refusals_by(self, actor: str, run_ids: Iterable[str] | None = None) -> list[RefusalRecord]: ...

    def evidence_of_runs(
        self, kinds: Iterable[EvidenceKind | str], run_ids: Iterable[str] | None = None
    ) -> list[EvidenceMark]: ...

    def run_times(self, actor: str, kinds: Iterable[EvidenceKind | str]) -> dict[str, datetime]: ...


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
        return _catalogue_per_version(catalog, registry, now)
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
        rows.append(_row(catalog, prefetched, contract, summary, now, evidence))
    return rows


def _catalogue_per_version(catalog: Catalog, registry: Registry, now: datetime | None) -> list[CatalogueRow]:
    rows = []
    for summary in overview(catalog, registry):
        contract = catalog.get(summary["messageType"])
        assert contract is not None, "overview() lists catalogue contracts only"
        rows.append(_row(catalog, registry, contract, summary, now))
    return rows


def _row(
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
        if parity is not None and retired is not None and (_moment(parity.collected_at) or retired) > retired:
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
        return replace(item, summary=evidence_summary(item.figures)) if item is not None else None

    return [
        replace(
            row,
            validation=summed(row.validation),
            quality=summed(row.quality),
            parity=summed(row.parity),
            retired_traffic=summed(row.retired_traffic),
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


# -- one contract ----------------------------------------------------------------------------------


def contract_view(catalog: Catalog, registry: Registry, message_type: str, now: datetime | None = None) -> ContractView:
    """Everything the contract page shows. Raises ``UsageError`` for a messageType not in the catalogue."""
    status = contract_status(catalog, registry, message_type)
    contract = catalog.get(message_type)
    assert contract is not None, "contract_status() refuses unknown message types"
    summary = next(s for s in overview(_single(catalog, contract), registry))
    recent = registry.evidence(message_type, limit=50)
    today = (now or datetime.now(UTC)).date()
    retired = retired_at(registry, message_type)
    return ContractView(
        contract=contract,
        row=_row(catalog, registry, contract, summary, now),
        status=status,
        fields=tuple(field_rows(contract.payload_schema)),
        fixtures=tuple(FixtureView(f.name, f.valid, f.document) for f in contract.fixtures),
        docs_markdown=render_contract_page(contract, catalog),
        evidence=tuple(evidence_item(record) for record in recent),
        consumers=consumer_series(registry, catalog.family(contract.family), now or datetime.now(UTC)),
        invalid_rates=invalid_rate_series(registry, message_type),
        migrations=tuple(_migrations(catalog, registry, contract)),
        holds=tuple(f"{h.kind} until {h.until.isoformat()}: {h.reason}" for h in contract.holds_in_force(today)),
        replays=tuple(ReplayView.of(shown) for shown in status["replay"]),
        readers=_latest_readers(registry, message_type),
        quality=quality_view(_latest_quality(recent, registry, message_type)),
        retired_traffic=retired_traffic_view(registry, message_type, retired),
        runtime=runtime_view(registry, contract, now or datetime.now(UTC)),
    )


def runtime_view(registry: Registry, contract: Contract, now: datetime) -> RuntimeWindow | None:
    """Services' guards over the validation window, summed as the promotion guard sums them; None when no service
    reported any (a type no service guards)."""
    days = contract.validation.window_days
    since = now - timedelta(days=days)
    records = registry.evidence(contract.message_type, EvidenceKind.RUNTIME_VALIDATION, since=since, limit=_MANY)
    if not records:
        return None
    figures = (RuntimeValidationFigures.of(record) for record in records)
    return runtime_window(figures, days=days, target=contract.validation.invalid_rate_target)


def _latest_quality(recent: Sequence[Any], registry: Registry, message_type: str) -> EvidenceItem | None:
    record = next((r for r in recent if r.kind == EvidenceKind.ENVELOPE_QUALITY), None)
    if record is None:
        record = registry.latest_evidence(message_type, EvidenceKind.ENVELOPE_QUALITY)
    return evidence_item(record) if record is not None else None


def _single(catalog: Catalog, contract: Contract) -> Catalog:
    return Catalog(catalog.root, catalog.envelope_schema, {contract.message_type: contract})


CONSUMERS_WINDOW = timedelta(days=30)  # how far back the consumers chart reads reader sessions


def consumer_series(registry: Registry, versions: Sequence[Contract], now: datetime) -> tuple[Series, ...]:
    """Consumers per version over time: the distinct readers of each version's consumer queues at every moment
    (``migration.readers``), from the reader sessions the broker activity recorder stored over the last
    ``CONSUMERS_WINDOW``, drawn from the first moment any version of the family was read. No series has a
    point when nothing was recorded: the chart says so instead of drawing zero readers."""
    vhost, since = platform_vhost(), now - CONSUMERS_WINDOW
    sessions = {v.message_type: version_sessions(registry, v, vhost, since=since, until=now) for v in versions}
    starts = [max(s.attached_at or since, since) for found in sessions.values() for s in found]
    if not starts:
        return tuple(Series(message_type, ()) for message_type in sessions)
    start = min(starts)
    return tuple(
        Series(
            message_type, tuple(Point(c.at, float(c.readers)) for c in readers_over_time(found, since=start, until=now))
        )
        for message_type, found in sessions.items()
    )


def invalid_rate_series(registry: Registry, message_type: str) -> Series:
    """The invalid rate of every archive validation of ``message_type``, oldest first."""
    records = registry.evidence(message_type, EvidenceKind.ARCHIVE_VALIDATION, limit=_MANY)
    points = []
    for record in reversed(records):
        rate = invalid_rate(record.figures)
        if rate is not None:
            points.append(Point(record.collected_at, rate))
    return Series(message_type, tuple(points))


def retired_at(registry: Registry, message_type: str) -> datetime | None:
    """When the version was retired (its step to retired in the history); None while it is not retired."""
    state = registry.effective(message_type)
    if state is None or state.status is not Status.RETIRED:
        return None
    steps = [t.at for t in registry.history(message_type) if t.to_status is Status.RETIRED]
    return steps[-1] if steps else state.updated_at


def parity_until_retired(registry: Registry, message_type: str, retired: datetime | None) -> EvidenceRecord | None:
    """The migration parity a version shows: the latest, or for a retired version the latest recorded by its
    retirement. A parity run after it judged a finished migration (the traffic it found is ``retired_traffic``)."""
    latest = registry.latest_evidence(message_type, EvidenceKind.MIGRATION_PARITY)
    if retired is None or latest is None or latest.collected_at <= retired:
        return latest
    records = registry.evidence(message_type, EvidenceKind.MIGRATION_PARITY, limit=_MANY)  # newest first
    return next((record for record in records if record.collected_at <= retired), None)


def retired_traffic_view(registry: Registry, message_type: str, retired: datetime | None) -> RetiredTrafficView | None:
    """A retired version's latest ``retired_traffic`` evidence, typed; None while it is not retired, or when no
    archive validation saw a message on it after its retirement."""
    if retired is None:
        return None
    record = registry.latest_evidence(message_type, EvidenceKind.RETIRED_TRAFFIC)
    if record is None:
        return None
    figures = RetiredTrafficFigures.of(record)
    return RetiredTrafficView(
        messages=figures.messages,
        first_received_at=_moment(figures.first_received_at),
        last_received_at=_moment(figures.last_received_at),
        retired_at=_moment(figures.retired_at) or retired,
        producers=figures.by_producer,
        collected_at=evidence_item(record).collected_at,
        run_id=record.run_id,
    )


def _migrations(catalog: Catalog, registry: Registry, contract: Contract) -> Iterable[MigrationView]:
    for older, newer in ((catalog.predecessor(contract), contract), (contract, catalog.successor(contract))):
        if older is None or newer is None or older.message_type == newer.message_type:
            continue
        latest = parity_until_retired(registry, older.message_type, retired_at(registry, older.message_type))
        parity = evidence_item(latest) if latest else None
        moves = tuple(observed_moves(catalog, older, newer, registry))
        yield MigrationView(older.message_type, newer.message_type, parity, moves)


# -- DAG runs --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Touch:
    run_id: str
    at: datetime
    message_type: str
    what: str  # transition | refusal | evidence
    text: str


def _claimed_kinds(dag_id: str) -> list[EvidenceKind]:
    return [kind for kind in EvidenceKind if EVIDENCE_DAGS.get(kind, dag_id) == dag_id]


def _run_reads(registry: Registry) -> RunReads | None:
    names = ("transitions_by", "refusals_by", "evidence_of_runs", "run_times")
    return cast(RunReads, registry) if all(hasattr(registry, name) for name in names) else None


def _touches(
    catalog: Catalog, registry: Registry, dag_id: str, run_id: str | None, *, run_ids: Sequence[str] | None = None
) -> list[_Touch]:
    """Every transition, refusal and evidence ``dag_id`` recorded (in run ``run_id`` only, if given).

    The SQL store answers in three queries (``RunReads``), for the runs ``run_ids`` only when given; a
    registry without them is asked per type.
    """
    known = {c.message_type for c in catalog} | {s.message_type for s in registry.all_effective()}
    actor = f"dag:{dag_id}"
    kinds = _claimed_kinds(dag_id)
    runs = _run_reads(registry)
    evidence: list[EvidenceMark | EvidenceRecord] = []
    if runs is not None:
        only = [run_id] if run_id is not None else run_ids
        transitions = [t for t in runs.transitions_by(actor, only) if t.message_type in known]
        refusals = [r for r in runs.refusals_by(actor, only) if r.message_type in known]
        evidence += [e for e in runs.evidence_of_runs(kinds, only) if e.message_type in known]
    else:
        transitions, refusals = [], []
        for message_type in sorted(known):
            transitions += [t for t in registry.history(message_type) if t.actor == actor and t.run_id]
            refusals += [r for r in registry.refusals(message_type, limit=_MANY) if r.actor == actor and r.run_id]
            evidence += [e for e in registry.evidence(message_type, limit=_MANY) if e.run_id and e.kind in kinds]
    found = []
    for t in transitions:
        if t.run_id and run_id in (None, t.run_id):
            text = f"{t.from_status or 'none'} -> {t.to_status}: {t.reason}"
            found.append(_Touch(t.run_id, t.at, t.message_type, "transition", text))
    for r in refusals:
        if r.run_id and run_id in (None, r.run_id):
            text = f"{r.from_status or 'none'} -> {r.to_status} refused: {'; '.join(r.reasons)}"
            found.append(_Touch(r.run_id, r.at, r.message_type, "refusal", text))
    for e in evidence:
        if e.run_id and run_id in (None, e.run_id):
            found.append(_Touch(e.run_id, e.collected_at, e.message_type, "evidence", f"{e.kind} {e.verdict}"))
    return found


def _activity(dag_id: str, run_id: str, touches: Iterable[_Touch]) -> RunActivity:
    by_type: dict[str, dict[str, list[str]]] = {}
    for touch in sorted(touches, key=lambda t: t.at):
        by_type.setdefault(touch.message_type, {"transition": [], "refusal": [], "evidence": []})[touch.what].append(
            touch.text
        )
    contracts = tuple(
        RunTouch(mt, tuple(what["transition"]), tuple(what["refusal"]), tuple(what["evidence"]))
        for mt, what in sorted(by_type.items())
    )
    return RunActivity(dag_id, run_id, contracts)


def run_activity(catalog: Catalog, registry: Registry, dag_id: str, run_id: str) -> RunActivity:
    """The contracts run ``run_id`` of ``dag_id`` acted on: its transitions, refusals and evidence.

    Transitions and refusals name their DAG (actor ``dag:<dag_id>``); evidence names only the run,
    so a run claims the evidence kinds its DAG records (``EVIDENCE_DAGS``).
    """
    return _activity(dag_id, run_id, _touches(catalog, registry, dag_id, run_id))


RUNS_PER_PAGE = 5  # a run of an estate touches every type: 5 runs of 2,000 types are 10,000 rows a page


def dag_activity(
    catalog: Catalog, registry: Registry, dag_id: str, limit: int = 20, offset: int = 0
) -> list[RunActivity]:
    """The latest runs of ``dag_id`` that acted on contracts, newest first: ``limit`` of them after skipping
    the ``offset`` newest (a page of the task page).

    With the SQL store only those runs are read (``RunReads.run_times`` first), never the whole history.
    """
    reads = _run_reads(registry)
    runs: dict[str, list[_Touch]] = {}
    if reads is not None:
        times = reads.run_times(f"dag:{dag_id}", _claimed_kinds(dag_id))
        newest = sorted(times, key=lambda run: times[run], reverse=True)
        position = offset
        while len(runs) < limit and position < len(newest):  # a run may touch no known type: read on
            batch = newest[position : position + limit - len(runs)]
            position += len(batch)
            for touch in _touches(catalog, registry, dag_id, None, run_ids=batch):
                runs.setdefault(touch.run_id, []).append(touch)
        offset = 0  # the batches started at the page already
    else:
        for touch in _touches(catalog, registry, dag_id, None):
            runs.setdefault(touch.run_id, []).append(touch)
    latest = sorted(runs.items(), key=lambda item: max(t.at for t in item[1]), reverse=True)[offset : offset + limit]
    return [_activity(dag_id, run_id, touches) for run_id, touches in latest]


def status_values() -> Sequence[str]:
    return [str(s) for s in Status]

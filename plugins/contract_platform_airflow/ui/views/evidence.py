"""What every page shows of stored evidence: the item a table row holds, the DAG that records each kind, time series, the envelope quality and replay views, and a retired version's alarm and parity."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from contract_platform.catalog.model import Catalog, Contract, Status
from contract_platform.evidence import EvidenceKind, Registry
from contract_platform.evidence.figures import EnvelopeQualityFigures, RetiredTrafficFigures
from contract_platform.evidence.records import EvidenceRecord
from contract_platform.impact.moves import ConsumerMove
from contract_platform.retirement.readers_seen import observed_moves

__all__ = [
    "EVIDENCE_DAGS",
    "EvidenceItem",
    "ExpectationView",
    "MANY",
    "MigrationView",
    "Point",
    "ProducerTrafficView",
    "QualityView",
    "ReplayView",
    "RetiredTrafficView",
    "Series",
    "ViewModel",
    "count_of",
    "dag_of",
    "evidence_item",
    "invalid_rate",
    "invalid_rate_series",
    "latest_item",
    "moment_of",
    "parity_until_retired",
    "quality_view",
    "retired_at",
    "retired_traffic_view",
    "status_values",
    "text_of",
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
    EvidenceKind.ARCHIVE_RETENTION: "archive_retention",
}


MANY = 10_000


class ViewModel(BaseModel):
    """A view the pages show and ``/contracts/api`` returns as it is: each field declared once, camelCase on the
    wire (``ui/models.py`` adds only what the API says beyond the page)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True, from_attributes=True, frozen=True
    )


class EvidenceItem(ViewModel):
    """One piece of evidence as the page shows it; ``summary`` is ``status``'s one-line figures."""

    kind: str
    verdict: str = Field(description="pass | fail | unknown")
    collected_at: str | None
    summary: str
    figures: Mapping[str, Any]
    reference: str | None = None
    run_id: str | None = None
    contract_version: str | None = None


class Point(ViewModel):
    at: datetime
    value: float


class Series(ViewModel):
    name: str
    points: tuple[Point, ...]


@dataclass(frozen=True)
class MigrationView:
    """The migration between this version and its neighbour; parity is recorded under the older one."""

    from_type: str
    to_type: str
    parity: EvidenceItem | None
    # per consumer of the older version: what it must change, whether it has moved (impact.moves)
    moves: tuple[ConsumerMove, ...] = ()


class ReplayView(ViewModel):
    """The latest replay of one version (``status.replay_by_version``): its decision and what it rests on."""

    version: str
    decision: str = Field(description="confirmed | refused | accepted-on-evidence | unknown | not-applicable")
    verdict: str = Field(description="pass | fail | unknown")
    collected_at: str | None
    run_id: str | None
    static_verdict: str | None = Field(description="compatible | breaking: the compatibility engine's verdict")
    replayed: int | float | None
    rejected: int | float | None
    rejection_rate: int | float | None
    already_invalid: int | float | None = Field(description="Rejected by the current version too: not held against it.")
    min_messages: int | float | None
    window_days: int | float | None
    top_pointers: tuple[Mapping[str, Any], ...] = Field(description="[{pointer, keyword, count}], most frequent first")
    sample_message_ids: tuple[str, ...]
    in_flight_checked: bool
    in_flight_inspected: int | float | None
    in_flight_rejected: int | float | None
    in_flight_queues: tuple[Mapping[str, Any], ...] = Field(
        description="[{queue, vhost, inspected, rejected, skipped}]"
    )
    in_flight_note: str | None = Field(description="Why in-flight messages were not (all) checked.")
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


class ProducerTrafficView(ViewModel):
    """What one producer sent to a retired version (the figures' ``ProducerTraffic``)."""

    producer: str = Field(description='metadata.producer, else the AMQP app_id, else the producer header; "" for none')
    messages: int
    first_received_at: str | None
    last_received_at: str | None


class RetiredTrafficView(ViewModel):
    """Messages received on a retired version after its retirement, as the latest archive validation that saw
    any recorded them (``retired_traffic`` evidence): who still publishes it, how many, and when."""

    messages: int
    first_received_at: datetime | None
    last_received_at: datetime | None
    retired_at: datetime | None
    producers: tuple[ProducerTrafficView, ...] = Field(description="Who sent them, most messages first.")
    collected_at: str | None = Field(description="When the archive validation that found them recorded it.")
    run_id: str | None


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
    figures = EnvelopeQualityFigures.from_json(item.figures)
    failed = {str(name) for name in figures.failed_expectations}
    unexpected, mostly, samples = figures.unexpected, figures.mostly, figures.samples
    ids = list(dict.fromkeys([*mostly, *unexpected, *sorted(failed)]))
    expectations = tuple(
        ExpectationView(
            id=str(name),
            met=str(name) not in failed,
            unexpected=count_of(unexpected.get(name)),
            mostly=float(m) if isinstance((m := mostly.get(name)), int | float) else None,
            samples=tuple(str(s) for s in samples.get(name) or ()),
        )
        for name in ids
    )
    return QualityView(
        verdict=item.verdict,
        collected_at=item.collected_at,
        contract_version=item.contract_version,
        rows=figures.rows if "rows" in item.figures else None,
        expectations=tuple(sorted(expectations, key=lambda e: (e.met, e.id))),  # missed first
        skipped=tuple(sorted((str(k), str(v)) for k, v in figures.skipped.items())),
        reference=item.reference,
    )


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


def moment_of(value: Any) -> datetime | None:
    """An ISO-8601 instant of the figures (``2026-11-25T12:00:00Z``) as an aware datetime; None if it is none."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def text_of(value: Any) -> str | None:
    return None if value is None else str(value)


def count_of(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def invalid_rate_series(registry: Registry, message_type: str) -> Series:
    """The invalid rate of every archive validation of ``message_type``, oldest first."""
    records = registry.evidence(message_type, EvidenceKind.ARCHIVE_VALIDATION, limit=MANY)
    points = []
    for record in reversed(records):
        rate = invalid_rate(record.figures)
        if rate is not None:
            points.append(Point(at=record.collected_at, value=rate))
    return Series(name=message_type, points=tuple(points))


def retired_at(registry: Registry, message_type: str) -> datetime | None:
    """When the version was retired (its step to retired in the history); None while it is not retired."""
    state = registry.effective(message_type)
    if state is None or state.status is not Status.RETIRED:
        return None
    steps = [t.at for t in registry.transitions(message_type) if t.to_status is Status.RETIRED]
    return steps[-1] if steps else state.updated_at


def parity_until_retired(registry: Registry, message_type: str, retired: datetime | None) -> EvidenceRecord | None:
    """The migration parity a version shows: the latest, or for a retired version the latest recorded by its
    retirement. A parity run after it judged a finished migration (the traffic it found is ``retired_traffic``)."""
    latest = registry.latest_evidence(message_type, EvidenceKind.MIGRATION_PARITY)
    if retired is None or latest is None or latest.collected_at <= retired:
        return latest
    records = registry.evidence(message_type, EvidenceKind.MIGRATION_PARITY, limit=MANY)  # newest first
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
        first_received_at=moment_of(figures.first_received_at),
        last_received_at=moment_of(figures.last_received_at),
        retired_at=moment_of(figures.retired_at) or retired,
        producers=tuple(ProducerTrafficView.model_validate(p) for p in figures.by_producer),
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


def status_values() -> Sequence[str]:
    return [str(s) for s in Status]

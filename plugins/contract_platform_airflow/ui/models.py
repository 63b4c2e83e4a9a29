"""The JSON the ``/contracts/api`` endpoints return: pydantic models, camelCase on the wire."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

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


class _Out(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True)


class ErrorOut(_Out):
    detail: str = Field(description="What went wrong and what to do about it.")


class EvidenceOut(_Out):
    kind: str
    verdict: str = Field(description="pass | fail | unknown")
    collected_at: str | None
    summary: str
    figures: dict[str, Any]
    reference: str | None = None
    run_id: str | None = None
    contract_version: str | None = None

    @classmethod
    def of(cls, item: views.EvidenceItem | None) -> EvidenceOut | None:
        if item is None:
            return None
        return cls(
            kind=item.kind,
            verdict=item.verdict,
            collected_at=item.collected_at,
            summary=item.summary,
            figures=dict(item.figures),
            reference=item.reference,
            run_id=item.run_id,
            contract_version=item.contract_version,
        )


class RetirementOut(_Out):
    applicable: bool = Field(description="Only superseded and deprecated versions are judged.")
    ready: bool
    verdict: str | None = Field(description="Verdict of the latest retirement audit, if any.")
    blockers: list[str]


class LinksOut(_Out):
    page: str
    api: str


class ContractSummaryOut(_Out):
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
    validation: EvidenceOut | None
    quality: EvidenceOut | None
    parity: EvidenceOut | None
    retirement: RetirementOut
    findings: list[str] = Field(
        default_factory=list, description="Open findings or blockers (the catalogue's findings filter); empty: none."
    )
    links: LinksOut

    @classmethod
    def of(cls, row: views.CatalogueRow, base: str) -> ContractSummaryOut:
        return cls(
            message_type=row.message_type,
            domain=row.domain,
            kind=row.kind,
            version=row.version,
            owner_team=row.owner_team,
            owner_service=row.owner_service,
            declared=row.declared,
            effective=row.effective,
            in_sync=row.in_sync,
            compatibility=row.compatibility,
            last_transition_at=row.last_transition_at,
            last_refusal=row.last_refusal,
            invalid_rate=row.invalid_rate,
            invalid_rate_target=row.invalid_rate_target,
            validation=EvidenceOut.of(row.validation),
            quality=EvidenceOut.of(row.quality),
            parity=EvidenceOut.of(row.parity),
            retirement=RetirementOut(
                applicable=row.retirement.applicable,
                ready=row.retirement.ready,
                verdict=row.retirement.verdict,
                blockers=list(row.retirement.blockers),
            ),
            findings=views.findings(row),
            links=LinksOut(page=f"{base}/c/{row.message_type}", api=f"{base}/api/contracts/{row.message_type}"),
        )


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


class FixtureOut(_Out):
    name: str
    valid: bool
    document: Any


class PointOut(_Out):
    at: datetime
    value: float


class SeriesOut(_Out):
    name: str
    points: list[PointOut]

    @classmethod
    def of(cls, series: views.Series) -> SeriesOut:
        return cls(name=series.name, points=[PointOut(at=p.at, value=p.value) for p in series.points])


class MigrationOut(_Out):
    from_type: str
    to_type: str
    parity: EvidenceOut | None


class ProducerTrafficOut(_Out):
    producer: str = Field(description='metadata.producer, else the AMQP app_id, else the producer header; "" for none')
    messages: int
    first_received_at: str | None
    last_received_at: str | None


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
    services: list[GuardTallyOut]

    @classmethod
    def of(cls, window: RuntimeWindow | None) -> RuntimeOut | None:
        if window is None:
            return None
        return cls(
            days=window.days,
            target=window.target,
            checked=window.checked,
            rejected=window.rejected,
            rate=window.rate,
            over_target=window.over_target,
            dropped=window.dropped,
            services=[
                GuardTallyOut(
                    service=t.service,
                    side=t.side,
                    checked=t.checked,
                    rejected=t.rejected,
                    rate=t.rate,
                    by_reason=dict(t.by_reason),
                    tolerated=t.tolerated,
                    migrated=t.migrated,
                    business_rejected=t.business_rejected,
                    until=t.until,
                )
                for t in window.tallies
            ],
        )


class RetiredTrafficOut(_Out):
    """Messages received on a retired version after its retirement: an alarm, not a migration's parity."""

    messages: int
    first_received_at: datetime | None
    last_received_at: datetime | None
    retired_at: datetime | None
    producers: list[ProducerTrafficOut] = Field(description="Who sent them, most messages first.")
    collected_at: str | None = Field(description="When the archive validation that found them recorded it.")
    run_id: str | None

    @classmethod
    def of(cls, traffic: views.RetiredTrafficView | None) -> RetiredTrafficOut | None:
        if traffic is None:
            return None
        return cls(
            messages=traffic.messages,
            first_received_at=traffic.first_received_at,
            last_received_at=traffic.last_received_at,
            retired_at=traffic.retired_at,
            producers=[
                ProducerTrafficOut(
                    producer=p.producer,
                    messages=p.messages,
                    first_received_at=p.first_received_at,
                    last_received_at=p.last_received_at,
                )
                for p in traffic.producers
            ],
            collected_at=traffic.collected_at,
            run_id=traffic.run_id,
        )


class ReplayOut(_Out):
    """The latest replay of one version: its decision, the figures behind it, and the run that recorded it."""

    version: str
    decision: str = Field(description="confirmed | refused | accepted-on-evidence | unknown | not-applicable")
    verdict: str = Field(description="pass | fail | unknown")
    collected_at: str | None
    run_id: str | None
    run_url: str | None = Field(description="The contract_change run in the Airflow UI.")
    static_verdict: str | None = Field(description="compatible | breaking: the compatibility engine's verdict")
    replayed: int | float | None
    rejected: int | float | None
    rejection_rate: int | float | None
    already_invalid: int | float | None = Field(description="Rejected by the current version too: not held against it.")
    min_messages: int | float | None
    window_days: int | float | None
    top_pointers: list[dict[str, Any]] = Field(description="[{pointer, keyword, count}], most frequent first")
    sample_message_ids: list[str]
    in_flight_checked: bool
    in_flight_inspected: int | float | None
    in_flight_rejected: int | float | None
    in_flight_queues: list[dict[str, Any]] = Field(description="[{queue, vhost, inspected, rejected, skipped}]")
    in_flight_note: str | None = Field(description="Why in-flight messages were not (all) checked.")
    reasons: list[str]

    @classmethod
    def of(cls, replay: views.ReplayView, run_url: str | None) -> ReplayOut:
        return cls(
            version=replay.version,
            decision=replay.decision,
            verdict=replay.verdict,
            collected_at=replay.collected_at,
            run_id=replay.run_id,
            run_url=run_url,
            static_verdict=replay.static_verdict,
            replayed=replay.replayed,
            rejected=replay.rejected,
            rejection_rate=replay.rejection_rate,
            already_invalid=replay.already_invalid,
            min_messages=replay.min_messages,
            window_days=replay.window_days,
            top_pointers=[dict(p) for p in replay.top_pointers],
            sample_message_ids=list(replay.sample_message_ids),
            in_flight_checked=replay.in_flight_checked,
            in_flight_inspected=replay.in_flight_inspected,
            in_flight_rejected=replay.in_flight_rejected,
            in_flight_queues=[dict(q) for q in replay.in_flight_queues],
            in_flight_note=replay.in_flight_note,
            reasons=list(replay.reasons),
        )


class SpanOut(_Out):
    start: datetime
    end: datetime
    note: str | None = Field(description="A gap's reason, or why a recorder segment ended.")


class ReaderSessionOut(_Out):
    queue: str
    vhost: str | None
    consumer_tag: str | None
    connection: str | None
    peer_host: str | None
    user: str | None
    attached_at: datetime | None = Field(description="None: already attached when the recorder first saw it.")
    detached_at: datetime | None = Field(description="None: still attached.")


class ObstacleOut(_Out):
    kind: str = Field(description="reader | counters | gap | uncovered | deleted")
    verdict: str = Field(description="fail | unknown")
    start: datetime | None = Field(description="None: since before anything was known.")
    end: datetime | None
    text: str
    queue: str | None


class ReadersOut(_Out):
    """The ``readers`` check of the latest retirement audit: what the page draws as its reader timeline."""

    collected_at: str | None
    verdict: str = Field(description="pass | fail | unknown")
    blocker: str | None
    clears_at: datetime | None
    window_start: datetime | None = Field(description="None when the check judged no window.")
    window_end: datetime | None
    queues: list[str]
    sessions: list[ReaderSessionOut]
    segments: list[SpanOut] = Field(description="When the broker activity recorder was recording.")
    gaps: list[SpanOut] = Field(description="When nothing is known of readers.")
    obstacles: list[ObstacleOut] = Field(description="What kept the window from being clean, latest first.")
    clean_since: datetime | None
    audits: int | None = Field(description="Audits in the clean stretch.")
    required_observations: int | None
    required_span: str | None
    passes_at: datetime | None = Field(description="The earliest the check can pass, when it did not.")
    passed_at: datetime | None
    note: str | None

    @classmethod
    def of(cls, readers: views.ReadersView | None) -> ReadersOut | None:
        if readers is None:
            return None
        return cls(
            collected_at=readers.collected_at,
            verdict=readers.verdict,
            blocker=readers.blocker,
            clears_at=readers.clears_at,
            window_start=readers.window_start,
            window_end=readers.window_end,
            queues=list(readers.queues),
            sessions=[
                ReaderSessionOut(
                    queue=s.queue,
                    vhost=s.vhost,
                    consumer_tag=s.consumer_tag,
                    connection=s.connection,
                    peer_host=s.peer_host,
                    user=s.user,
                    attached_at=s.attached_at,
                    detached_at=s.detached_at,
                )
                for s in readers.sessions
            ],
            segments=[SpanOut(start=g.start, end=g.end, note=g.note) for g in readers.segments],
            gaps=[SpanOut(start=g.start, end=g.end, note=g.note) for g in readers.gaps],
            obstacles=[
                ObstacleOut(kind=o.kind, verdict=o.verdict, start=o.start, end=o.end, text=o.text, queue=o.queue)
                for o in readers.obstacles
            ],
            clean_since=readers.clean_since,
            audits=readers.audits,
            required_observations=readers.required_observations,
            required_span=readers.required_span,
            passes_at=readers.passes_at,
            passed_at=readers.passed_at,
            note=readers.note,
        )


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
    fixtures: list[FixtureOut]
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


class RunContractOut(_Out):
    message_type: str
    page: str
    transitions: list[str]
    refusals: list[str]
    evidence: list[str]


class RunOut(_Out):
    dag_id: str
    run_id: str
    run_url: str = Field(description="The DAG run in the Airflow UI.")
    contracts: list[RunContractOut]

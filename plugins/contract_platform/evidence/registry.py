"""``Registry``: what the domain asks of the registry store, as a protocol (no SQLAlchemy here).

Domain code takes a ``Registry`` and never imports ``contract_platform.store``; only the edges (the
CLI, DAG tasks, Spark job drivers, the UI) open the SQL store (``store.SqlRegistry.open``), which
satisfies this protocol (mypy checks it in ``store/registry.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from contract_platform.catalog.model import Status
from contract_platform.evidence import EvidenceKind, Verdict
from contract_platform.evidence.records import (
    BrokerChange,
    BrokerEvent,
    CoverageGap,
    CoverageSegment,
    Delivery,
    DeliveryWatch,
    EvidenceRecord,
    Observation,
    ObservationSource,
    QueueCounters,
    ReaderSession,
    RefusalRecord,
    TransitionRecord,
    VersionState,
)

__all__ = ["ActivityLog", "Registry", "earlier_schemas"]


class Registry(Protocol):
    """Effective status, history, refusals, evidence, schema snapshots, observations, fingerprints.

    Evidence is written through ``contract_platform.evidence.record``, which calls ``add_evidence``.
    """

    url: str  # redacted: safe to show

    # -- effective status and history

    def effective(self, message_type: str) -> VersionState | None: ...

    def all_effective(self) -> list[VersionState]: ...

    def register(
        self, message_type: str, contract_version: str, *, actor: str, run_id: str | None = None
    ) -> VersionState: ...

    def apply_transition(
        self,
        message_type: str,
        *,
        expected: VersionState,
        to: Status,
        actor: str,
        reason: str,
        run_id: str | None = None,
        evidence_id: int | None = None,
    ) -> VersionState: ...

    def transitions(self, message_type: str) -> list[TransitionRecord]: ...

    def transition(self, message_type: str, revision: int) -> TransitionRecord | None: ...

    def record_refusal(
        self,
        message_type: str,
        *,
        from_status: Status | None,
        to_status: Status,
        reasons: list[str],
        actor: str,
        run_id: str | None = None,
    ) -> RefusalRecord: ...

    def refusals(self, message_type: str, limit: int = 20) -> list[RefusalRecord]: ...

    # -- evidence

    def add_evidence(
        self,
        message_type: str,
        *,
        contract_version: str,
        kind: EvidenceKind | str,
        verdict: Verdict | str,
        figures: Mapping[str, Any],
        reference: str | None = None,
        run_id: str | None = None,
        collected_at: datetime | None = None,
    ) -> EvidenceRecord: ...

    def latest_evidence(
        self, message_type: str, kind: EvidenceKind | str, *, contract_version: str | None = None
    ) -> EvidenceRecord | None: ...

    def evidence(
        self,
        message_type: str,
        kind: EvidenceKind | str | None = None,
        since: datetime | None = None,
        limit: int = 100,
        *,
        contract_version: str | None = None,
    ) -> list[EvidenceRecord]: ...

    # -- schema snapshots, observations, fingerprints

    def snapshot_schema(self, message_type: str, contract_version: str, schema: Mapping[str, Any]) -> bool: ...

    def schema_history(self, message_type: str) -> list[tuple[str, dict[str, Any]]]: ...

    def record_observation(
        self,
        message_type: str,
        queue: str,
        *,
        consumers: int | None,
        ready: int | None,
        unacked: int | None,
        source: ObservationSource | str,
        run_id: str | None = None,
        observed_at: datetime | None = None,
    ) -> Observation: ...

    def observations(self, message_type: str, since: datetime | None = None) -> list[Observation]: ...

    def fingerprint(self, message_type: str) -> str | None: ...

    def set_fingerprint(self, message_type: str, fingerprint: str) -> None: ...

    # -- broker activity (what the recorder stored; the retirement audit's ``readers`` check reads it)

    def coverage(self, since: datetime) -> tuple[list[CoverageSegment], list[CoverageGap]]: ...

    def broker_events_since(self, since: datetime) -> tuple[int, datetime | None]: ...

    def reader_sessions(
        self, queues: Iterable[tuple[str, str]], *, since: datetime, until: datetime
    ) -> list[ReaderSession]: ...

    def broker_changes(self, queues: Iterable[tuple[str, str]], *, since: datetime) -> list[BrokerChange]: ...

    def record_queue_counters(self, counters: Sequence[QueueCounters]) -> None: ...

    def queue_counters(self, message_type: str, *, since: datetime) -> list[QueueCounters]: ...

    def request_delivery_watches(
        self, queues: Iterable[tuple[str, str]], *, at: datetime, traced_from: datetime
    ) -> None: ...

    def delivery_watches(self, queues: Iterable[tuple[str, str]] | None = None) -> list[DeliveryWatch]: ...

    def restart_delivery_watches(self, vhost: str, *, traced_from: datetime, reason: str) -> None: ...

    def confirm_delivery_watches(self, vhost: str, *, until: datetime | None, problem: str | None = None) -> None: ...


class ActivityLog(Protocol):
    """What the broker activity recorder writes (``store.SqlRegistry`` is one)."""

    url: str

    def store_broker_events(self, events: Sequence[BrokerEvent]) -> int: ...

    def open_coverage_segment(
        self,
        segment_id: str,
        *,
        started_at: datetime,
        host: str | None,
        covered_from: datetime | None = None,
        gap_reason: str | None = None,
    ) -> CoverageGap | None: ...

    def last_confirmation(self) -> CoverageSegment | None: ...

    def extend_coverage(self, segment_id: str, *, covered_from: datetime, until: datetime) -> CoverageGap | None: ...

    def end_coverage_segment(self, segment_id: str, *, at: datetime, reason: str) -> None: ...

    def record_gap(self, start: datetime, end: datetime, reason: str, *, close_sessions: bool = False) -> None: ...

    def prune_broker_activity(self, before: datetime) -> int: ...

    def store_deliveries(self, deliveries: Sequence[Delivery]) -> int: ...

    def delivery_watches(self, queues: Iterable[tuple[str, str]] | None = None) -> list[DeliveryWatch]: ...

    def restart_delivery_watches(self, vhost: str, *, traced_from: datetime, reason: str) -> None: ...

    def confirm_delivery_watches(self, vhost: str, *, until: datetime | None, problem: str | None = None) -> None: ...


def earlier_schemas(registry: Registry | None, contract: Any) -> list[tuple[str, dict[str, Any]]]:
    """The payload schemas the registry has recorded of ``contract``'s major, oldest first, without the contract's
    own version: what a change is compared with and a replay judges against (``[]`` without a registry)."""
    if registry is None:
        return []
    return [(v, s) for v, s in registry.schema_history(contract.message_type) if v != contract.version]

"""``Registry``: what the domain asks of the registry store, as a protocol (no SQLAlchemy here).

Domain code takes a ``Registry`` and never imports ``contract_platform.store``; only the edges (the
CLI, DAG tasks, Spark job drivers, the UI) open the SQL store (``store.Registry.open``), which
satisfies this protocol (mypy checks it in ``store/registry.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from contract_platform.catalog.model import Status
from contract_platform.evidence import EvidenceKind, Verdict
from contract_platform.evidence.records import (
    EvidenceRecord,
    Observation,
    ObservationSource,
    RefusalRecord,
    TransitionRecord,
    VersionState,
)

__all__ = ["Registry"]


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

    def history(self, message_type: str) -> list[TransitionRecord]: ...

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

"""The registry's rows as the domain sees them: typed, frozen records (never loose dicts), no SQL.

The store (``contract_platform.store``) returns these; everything else reads them without importing
SQLAlchemy. Every datetime here is timezone-aware UTC, whatever the database gave back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from contract_platform.catalog.model import Status
from contract_platform.evidence import EvidenceKind, Verdict

__all__ = [
    "EvidenceKind",
    "EvidenceRecord",
    "Observation",
    "ObservationSource",
    "RefusalRecord",
    "TransitionRecord",
    "Verdict",
    "VersionState",
]


class ObservationSource(StrEnum):
    AMQP = "amqp"  # passive queue declare: consumers and ready only
    MANAGEMENT = "management"  # management API: consumers, ready and unacked


@dataclass(frozen=True)
class VersionState:
    """The effective status of one message type; ``revision`` is what optimistic concurrency compares."""

    message_type: str
    status: Status
    contract_version: str
    revision: int
    updated_at: datetime


@dataclass(frozen=True)
class TransitionRecord:
    """One applied lifecycle step; ``from_status`` is None for the registration. Never updated or deleted."""

    id: int
    message_type: str
    revision: int  # the revision this transition produced
    from_status: Status | None
    to_status: Status
    at: datetime
    actor: str  # a user name, or "dag:<dag_id>"
    run_id: str | None
    reason: str
    evidence_id: int | None


@dataclass(frozen=True)
class RefusalRecord:
    """One step a guard refused, with every reason, as the UI shows it."""

    id: int
    message_type: str
    from_status: Status | None
    to_status: Status
    at: datetime
    actor: str
    run_id: str | None
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class EvidenceRecord:
    """One piece of evidence; ``figures`` is the stored JSON (snake_case keys), typed by ``figures_of``."""

    id: int
    message_type: str
    contract_version: str
    kind: EvidenceKind
    collected_at: datetime
    verdict: Verdict
    figures: Mapping[str, Any]
    reference: str | None  # path or URL of the full report
    run_id: str | None

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASS


@dataclass(frozen=True)
class Observation:
    """One look at one queue; ``unacked`` is None when the source cannot see it."""

    id: int
    message_type: str
    queue: str
    observed_at: datetime
    consumers: int | None
    ready: int | None
    unacked: int | None
    source: ObservationSource
    run_id: str | None

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
    "BrokerChange",
    "BrokerEvent",
    "CoverageGap",
    "CoverageSegment",
    "Delivery",
    "DeliveryWatch",
    "EvidenceKind",
    "EvidenceRecord",
    "Observation",
    "ObservationSource",
    "QueueCounters",
    "ReaderSession",
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
class EvidenceMark:
    """What a run recorded of one type, without the figures: enough to list a run's evidence."""

    message_type: str
    kind: EvidenceKind
    verdict: Verdict
    collected_at: datetime
    run_id: str | None


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


# -- broker activity (the recorder, docs/retirement-audit.md#continuous-reader-evidence) ----------------------------


@dataclass(frozen=True)
class BrokerEvent:
    """One event of RabbitMQ's event exchange, checked and reduced to what the store keeps.

    ``kind`` is the routing key (``consumer.created``, ``channel.created`` ...); ``key`` a digest of the
    whole event, so storing it twice (a redelivery after the recorder died before its ack) changes nothing;
    ``fields`` the event's identity fields as bounded text (``queue``, ``consumer_tag``, ``channel``, ``pid``,
    ``connection``, ``name``, ``client_name``, ``peer_host``, ``user`` ...), each None when absent.
    """

    key: str
    kind: str
    at: datetime
    vhost: str
    fields: Mapping[str, str | None]

    def get(self, name: str) -> str | None:
        return self.fields.get(name)


@dataclass(frozen=True)
class ReaderSession:
    """One consumer on one queue, from ``consumer.created`` to ``consumer.deleted`` as the broker announced them.

    ``attached_at`` is None when the consumer was already there when the recorder first saw it (a consumer
    listed at the start of a coverage segment, or one whose ``consumer.deleted`` came without its creation);
    ``detached_at`` is None while it is attached, or when its detachment fell into a gap (``open_ended``).
    """

    vhost: str
    queue: str
    consumer_tag: str
    channel: str
    attached_at: datetime | None
    detached_at: datetime | None
    connection_name: str | None = None  # the client-provided name, else the broker's "peer -> broker" name
    peer_host: str | None = None
    user: str | None = None
    source: str = "event"  # "event" (consumer.created), "orphan" (only its end seen) or "delivery" (traced)
    deliveries: int | None = None  # "delivery": how many messages the broker handed it between the two moments

    def describe(self) -> str:
        who = self.connection_name or "an unnamed connection"
        where = f" from {self.peer_host}" if self.peer_host else ""
        user = f" as {self.user}" if self.user else ""
        return f"{who}{where}{user}"


@dataclass(frozen=True)
class Delivery:
    """Messages the broker handed one channel of one connection from one queue (``basic.get`` or a consumer), as
    its delivery trace showed them: ``count`` of them between ``after`` and ``before`` (the trace is timed by the
    recorder's own marks around it: the broker stamps no time on it). ``connection`` is the broker's name of the
    connection (``peer -> broker``), which a client cannot choose."""

    vhost: str
    queue: str
    connection: str | None
    channel: str
    user: str | None
    after: datetime
    before: datetime
    count: int


@dataclass(frozen=True)
class DeliveryWatch:
    """A queue whose every delivery the recorder traces: asked for by the recording audits of a version under
    retirement (``requested_at``, the latest), traced since ``traced_from``, every traced delivery stored up to
    ``confirmed_until``; ``problem`` says why the trace cannot be confirmed now."""

    vhost: str
    queue: str
    requested_at: datetime
    traced_from: datetime | None
    confirmed_until: datetime | None
    problem: str | None = None


@dataclass(frozen=True)
class CoverageSegment:
    """A stretch in which the recorder stored every broker event: ``covered_from`` to ``covered_until``.

    A segment is one recorder connection: it starts covering at its first confirmed drain and extends at
    every heartbeat. ``ended_at``/``end_reason`` say how it stopped (None: still running, or killed).
    """

    id: str
    started_at: datetime
    covered_from: datetime | None
    covered_until: datetime | None
    ended_at: datetime | None = None
    end_reason: str | None = None
    host: str | None = None


@dataclass(frozen=True)
class CoverageGap:
    """An interval in which nothing is known of the broker's readers (the recorder was down, the broker restarted)."""

    start: datetime
    end: datetime
    reason: str


@dataclass(frozen=True)
class BrokerChange:
    """A queue or binding created or deleted (``queue.created``, ``binding.deleted`` ...), as the broker announced it."""

    kind: str  # queue.created, queue.deleted, binding.created, binding.deleted
    vhost: str
    name: str  # the queue; for a binding, the destination queue or exchange
    at: datetime
    detail: str = ""  # for a binding: "source -> destination (key)"


@dataclass(frozen=True)
class QueueCounters:
    """A queue's cumulative delivery counters as one audit read them (management API ``message_stats``).

    ``idle_since`` moves whenever anyone touches the queue, even a ``basic.get`` that finds it empty, which
    no counter records; ``own_until`` is when the audit's own touches ended. ``own_*`` are what the audit's own peek added afterwards (``basic.get`` of each message, the empty get
    that ends a read, the redelivered flag of messages it had given back before): not a reader.
    ``present`` is False when the queue did not exist at that audit.
    """

    message_type: str
    vhost: str
    queue: str
    observed_at: datetime
    present: bool
    deliver_get: int | None
    get_empty: int | None
    ack: int | None
    redeliver: int | None
    own_deliver_get: int = 0
    own_get_empty: int = 0
    own_redeliver: int = 0
    run_id: str | None = None
    publish: int | None = None
    idle_since: datetime | None = None  # the queue's last activity as the broker reported it (classic queues)
    own_until: datetime | None = None  # when this audit's own look at the queue (declares, peek) was over

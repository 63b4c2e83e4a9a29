"""Dead letters past ``retention.dlq`` removed from a version's DLQs and parking lots, with evidence.

The platform never expires a failed message on its own (no TTL, docs/design.md#retention); failed messages
that hold PII leave by this path, which ``contractctl retention purge-dead-letters TYPE`` runs: every DLQ
and parking lot of ``plan_topology(contract)`` loses the messages older than the contract's ``retention.dlq``
and keeps the rest, in their order.

How one queue is purged, on a channel of its own (the platform's peek, ``amqp.peek``, with acks added):

1. its ready depth D is read (passive declare). A queue that requeueing could harm is not read, and says
   why (``amqp.peek.requeue_risk``: a quorum queue under a delivery limit before RabbitMQ 4.3, a stream);
   so is a quorum queue whose policies cannot be seen (no management API), and an exclusive queue;
2. ``basic.get`` without ack, at most ``min(D, limit)`` times: what arrives meanwhile is not touched;
3. each message's **age**: its ``timestamp`` property, else the earliest ``time`` of its ``x-death``
   entries (when it first died); neither: its age is unknown and it is **kept** (counted as such);
4. evidence is recorded (``dead_letter_purge``: counts and the removed messages' ``message_id``, never a
   body) while every message is still unacknowledged: if recording fails, the channel closes and the
   broker puts everything back, so nothing leaves without a record;
5. the old ones are acknowledged one by one, then the kept ones go back with ONE
   ``basic.nack(multiple, requeue)`` of the last kept tag: a classic queue puts them back at their
   positions, a quorum queue redelivers them first, in the order returned: the order they had. ``nack``
   rather than ``reject`` (RabbitMQ 4.3 counts ``reject`` against the delivery limit).

A dry run does 1 to 3 and gives every message back (one nack): counts only, nothing removed, nothing
recorded. A connection lost midway leaves every unacknowledged message to the broker, which requeues it.
Should it drop between 4 and 5, the record names messages still there; the next run removes them and
records them again, so a removal never goes unrecorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pika.exceptions as px

from contract_platform.amqp.connection import broker_errors, broker_version, describe_broker
from contract_platform.amqp.http import NOT_FOUND, ManagementClient
from contract_platform.amqp.inspection import RESOURCE_LOCKED, QueueLocked, passive_queue
from contract_platform.amqp.management import probe_management
from contract_platform.amqp.peek import await_return, requeue_risk, requeues_count
from contract_platform.amqp.plan import Role, plan_topology
from contract_platform.amqp.types import BrokerConnection
from contract_platform.catalog.model import Contract
from contract_platform.durations import format_duration
from contract_platform.evidence import Registry, Verdict, record
from contract_platform.evidence.figures import DeadLetterPurgeFigures

__all__ = ["DEFAULT_MAX_MESSAGES", "DeadLetterPurge", "QueuePurge", "age_of", "purge_dead_letters"]

DEFAULT_MAX_MESSAGES = 100_000  # per queue and run: a deeper queue is purged this far, the rest next run
_UNSEEN_POLICY = (
    "a quorum queue whose policies cannot be seen without the management API (a delivery limit there would "
    "count every requeue)"
)


def age_of(properties: Any, now: datetime) -> timedelta | None:
    """How long ago the message was published (``timestamp``), else first died (``x-death``); None: unknown."""
    stamp = getattr(properties, "timestamp", None)
    if isinstance(stamp, int) and not isinstance(stamp, bool) and stamp > 0:
        return now - datetime.fromtimestamp(stamp, now.tzinfo)
    headers = getattr(properties, "headers", None)
    deaths = headers.get("x-death") if isinstance(headers, dict) else None
    times = [d.get("time") for d in deaths if isinstance(d, dict)] if isinstance(deaths, list) else []
    died = [t for t in times if isinstance(t, datetime) and t.tzinfo is not None]
    return now - min(died) if died else None


@dataclass
class QueuePurge:
    """One DLQ or parking lot: what was removed (or would be), what was kept, or why it was not read."""

    queue: str
    role: str
    depth: int = 0  # ready messages when it was looked at
    removed: int = 0
    kept: int = 0  # younger than the window, or of unknown age: given back in order
    age_unknown: int = 0  # of the kept: neither a timestamp nor an x-death time
    unread: int = 0  # beyond this run's bound: left for the next run
    removed_ids: list[str] = field(default_factory=list)  # message_id of the removed; "" for one without
    skipped: str | None = None  # why it was not read
    absent: bool = False  # not on the broker
    delivery_count_raised: bool = False  # a quorum queue read: the kept messages' x-delivery-count went up by one
    evidence_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "role": self.role,
            "depth": self.depth,
            "removed": self.removed,
            "kept": self.kept,
            "ageUnknown": self.age_unknown,
            "unread": self.unread,
            "removedIds": list(self.removed_ids),
            "skipped": self.skipped,
            "absent": self.absent,
            "deliveryCountRaised": self.delivery_count_raised,
            "evidence": self.evidence_id,
        }


@dataclass(frozen=True)
class DeadLetterPurge:
    """One run over a version's DLQs and parking lots."""

    message_type: str
    vhost: str
    window: timedelta
    older_than: datetime
    queues: tuple[QueuePurge, ...]
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "messageType": self.message_type,
            "vhost": self.vhost,
            "window": format_duration(self.window),
            "olderThan": self.older_than.isoformat(),
            "dryRun": self.dry_run,
            "queues": [q.to_dict() for q in self.queues],
        }


def purge_dead_letters(
    connection: BrokerConnection,
    contract: Contract,
    *,
    now: datetime,
    vhost: str,
    registry: Registry | None,
    management: ManagementClient | None = None,
    dry_run: bool = False,
    max_messages: int = DEFAULT_MAX_MESSAGES,
    run_id: str | None = None,
) -> DeadLetterPurge:
    """Remove from ``contract``'s DLQs and parking lots (in ``connection``'s virtual host, ``vhost``) the messages
    older than its ``retention.dlq``, with one ``dead_letter_purge`` record per queue that held any; the rest stay
    in order. ``registry`` may be None on a dry run only; ``management`` tells queue policies (a delivery limit)."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    if max_messages < 1:
        raise ValueError(f"max_messages must be at least 1, not {max_messages}")
    if registry is None and not dry_run:
        raise ValueError("removing dead letters records evidence: pass the registry")
    window = contract.retention.dlq
    cutoff = now - window
    seen = management is not None and probe_management(management) is None
    version = broker_version(connection)
    results = []
    with broker_errors(describe_broker(connection)):
        for queue in plan_topology(contract).queues_of(Role.DLQ, Role.PARKING_LOT):
            info: Mapping[str, Any] = {"type": queue.queue_type, "arguments": dict(queue.arguments)}
            listed = management.queue(queue.name) if seen and management is not None else None
            if listed is not None:
                info = listed
            purge = QueuePurge(queue.name, str(queue.role))
            if listed is None and queue.queue_type == "quorum" and requeues_count(version):
                purge.skipped = _UNSEEN_POLICY
            else:
                purge.skipped = requeue_risk(
                    _text(info.get("type")), _mapping(info.get("arguments")),
                    _mapping(info.get("effective_policy_definition")), version,
                )  # fmt: skip
            recorder = _Recorder(registry, contract, vhost, window, cutoff, now, run_id)
            returned = _purge_queue(connection, purge, now, window, max_messages, dry_run, recorder)
            purge.delivery_count_raised = returned and _text(info.get("type")) == "quorum"
            results.append(purge)
    return DeadLetterPurge(contract.message_type, vhost, window, cutoff, tuple(results), dry_run)


@dataclass(frozen=True)
class _Recorder:
    registry: Registry | None
    contract: Contract
    vhost: str
    window: timedelta
    cutoff: datetime
    now: datetime
    run_id: str | None

    def __call__(self, purge: QueuePurge) -> int | None:
        if self.registry is None:
            return None
        figures = DeadLetterPurgeFigures(
            queue=purge.queue,
            vhost=self.vhost,
            window=format_duration(self.window),
            older_than=self.cutoff.isoformat(),
            removed=purge.removed,
            kept=purge.kept,
            age_unknown=purge.age_unknown,
            message_ids=tuple(purge.removed_ids),
        )
        return record(
            self.registry, self.contract.message_type, self.contract.version, figures,
            verdict=Verdict.PASS, run_id=self.run_id, collected_at=self.now,
        ).id  # fmt: skip


def _purge_queue(
    connection: BrokerConnection,
    purge: QueuePurge,
    now: datetime,
    window: timedelta,
    limit: int,
    dry_run: bool,
    recorder: _Recorder,
) -> bool:
    """Purge one queue as the module's docstring says; whether any message went back to it."""
    try:
        counts = passive_queue(connection, purge.queue)
    except QueueLocked:
        purge.skipped = "exclusive to another connection: only that connection may read it"
        return False
    if counts is None:
        purge.absent = True
        return False
    purge.depth = counts[0]
    if purge.depth == 0 or purge.skipped is not None:
        return False
    old: list[int] = []
    last_kept: int | None = None
    give_back: int | None = None  # the tag of the one nack(multiple, requeue): every message read, until acks
    channel = connection.channel()
    try:
        for _ in range(min(purge.depth, limit)):
            method, properties, body = channel.basic_get(purge.queue, auto_ack=False)
            if method is None or body is None or method.delivery_tag is None:  # empty: someone took the rest
                break
            give_back = tag = method.delivery_tag
            age = age_of(properties, now)
            if age is not None and age > window:
                old.append(tag)
                purge.removed_ids.append(str(getattr(properties, "message_id", None) or ""))
            else:
                last_kept = tag
                purge.kept += 1
                purge.age_unknown += age is None
        purge.removed = len(old)
        purge.unread = max(purge.depth - purge.removed - purge.kept, 0)
        if old and not dry_run:
            purge.evidence_id = recorder(purge)  # before any ack: a failure here gives everything back
            for tag in old:
                channel.basic_ack(delivery_tag=tag)
            give_back = last_kept
    except px.ChannelClosedByBroker as exc:
        if exc.reply_code == NOT_FOUND:
            purge.absent = True  # deleted while being read: its messages went with it
            return False
        if exc.reply_code == RESOURCE_LOCKED:
            purge.skipped = "exclusive to another connection: only that connection may read it"
            return False
        raise
    finally:
        if give_back is not None and channel.is_open:
            channel.basic_nack(delivery_tag=give_back, multiple=True, requeue=True)
        if channel.is_open:
            channel.close()  # anything still unacked (none after the nack) is requeued by the broker
    if give_back is None:
        return False
    await_return(connection, purge.queue, purge.depth - (0 if dry_run else purge.removed))
    return True


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _mapping(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, dict) else None

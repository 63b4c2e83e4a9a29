"""Read a queue without taking anything from it: the platform's one non-destructive peek.

On a dedicated channel, ``basic.get`` without auto-ack, at most as many times as the queue's depth when
we looked (and at most ``limit``), then every fetched message goes back with ONE
``basic.nack(multiple, requeue)`` of the last delivery tag. A classic queue puts requeued messages back
at their original positions; a quorum queue redelivers returned messages first, in the order returned.
Should the connection drop midway, the broker requeues the unacked messages itself. ``nack`` rather
than ``reject``: RabbitMQ 4.3 counts ``reject(requeue)`` against a quorum queue's delivery limit.

What requeueing cannot guarantee is flagged and the queue is not read (``requeue_risk``):

- on RabbitMQ before 4.3, a quorum queue with a delivery limit (``x-delivery-limit``, or
  ``delivery-limit`` in its policy), and every quorum queue on 4.0 to 4.2 (default limit 20): each
  requeue counts as a delivery, so a message near its limit would be dead-lettered or dropped;
- stream queues (``basic.get`` is not supported on streams);
- a queue exclusive to another connection: only its owner may use it (the broker refuses anyone else
  with 405 RESOURCE_LOCKED), so it is not read and the outcome names the owner; its depth is the
  management API's.

From RabbitMQ 4.3 the delivery limit counts failed deliveries only: ``basic.nack(requeue)`` is a return
that does not raise ``x-delivery-count`` (``basic.reject`` does), so quorum queues are read whatever
their limit (rabbitmq-server pull request 15387; the quorum queue guide, "delivery limit"). Their
``x-acquired-count`` goes up by one. A quorum queue on RabbitMQ 3.x without a limit is read; its
messages' ``x-delivery-count`` goes up by one. Either way the outcome records it
(``delivery_count_raised``).

Users: the retirement audit's ``dead_letters`` check and replay's in-flight messages
(``replay.inflight``). Each passes a ``visit(method, properties, body)`` that looks at one message; a
visitor must not raise for a message's content (the peek still gives every message back if it does).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pika.exceptions as px

from contract_platform.amqp.http import NOT_FOUND, describe_owner
from contract_platform.amqp.inspection import RESOURCE_LOCKED, QueueLocked, passive_queue
from contract_platform.amqp.types import BrokerConnection

__all__ = ["PeekOutcome", "Visit", "await_return", "peek", "requeue_risk", "requeues_count"]

Visit = Callable[[Any, Any, bytes], None]
_DEFAULT_DELIVERY_LIMIT_FROM = (4,)
_NACK_NOT_COUNTED_FROM = (4, 3)  # a nack-requeue no longer counts towards the delivery limit
_RETURN_WAIT_SECONDS = 5.0


def requeues_count(version: tuple[int, ...] | None) -> bool:
    """Whether the peek's ``basic.nack(requeue)`` may count towards a quorum queue's delivery limit here."""
    return version is None or version < _NACK_NOT_COUNTED_FROM


def requeue_risk(
    queue_type: str | None,
    arguments: Mapping[str, Any] | None,
    policy: Mapping[str, Any] | None,
    version: tuple[int, ...] | None,
) -> str | None:
    """Why reading this queue by requeueing is not safe, or None when it is."""
    if queue_type == "stream":
        return "a stream queue cannot be read with basic.get"
    if queue_type != "quorum":
        return None  # classic: requeued messages keep their positions and no delivery count applies
    if not requeues_count(version):
        return None  # the peek gives messages back with basic.nack, which 4.3+ does not count as a delivery
    limit = (arguments or {}).get("x-delivery-limit")
    if limit is None:
        limit = (policy or {}).get("delivery-limit")
    modern = version is not None and version >= _DEFAULT_DELIVERY_LIMIT_FROM
    if limit is not None:
        if modern and isinstance(limit, int) and limit < 0:
            return None  # RabbitMQ 4+: a negative limit disables it
        return (
            f"quorum queue with a delivery limit of {limit}: each requeue counts as a delivery, so reading it could "
            "dead-letter or drop messages"
        )
    if version is None:
        return "quorum queue on a broker of unknown version (RabbitMQ 4+ applies a default delivery limit of 20)"
    if modern:
        return (
            f"quorum queue on RabbitMQ {'.'.join(map(str, version))}: the default delivery limit (20) counts every "
            "requeue before RabbitMQ 4.3, so reading it could dead-letter or drop messages"
        )
    return None


@dataclass
class PeekOutcome:
    """What a peek of one queue saw (or why it did not read it)."""

    queue: str
    depth: int = 0  # ready messages when we looked
    inspected: int = 0
    unacked: int | None = None  # held by some consumer (management API only): not readable here
    skipped: str | None = None  # why it was not read
    vanished: bool = False  # absent, or deleted while being read
    exhausted: bool = False  # basic.get found it empty before the depth was reached (someone else took some)
    delivery_count_raised: bool = False  # quorum queue read: x-delivery-count went up by one
    redelivered: int = 0  # messages read that carried the redelivered flag (the queue's redeliver counter)
    empty_gets: int = 0  # basic.get answered empty (the queue's get_empty counter)

    @property
    def complete(self) -> bool:
        """Every message the queue held was seen (a vanished queue holds nothing)."""
        if self.vanished:
            return True
        read_all = self.inspected >= self.depth or self.exhausted
        return self.skipped is None and read_all and not self.unacked


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _mapping(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, dict) else None


def peek(
    connection: BrokerConnection,
    queue: str,
    *,
    limit: int,
    info: Mapping[str, Any],
    version: tuple[int, ...] | None,
    visit: Visit,
) -> PeekOutcome:
    """Show ``visit`` up to ``limit`` messages of ``queue`` and give them all back, order and depth unchanged.

    ``info`` is what is known of the queue (the management API's queue object, or the topology plan's):
    ``type``, ``arguments``, ``effective_policy_definition``, ``messages_ready``, ``messages_unacknowledged``,
    ``owner`` (``describe_owner``) or ``owner_pid_details`` of an exclusive queue; all optional.
    Broker errors other than the queue's absence or its exclusivity are not mapped (the caller knows which
    broker it is).
    """
    if _text(info.get("owner")) or isinstance(info.get("owner_pid_details"), dict):
        return _exclusive(queue, info)  # known to be another connection's: not even a passive declare
    try:
        counts = passive_queue(connection, queue)
    except QueueLocked:
        return _exclusive(queue, info)
    if counts is None:
        return PeekOutcome(queue, vanished=True)
    outcome = PeekOutcome(queue, depth=counts[0])
    unacked = info.get("messages_unacknowledged")
    outcome.unacked = unacked if isinstance(unacked, int) and not isinstance(unacked, bool) else None
    if outcome.depth == 0:
        return outcome
    queue_type = _text(info.get("type"))
    risk = requeue_risk(
        queue_type, _mapping(info.get("arguments")), _mapping(info.get("effective_policy_definition")), version
    )
    if risk is not None:
        outcome.skipped = risk
        return outcome
    _read_and_requeue(connection, outcome, min(outcome.depth, limit), visit)
    outcome.delivery_count_raised = outcome.inspected > 0 and queue_type == "quorum"
    if outcome.inspected and queue_type == "quorum" and not outcome.vanished:
        await_return(connection, queue, outcome.depth)
    return outcome


def await_return(connection: BrokerConnection, queue: str, depth: int) -> None:
    """Wait (a few seconds at most) until a quorum queue shows the returned messages as ready again.

    A quorum queue applies the nack through its Raft log after the channel has closed, so a look right
    after the peek may still find them checked out (each ``basic.get`` counts as a consumer until then).
    The broker returns them whatever happens; waiting only keeps "depth unchanged" true for whoever looks
    next. Someone else consuming meanwhile lowers the depth for good: the wait then ends at its bound.
    """
    deadline = time.monotonic() + _RETURN_WAIT_SECONDS
    while time.monotonic() < deadline:
        try:
            counts = passive_queue(connection, queue)
        except QueueLocked:
            return  # redeclared exclusive by another connection: no longer ours to look at
        if counts is None or counts[0] >= depth:
            return
        time.sleep(0.05)


def _exclusive(queue: str, info: Mapping[str, Any]) -> PeekOutcome:
    """Not read: the queue is exclusive to another connection (its depth and unacked as the API last said)."""
    owner = _text(info.get("owner")) or describe_owner(info.get("owner_pid_details"))
    ready, unacked = info.get("messages_ready"), info.get("messages_unacknowledged")
    return PeekOutcome(
        queue,
        depth=ready if isinstance(ready, int) and not isinstance(ready, bool) else 0,
        unacked=unacked if isinstance(unacked, int) and not isinstance(unacked, bool) else None,
        skipped=f"exclusive to {owner}: only that connection may read it",
    )


def _read_and_requeue(connection: BrokerConnection, outcome: PeekOutcome, limit: int, visit: Visit) -> None:
    """basic.get up to ``limit`` messages, show each to ``visit``, then give them all back with one nack."""
    channel = connection.channel()
    last_tag: int | None = None
    try:
        for _ in range(limit):
            method, properties, body = channel.basic_get(outcome.queue, auto_ack=False)
            if method is None or body is None:  # pika's empty get: (None, None, None)
                outcome.exhausted = True
                outcome.empty_gets += 1
                break
            last_tag = method.delivery_tag
            outcome.inspected += 1
            outcome.redelivered += 1 if getattr(method, "redelivered", False) is True else 0
            visit(method, properties, body)
    except px.ChannelClosedByBroker as exc:
        if exc.reply_code == RESOURCE_LOCKED:  # redeclared exclusive by another connection while being read
            outcome.skipped = "exclusive to another connection: only that connection may read it"
        elif exc.reply_code == NOT_FOUND:
            outcome.vanished = True  # deleted while being read: its messages went with it, not by our doing
        else:
            raise
    finally:
        if last_tag is not None and channel.is_open:
            channel.basic_nack(delivery_tag=last_tag, multiple=True, requeue=True)
        if channel.is_open:
            channel.close()  # anything still unacked (none after the nack) is requeued by the broker

"""RabbitMQ topology of a contract (docs/design.md#topology-names), provisioned idempotently.

The plan, names and arguments of every exchange, queue and binding, is ``contract_platform.amqp.plan``
(pure; its docstring draws the bindings), re-exported here.

``provision`` never deletes or redeclares an existing object: it compares what is there (management
API, or the broker's 406 on an equivalent declare) and reports a ``TopologyConflict``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

import pika.exceptions as px
from pika.adapters.blocking_connection import BlockingChannel

from contract_platform.amqp import plan
from contract_platform.amqp.connection import broker_errors, broker_version, describe_broker
from contract_platform.amqp.http import ManagementClient
from contract_platform.amqp.inspection import exchange_exists, inspect_queue, passive_queue, resolve_management
from contract_platform.amqp.plan import *  # noqa: F403  (every name of the plan, re-exported: ``__all__``)
from contract_platform.amqp.plan import (
    Binding,
    Exchange,
    Queue,
    Role,
    TopologyPlan,
    dlx_name,
)
from contract_platform.amqp.types import BrokerConnection
from contract_platform.errors import BrokerError, TopologyConflict
from contract_platform.evidence.figures import TopologyFigures

__all__ = ["Outcome", "ProvisionReport", "RemovalReport", "Step", "provision", "remove_topology"]
__all__ += plan.__all__

PRECONDITION_FAILED = 406
# RabbitMQ version needed by each queue feature the plan may use.
_QUORUM = (3, 8)
_QUORUM_TTL_AND_AT_LEAST_ONCE = (3, 10)


class Outcome(StrEnum):
    CREATED = "created"  # it was not there; now it is
    PRESENT = "present"  # it was there, as wanted; nothing was sent
    ENSURED = "ensured"  # declared again (idempotent) because the broker could not say whether it existed
    CONFLICT = "conflict"  # there with other arguments; left alone
    SKIPPED = "skipped"  # not attempted because something it depends on is in conflict
    DELETED = "deleted"
    ABSENT = "absent"
    KEPT = "kept"  # removal refused: not empty, in use, or still bound


@dataclass(frozen=True)
class Step:
    kind: Literal["exchange", "queue", "binding"]
    name: str
    outcome: Outcome
    detail: str = ""


@dataclass(frozen=True)
class _Report:
    broker: str
    message_type: str
    steps: tuple[Step, ...]

    def names(self, outcome: Outcome) -> list[str]:
        return [step.name for step in self.steps if step.outcome is outcome]

    def evidence_figures(self) -> TopologyFigures:
        """The ``topology`` evidence figures (snake_case; ``as_dict`` is the CLI's JSON)."""
        return TopologyFigures(
            broker=self.broker,
            message_type=self.message_type,
            steps=tuple(
                {"kind": s.kind, "name": s.name, "outcome": str(s.outcome), "detail": s.detail} for s in self.steps
            ),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "broker": self.broker,
            "messageType": self.message_type,
            "steps": [
                {"kind": s.kind, "name": s.name, "outcome": str(s.outcome), "detail": s.detail} for s in self.steps
            ],
        }


@dataclass(frozen=True)
class ProvisionReport(_Report):
    conflicts: tuple[TopologyConflict, ...] = ()

    @property
    def created(self) -> list[str]:
        return self.names(Outcome.CREATED)

    @property
    def present(self) -> list[str]:
        return self.names(Outcome.PRESENT)

    @property
    def changed(self) -> bool:
        return bool(self.created)


@dataclass(frozen=True)
class RemovalReport(_Report):
    @property
    def deleted(self) -> list[str]:
        return self.names(Outcome.DELETED)

    @property
    def kept(self) -> list[str]:
        return self.names(Outcome.KEPT)


class _Session:
    """One connection, a work channel reopened after the broker closes it (406), and the optional API."""

    def __init__(self, connection: BrokerConnection, management: ManagementClient | None) -> None:
        self.connection = connection
        self.management = management
        self._channel: Any = None

    def channel(self) -> Any:
        if self._channel is None or not self._channel.is_open:
            self._channel = self.connection.channel()
        return self._channel

    def close(self) -> None:
        if self._channel is not None and self._channel.is_open:
            self._channel.close()

    def declare(self, action: Callable[[Any], object], name: str, wanted: dict[str, object]) -> TopologyConflict | None:
        """Run a non-passive declare; a 406 becomes a conflict whose existing side is unknown."""
        try:
            action(self.channel())
        except px.ChannelClosedByBroker as exc:
            if exc.reply_code != PRECONDITION_FAILED:
                raise
            text = str(exc.reply_text).removeprefix("PRECONDITION_FAILED - ")
            return TopologyConflict(name, {"unknown": f"406 PRECONDITION_FAILED: {text}"}, wanted)
        return None

    def ensure_exchange(self, exchange: Exchange) -> TopologyConflict | Outcome:
        def declare(ch: Any) -> object:
            return ch.exchange_declare(exchange.name, exchange_type=exchange.type, durable=exchange.durable)

        if not exchange_exists(self.connection, exchange.name):
            return self.declare(declare, exchange.name, exchange.wanted()) or Outcome.CREATED
        info = self.management.exchange(exchange.name) if self.management else None
        if info is None:
            return self.declare(declare, exchange.name, exchange.wanted()) or Outcome.PRESENT
        existing: dict[str, object] = {key: info[key] for key in ("type", "durable") if key in info}
        if any(existing[key] != value for key, value in exchange.wanted().items() if key in existing):
            return TopologyConflict(exchange.name, existing, exchange.wanted())
        return Outcome.PRESENT

    def ensure_queue(self, queue: Queue) -> TopologyConflict | Outcome:
        def declare(ch: Any) -> object:
            return ch.queue_declare(queue.name, durable=queue.durable, arguments=dict(queue.arguments))

        if passive_queue(self.connection, queue.name) is None:
            return self.declare(declare, queue.name, queue.wanted()) or Outcome.CREATED
        info = self.management.queue(queue.name) if self.management else None
        arguments = info.get("arguments") if info is not None else None
        if info is None or not isinstance(arguments, dict):
            return self.declare(declare, queue.name, queue.wanted()) or Outcome.PRESENT
        differs = _normalized(arguments) != _normalized(queue.arguments)
        if "durable" in info and info["durable"] != queue.durable:
            differs = True
        if differs:
            existing: dict[str, object] = {key: info[key] for key in ("type", "durable") if key in info}
            existing["arguments"] = arguments
            return TopologyConflict(queue.name, existing, queue.wanted())
        return Outcome.PRESENT

    def ensure_binding(self, binding: Binding, new: bool) -> Outcome:
        existing = None if new or self.management is None else self.management.bindings(binding.exchange, binding.queue)
        if existing is not None and any(b.get("routing_key") == binding.routing_key for b in existing):
            return Outcome.PRESENT
        self.channel().queue_bind(binding.queue, binding.exchange, routing_key=binding.routing_key)
        return Outcome.CREATED if new or existing is not None else Outcome.ENSURED


def _normalized(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments as the broker means them: a queue declared without ``x-queue-type`` is classic."""
    return {"x-queue-type": "classic"} | dict(arguments)


def _connection_of(target: Any) -> Any:
    return target.connection if isinstance(target, BlockingChannel) else target


def _check_broker(connection: BrokerConnection, plan: TopologyPlan, broker: str) -> None:
    version = broker_version(connection)
    quorum = [q for q in plan.queues if q.queue_type == "quorum"]
    newer = any({"x-message-ttl", "x-dead-letter-strategy"} & set(q.arguments) for q in quorum)
    needed = _QUORUM_TTL_AND_AT_LEAST_ONCE if newer else _QUORUM
    if version is not None and quorum and version < needed:
        raise BrokerError(
            f"RabbitMQ at {broker} is {'.'.join(map(str, version))}; the quorum queues of {plan.message_type} need "
            f"{'.'.join(map(str, needed))} or later: upgrade the broker or set topology.queueType: classic"
        )


def provision(
    target: Any,
    plan: TopologyPlan,
    *,
    management: ManagementClient | None | Literal["auto"] = "auto",
    strict: bool = True,
) -> ProvisionReport:
    """Declare what ``plan`` needs and is missing; leave everything that exists as it is.

    ``target`` is a pika BlockingConnection or BlockingChannel (only its connection is used: this
    opens its own channels, since a 406 closes the channel it happens on). With ``strict`` the first
    conflict is raised as ``TopologyConflict`` once everything else has been declared; otherwise the
    report carries every conflict.
    """
    connection = _connection_of(target)
    broker = describe_broker(connection)
    session = _Session(connection, resolve_management(connection, management))
    with broker_errors(broker):
        _check_broker(connection, plan, broker)
        try:
            steps, conflicts = _declare_all(session, plan)
        finally:
            session.close()
    report = ProvisionReport(broker, plan.message_type, tuple(steps), tuple(conflicts))
    if strict and conflicts:
        raise conflicts[0]
    return report


def _declare_all(session: _Session, plan: TopologyPlan) -> tuple[list[Step], list[TopologyConflict]]:
    steps: list[Step] = []
    conflicts: list[TopologyConflict] = []
    created: set[str] = set()
    declarations: list[tuple[Literal["exchange", "queue"], Exchange | Queue]] = [
        *(("exchange", e) for e in plan.exchanges),
        *(("queue", q) for q in plan.queues),
    ]
    for kind, item in declarations:
        result = session.ensure_exchange(item) if isinstance(item, Exchange) else session.ensure_queue(item)
        if isinstance(result, TopologyConflict):
            conflicts.append(result)
            steps.append(Step(kind, item.name, Outcome.CONFLICT, str(result)))
            continue
        if result is Outcome.CREATED:
            created.add(item.name)
        steps.append(Step(kind, item.name, result))
    blocked = {conflict.name for conflict in conflicts}
    for binding in plan.bindings:
        if {binding.exchange, binding.queue} & blocked:
            steps.append(Step("binding", binding.name, Outcome.SKIPPED, "its exchange or queue is in conflict"))
            continue
        new = bool({binding.exchange, binding.queue} & created)
        steps.append(Step("binding", binding.name, session.ensure_binding(binding, new)))
    return steps, conflicts


def remove_topology(
    connection: BrokerConnection,
    plan: TopologyPlan,
    *,
    exchanges_in_use: Collection[str],
    only_if_empty: bool = True,
    management: ManagementClient | None | Literal["auto"] = "auto",
) -> RemovalReport:
    """Retire a version's queues (retry, consumer, DLQ, parking lot), and its exchanges if nobody else uses them.

    ``exchanges_in_use``: exchanges other contracts still publish to; those, their DLX and their
    archive queue are kept. With ``only_if_empty`` a queue with ready or unacked messages or with
    consumers is kept (quorum queues do not support ``if-empty`` on delete, so this checks first;
    a message published between the check and the delete of a quorum queue would be lost).
    """
    connection = _connection_of(connection)
    broker = describe_broker(connection)
    client = resolve_management(connection, management)
    session = _Session(connection, client)
    steps: list[Step] = []
    order = (Role.RETRY, Role.CONSUMER, Role.DLQ, Role.PARKING_LOT)
    queues = sorted(plan.queues_of(*order), key=lambda q: order.index(q.role))
    shared = plan.exchange in exchanges_in_use
    with broker_errors(broker):
        try:
            for queue in queues + ([] if shared else plan.queues_of(Role.ARCHIVE)):
                steps.append(_remove_queue(session, queue, only_if_empty, client))
            for exchange in (dlx_name(plan.exchange), plan.exchange):
                steps.append(
                    Step("exchange", exchange, Outcome.KEPT, "still used by other contracts")
                    if shared
                    else _remove_exchange(session, exchange)
                )
        finally:
            session.close()
    return RemovalReport(broker, plan.message_type, tuple(steps))


def _remove_queue(session: _Session, queue: Queue, only_if_empty: bool, client: ManagementClient | None) -> Step:
    state = inspect_queue(session.connection, queue.name, management=client)
    if not state.exists:
        return Step("queue", queue.name, Outcome.ABSENT)
    if only_if_empty and (state.ready or state.consumers or state.unacked):
        detail = f"{state.ready} ready, {state.unacked or 0} unacked, {state.consumers} consumers"
        return Step("queue", queue.name, Outcome.KEPT, detail)
    try:
        session.channel().queue_delete(queue.name, if_empty=only_if_empty and queue.queue_type == "classic")
    except px.ChannelClosedByBroker as exc:
        if exc.reply_code != PRECONDITION_FAILED:
            raise
        return Step("queue", queue.name, Outcome.KEPT, str(exc.reply_text))
    return Step("queue", queue.name, Outcome.DELETED)


def _remove_exchange(session: _Session, name: str) -> Step:
    if not exchange_exists(session.connection, name):
        return Step("exchange", name, Outcome.ABSENT)
    try:
        session.channel().exchange_delete(name, if_unused=True)
    except px.ChannelClosedByBroker as exc:
        if exc.reply_code != PRECONDITION_FAILED:
            raise
        return Step("exchange", name, Outcome.KEPT, f"still has bindings ({exc.reply_text})")
    return Step("exchange", name, Outcome.DELETED)

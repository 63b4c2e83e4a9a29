"""RabbitMQ topology of a contract as data (docs/design.md#topology-names): its names and ``plan_topology``.

Pure: nothing here talks to a broker or imports pika or an HTTP client, so what only names or plans the
topology (the AsyncAPI export, ``contractctl migration status``) starts without them.
``contract_platform.amqp.topology`` provisions a plan and re-exports every name defined here.

For an exchange ``E``, a consumer queue ``Q`` and routing key ``K``::

    E        topic, durable       Q  <- E (K)                   archive.E <- E (#)
    E.dlx    topic, durable       Q.dlq          <- E.dlx (Q.dlq)
                                  Q.parking-lot  <- E.dlx (Q.parking-lot)
                                  Q.retry.<ttl>  <- E.dlx (Q.retry.<ttl>)

- ``Q`` dead-letters (reject/nack without requeue, or expiry) to ``E.dlx`` with key ``Q.dlq``, so a
  rejected message lands in ``Q.dlq`` whatever routing key it was published with.
- ``Q.retry.<ttl>`` holds a message for ``x-message-ttl`` and dead-letters it back to ``Q`` through
  the default exchange (``""`` with key ``Q``): no extra binding, cannot reach any other queue. A
  consumer schedules a retry by publishing to ``E.dlx`` with key ``Q.retry.<ttl>`` (or to ``""``).
- ``Q.parking-lot`` is where a consumer (or an operator) moves messages it gives up on; no TTL.
- No TTL anywhere else: ``retention`` is evidence for the retirement audit, not an expiry, so no
  message ever disappears silently.
- Queues are quorum unless ``topology.queueType`` is ``classic``. Quorum queues that dead-letter
  (``Q`` and its retry queues) use ``x-dead-letter-strategy: at-least-once`` with
  ``x-overflow: reject-publish`` (required by that strategy): a dead-lettered message is only dropped
  from its source once the target queue has confirmed it. Quorum TTL and at-least-once need
  RabbitMQ 3.10+; ``contract_platform.amqp.topology.provision`` checks the broker version first.
- ``x-delivery-limit`` is not set: on 3.x there is no default limit and a negative value is not
  "unlimited"; the consumer decides (reject -> ``Q.dlq``). On RabbitMQ 4.x the broker default (20)
  applies: ``Q`` then dead-letters to ``Q.dlq``, and code that peeks by requeueing must use nack.
- ``archive.E`` is a quorum queue whatever the contracts say: it is shared by every contract on
  ``E`` (so its arguments cannot follow one contract) and it is the archive's source of evidence,
  which deserves replication.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Any

from contract_platform.catalog.model import Contract
from contract_platform.durations import format_duration
from contract_platform.errors import CatalogError, Problem

__all__ = [
    "ARCHIVE_QUEUE_TYPE",
    "QUEUE_TYPES",
    "Binding",
    "Exchange",
    "Queue",
    "Role",
    "TopologyPlan",
    "archive_queue_name",
    "dlq_name",
    "dlx_name",
    "parking_lot_name",
    "plan_topology",
    "retry_queue_name",
    "tap_queue_name",
]

QUEUE_TYPES = ("quorum", "classic")
ARCHIVE_QUEUE_TYPE = "quorum"


def dlx_name(exchange: str) -> str:
    return f"{exchange}.dlx"


def dlq_name(queue: str) -> str:
    return f"{queue}.dlq"


def parking_lot_name(queue: str) -> str:
    return f"{queue}.parking-lot"


def retry_queue_name(queue: str, delay: timedelta) -> str:
    return f"{queue}.retry.{format_duration(delay)}"


def archive_queue_name(exchange: str) -> str:
    return f"archive.{exchange}"


def tap_queue_name(message_type: str) -> str:
    """``bridge.billing.invoice-issued.v1``: the bridge's own queue on the v1 routing key."""
    return f"bridge.{message_type}"


class Role(StrEnum):
    CONSUMER = "consumer"
    RETRY = "retry"
    DLQ = "dlq"
    PARKING_LOT = "parking-lot"
    ARCHIVE = "archive"


@dataclass(frozen=True)
class Exchange:
    name: str
    type: str = "topic"
    durable: bool = True

    def wanted(self) -> dict[str, object]:
        return {"type": self.type, "durable": self.durable}


@dataclass(frozen=True)
class Queue:
    name: str
    role: Role
    arguments: Mapping[str, Any] = field(default_factory=dict, hash=False)
    durable: bool = True
    serves: str | None = None  # the consumer queue a retry queue, DLQ or parking lot belongs to

    @property
    def queue_type(self) -> str:
        return str(self.arguments.get("x-queue-type", "classic"))

    def wanted(self) -> dict[str, object]:
        return {"durable": self.durable, "arguments": dict(self.arguments)}


@dataclass(frozen=True)
class Binding:
    exchange: str
    queue: str
    routing_key: str

    @property
    def name(self) -> str:
        return f"{self.exchange} -> {self.queue} [{self.routing_key}]"


@dataclass(frozen=True)
class TopologyPlan:
    """Everything one contract version needs on the broker, in declaration order."""

    message_type: str
    exchange: str
    exchanges: tuple[Exchange, ...]
    queues: tuple[Queue, ...]
    bindings: tuple[Binding, ...]

    def queue(self, name: str) -> Queue:
        for queue in self.queues:
            if queue.name == name:
                return queue
        raise KeyError(f"{name} is not in the topology of {self.message_type}")

    def queues_of(self, *roles: Role) -> list[Queue]:
        return [queue for queue in self.queues if queue.role in roles]


def _at_least_once(queue_type: str) -> dict[str, Any]:
    if queue_type != "quorum":
        return {}
    return {"x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish"}


def plan_topology(contract: Contract) -> TopologyPlan:
    """The exchanges, queues and bindings of ``contract``; pure, no broker needed."""
    queue_type = contract.topology.queue_type
    if queue_type not in QUEUE_TYPES:
        raise CatalogError(
            Problem(str(contract.contract_file), "/topology/queueType", f"{queue_type!r} is not one of {QUEUE_TYPES}")
        )
    exchange = contract.transport.exchange
    dlx = dlx_name(exchange)
    base: dict[str, Any] = {"x-queue-type": queue_type}
    queues: list[Queue] = []
    bindings: list[Binding] = []
    for name in dict.fromkeys(consumer.queue for consumer in contract.consumers):
        dlq, parking = dlq_name(name), parking_lot_name(name)
        queues.append(Queue(dlq, Role.DLQ, dict(base), serves=name))
        queues.append(Queue(parking, Role.PARKING_LOT, dict(base), serves=name))
        bindings += [Binding(dlx, dlq, dlq), Binding(dlx, parking, parking)]
        retries = {retry_queue_name(name, delay): delay for delay in contract.topology.retry_delays}
        for retry, delay in retries.items():
            arguments = base | {
                "x-message-ttl": int(delay.total_seconds() * 1000),
                "x-dead-letter-exchange": "",
                "x-dead-letter-routing-key": name,
            }
            queues.append(Queue(retry, Role.RETRY, arguments | _at_least_once(queue_type), serves=name))
            bindings.append(Binding(dlx, retry, retry))
        arguments = base | {"x-dead-letter-exchange": dlx, "x-dead-letter-routing-key": dlq}
        queues.append(Queue(name, Role.CONSUMER, arguments | _at_least_once(queue_type)))
        bindings.append(Binding(exchange, name, contract.transport.routing_key))
    archive = archive_queue_name(exchange)
    queues.append(Queue(archive, Role.ARCHIVE, {"x-queue-type": ARCHIVE_QUEUE_TYPE}))
    bindings.append(Binding(exchange, archive, "#"))
    return TopologyPlan(
        contract.message_type, exchange, (Exchange(exchange), Exchange(dlx)), tuple(queues), tuple(bindings)
    )

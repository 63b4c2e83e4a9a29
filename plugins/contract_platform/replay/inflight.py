"""Messages of a version still in flight on the broker, as archive records for replay (docs/replay.md).

::

    in_flight_records(connection, contract, *, management=None, max_messages=DEFAULT_MAX_MESSAGES) -> InFlight
        records  [(queue, archive record)]: every message of the version's messageType (same major) found
        queues   per queue looked at: vhost, depth, inspected, skipped (why it was not read) and complete

Which queues: the version's consumer queues, their retry queues, DLQs and parking lots (``plan_topology``),
in the connection's virtual host; with the management API, also the dead-letter queues the broker's
topology attributes to the version (``retirement.discovery``, ``Discovery.attributed``: where its
receivers dead-letter it, by their arguments or policies; what its exchange's ``.dlx`` routes its key to;
DLQs named after its queues or its messageType), the one rule the retirement audit uses too. Other
contracts' DLQs are never read. Without it
the version's own queues are still read (a passive declare gives their depth) and ``InFlight.discovered``
is False with the reason: other DLQs were not looked for. Before RabbitMQ 4.3, quorum queues are then not
read at all: a policy's delivery limit cannot be seen without the API, and requeueing under one could
lose messages.

How: each queue is read with the platform's non-destructive peek (``amqp.peek``): depth and order stay
as they were; a queue that requeueing could harm (before RabbitMQ 4.3, a quorum queue under a delivery
limit, which 4.0 to 4.2 set by default; a stream) is not read and says why. At most ``max_messages`` per
queue: a deeper queue is reported incomplete, never as clean.

A message becomes the record the archiver would have written (``to_record``), with two differences a
queue imposes: ``receivedAt`` is the moment it was read, and ``exchange``/``routingKey`` are where it was
first published. A message that was dead-lettered carries that in its oldest ``x-death`` entry; one that
only passed through the version's own dead-letter exchange or the default exchange (a retry) was
published to the contract's exchange with its routing key, the only way into these queues (a queue
found by topology keeps what its delivery says).

A message whose body is not UTF-8 or not JSON is a record like any other (replay counts it unreadable,
with the checker's reason); a message whose properties cannot be read at all is counted as ``unreadable``
on its queue. Headers are bounded like bodies: a message of the version whose record nests deeper than
``limits.depth_limit()`` (a forged header table) is not a record but an entry of ``InFlight.unreadable``
with the pointer; an ``x-death`` entry whose ``exchange`` or ``routing-keys`` are not text says nothing
about where the message was published.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from contract_platform.amqp.connection import broker_errors, broker_version, describe_broker
from contract_platform.amqp.http import ManagementClient
from contract_platform.amqp.inspection import passive_queue
from contract_platform.amqp.management import BrokerTopology, probe_management, read_topology
from contract_platform.amqp.peek import PeekOutcome, peek, requeues_count
from contract_platform.amqp.topology import Role, dlx_name, plan_topology
from contract_platform.amqp.types import BrokerConnection
from contract_platform.archive_record import record_type, to_record
from contract_platform.catalog.model import Contract
from contract_platform.errors import ManagementUnavailable
from contract_platform.limits import depth_limit, nesting_beyond
from contract_platform.retirement.discovery import discover_queues
from contract_platform.retirement.snapshot import TopologySnapshot

__all__ = ["DEFAULT_MAX_MESSAGES", "InFlight", "InFlightQueue", "in_flight_records"]

log = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGES = 10_000  # per queue: deeper queues are read this far and reported incomplete
_OWN_ROLES = (Role.CONSUMER, Role.RETRY, Role.DLQ, Role.PARKING_LOT)
_DISCOVERED = "discovered"  # role of a dead-letter queue found by the broker's topology
_ABSENT = "absent"  # the queue is not on the broker: nothing in flight there
_UNSEEN_POLICY = (
    "not read: a quorum queue whose policies cannot be seen without the management API (a delivery limit there "
    "would count every requeue)"
)


@dataclass
class InFlightQueue:
    """One queue looked at: what was read, and why not when it was not."""

    queue: str
    vhost: str
    role: str  # consumer / retry / dlq / parking-lot / discovered
    depth: int = 0
    inspected: int = 0
    matching: int = 0  # messages of the version among those inspected
    unreadable: int = 0  # messages whose properties could not be turned into a record
    skipped: str | None = None  # why it was not (fully) read; None when every message was seen

    @property
    def complete(self) -> bool:
        return self.skipped is None

    def to_dict(self) -> dict[str, Any]:
        """The per-queue shape of the replay evidence's ``in_flight.queues`` (``rejected`` is added by replay)."""
        return {
            "queue": self.queue,
            "vhost": self.vhost,
            "role": self.role,
            "depth": self.depth,
            "inspected": self.inspected,
            "matching": self.matching,
            "skipped": self.skipped,
        }


@dataclass(frozen=True)
class InFlight:
    """Records of the version found on the broker, and what was (not) looked at."""

    records: list[tuple[str, dict[str, Any]]]
    queues: tuple[InFlightQueue, ...]
    discovered: bool  # dead-letter queues by topology were looked for (management API available)
    note: str | None = None  # why they were not
    broker_version: str | None = None
    read_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (queue, why) of the version's, not records

    @property
    def complete(self) -> bool:
        """Every queue that could hold the version's messages was found and read to the end."""
        return self.discovered and all(q.complete for q in self.queues)


def in_flight_records(
    connection: BrokerConnection,
    contract: Contract,
    *,
    management: ManagementClient | None = None,
    max_messages: int = DEFAULT_MAX_MESSAGES,
    snapshot: TopologySnapshot | None = None,
) -> InFlight:
    """Peek every queue that may hold messages of ``contract`` and return those messages as archive records.

    ``snapshot``: the broker's topology read once for many versions (``retirement.snapshot``); without it
    the topology of the connection's virtual host is read here."""
    if max_messages < 1:
        raise ValueError(f"max_messages must be at least 1, not {max_messages}")
    plan = plan_topology(contract)
    home = _vhost_of(connection, management)
    queues: dict[str, InFlightQueue] = {}
    info: dict[str, Mapping[str, Any]] = {}
    topology, note = (snapshot.topology, None) if snapshot is not None else _topology(management, home)
    version = broker_version(connection)
    for queue in plan.queues_of(*_OWN_ROLES):
        queues[queue.name] = InFlightQueue(queue.name, home, str(queue.role))
        info[queue.name] = {"type": queue.queue_type, "arguments": dict(queue.arguments)}
        if topology is None and queue.queue_type == "quorum" and requeues_count(version):
            queues[queue.name].skipped = _UNSEEN_POLICY
    if topology is not None:
        hosted = topology.vhosts.get(home)
        discovery = (
            snapshot.discover(contract, plan)
            if snapshot is not None
            else discover_queues(contract, plan, topology, home_vhost=home)
        )
        for entry in discovery.attributed:
            if entry.vhost == home:
                queues.setdefault(entry.queue, InFlightQueue(entry.queue, home, _DISCOVERED))
        for name in queues:
            known = hosted.queues.get(name) if hosted is not None else None
            if known is not None:
                info[name] = {
                    "type": known.type,
                    "arguments": dict(known.arguments),
                    "effective_policy_definition": dict(known.policy),
                    "messages_unacknowledged": known.unacked,
                }
    reader = _Reader(contract, dlx_name(contract.transport.exchange))
    with broker_errors(describe_broker(connection)):
        for name, looked in queues.items():
            if looked.skipped is not None:
                counts = passive_queue(connection, name)
                looked.depth, looked.skipped = (counts[0], looked.skipped) if counts else (0, _ABSENT)
                continue
            outcome = peek(
                connection,
                name,
                limit=max_messages,
                info=info.get(name, {}),
                version=version,
                visit=partial(reader.visit, looked),
            )
            _describe(looked, outcome, max_messages)
    shown_version = ".".join(map(str, version)) if version else None
    present = tuple(q for q in queues.values() if q.skipped != _ABSENT)
    return InFlight(
        reader.records, present, topology is not None, note, shown_version, reader.read_at, reader.unreadable
    )


def _vhost_of(connection: BrokerConnection, management: ManagementClient | None) -> str:
    params = getattr(getattr(connection, "_impl", None), "params", None)
    vhost = getattr(params, "virtual_host", None)
    if isinstance(vhost, str) and vhost:
        return vhost
    return management.vhost if management is not None else "/"


def _topology(management: ManagementClient | None, home: str) -> tuple[BrokerTopology | None, str | None]:
    """The broker's topology of ``home``, or None and why (then only the version's own queues are read)."""
    if management is None:
        return None, "no management API given: only the version's own queues were read, other DLQs not looked for"
    problem = probe_management(management)
    if problem is None:
        try:
            return read_topology(management, [home]), None
        except ManagementUnavailable as exc:
            problem = str(exc)
    log.warning("in-flight messages: %s", problem)
    return None, f"only the version's own queues were read, other DLQs not looked for: {problem}"


def _describe(looked: InFlightQueue, outcome: PeekOutcome, max_messages: int) -> None:
    looked.depth, looked.inspected = outcome.depth, outcome.inspected
    if outcome.vanished and outcome.inspected == 0:
        looked.skipped = _ABSENT  # not on the broker: nothing in flight there (dropped from the result)
    elif outcome.vanished:
        looked.skipped = f"deleted while being read, after {outcome.inspected} messages"
    elif outcome.skipped is not None:
        looked.skipped = f"not read: {outcome.skipped}"
    elif outcome.unacked:
        looked.skipped = f"{outcome.unacked} messages held unacknowledged by a consumer could not be read"
    elif not outcome.complete:
        looked.skipped = f"incomplete: {outcome.inspected} of {outcome.depth} messages read (at most {max_messages})"


class _Reader:
    """Turns peeked messages of the version into archive records."""

    def __init__(self, contract: Contract, dlx: str) -> None:
        self.contract = contract
        self.own_hops = {"", dlx}  # exchanges only the platform's own retry and dead-letter routing uses
        self.records: list[tuple[str, dict[str, Any]]] = []
        self.unreadable: list[tuple[str, str]] = []
        self.read_at = datetime.now(UTC)
        self.depth_limit = depth_limit()

    def visit(self, looked: InFlightQueue, method: Any, properties: Any, body: bytes) -> None:
        try:
            record = to_record(method, properties, body or b"", self.read_at)
        except (TypeError, ValueError, AttributeError, RecursionError):
            looked.unreadable += 1
            return
        try:
            found = record_type(record)
        except RecursionError:  # a body nested too deep to parse: no type can be read from it
            found = None
        if found != self.contract.message_type:
            return
        looked.matching += 1
        deep = nesting_beyond(record, self.depth_limit)
        if deep is not None:
            self.unreadable.append(
                (looked.queue, f"MALFORMED: the message nests deeper than {self.depth_limit} levels at {deep}")
            )
            return
        record["exchange"], record["routingKey"] = self._published_route(record, own=looked.role != _DISCOVERED)
        self.records.append((looked.queue, record))

    def _published_route(self, record: Mapping[str, Any], *, own: bool) -> tuple[Any, Any]:
        exchange, key = record.get("exchange"), record.get("routingKey")
        headers = (record.get("properties") or {}).get("headers") or {}
        deaths = headers.get("x-death")
        oldest = deaths[-1] if isinstance(deaths, list) and deaths else None
        if isinstance(oldest, dict):
            dead_lettered_from = oldest.get("exchange")
            exchange = dead_lettered_from if isinstance(dead_lettered_from, str) else exchange
            keys = oldest.get("routing-keys")
            key = keys[0] if isinstance(keys, list) and keys and isinstance(keys[0], str) else key
        if own and isinstance(exchange, str) and exchange in self.own_hops:
            transport = self.contract.transport
            return transport.exchange, transport.routing_key
        return exchange, key

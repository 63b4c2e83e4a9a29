"""Which queues the retirement audit considers, and how each was found, from the broker's whole topology.

::

    discover_queues(contract, plan, topology, *, home_vhost, suffixes, scope) -> Discovery
        receivers          every queue a message of the version reaches from its exchange, matched as the
                           broker matches (``amqp.routing``), in every watched virtual host, plus the
                           platform's own queues of the version
        dead_letter_queues every queue the broker dead-letters into: bound (directly or through
                           exchange-to-exchange bindings) to an exchange named by some queue's
                           ``x-dead-letter-exchange`` or by a policy's or operator policy's
                           ``dead-letter-exchange`` (the default exchange with a dead-letter routing key
                           too); then, as a second net, queues named by convention (``.dlq``, ``_error``...);
                           and the platform's own DLQs and parking lots

How a queue was found is kept (``Found``) so the report can say it. One pattern is not a DLQ: a queue
with a message TTL that dead-letters to the default exchange is a delayed-retry queue handing messages
back to work (the platform's ``<queue>.retry.<ttl>``); its target is a work queue, judged as a receiver
if the version reaches it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from typing import Any

from contract_platform.amqp.management import BrokerTopology, ConsumerInfo, VhostTopology
from contract_platform.amqp.routing import (
    ANY_KEY,
    HeaderModel,
    Match,
    Route,
    index_bindings,
    route_message,
)
from contract_platform.amqp.topology import Role, TopologyPlan, tap_queue_name
from contract_platform.archive_record import TYPE_HEADERS
from contract_platform.catalog.model import Contract

__all__ = [
    "DEFAULT_DEAD_LETTER_SUFFIXES",
    "Considered",
    "Discovery",
    "Found",
    "discover_queues",
    "headers_of",
]

# The second net: names several frameworks and teams give their dead-letter queues (case-insensitive).
DEFAULT_DEAD_LETTER_SUFFIXES = (
    ".dlq",
    "-dlq",
    "_dlq",
    ".dead",
    ".dead-letter",
    ".dead-letters",
    ".deadletter",
    "_error",
    "_skipped",
    ".error",
    ".errors",
    ".parking-lot",
    ".parkinglot",
)


_KEPT_REASONS = 3  # sentences kept per queue and per way it was found beyond the first; the rest are counted


class Found(StrEnum):
    """How a queue came to be considered (stable ids, shown in the report and the UI)."""

    PLATFORM = "platform topology"
    BINDING = "binding"
    DLX = "DLX topology"
    POLICY = "policy"
    NAME = "name convention"


@dataclass
class Considered:
    """One queue the audit looked at: where, why (``found`` and a sentence each), and who reads it."""

    vhost: str
    queue: str
    found: list[Found] = field(default_factory=list)
    why: list[str] = field(default_factory=list)
    role: Role | None = None  # the platform's role for its own queues
    certain: bool = True  # False: reached only through a headers binding that may match
    readers: tuple[ConsumerInfo, ...] = ()
    more: int = 0  # further reasons not kept (a DLX shared by many queues gives each DLQ many)

    def add(self, found: Found, why: str | Callable[[], str]) -> None:
        """Record one way the queue was found; the sentence is made (``why()``) only while fewer than a few are kept."""
        new = found not in self.found
        if new:
            self.found.append(found)
        if len(self.why) >= _KEPT_REASONS and not new:
            self.more += 1
            return
        text = why() if callable(why) else why
        if text not in self.why:
            self.why.append(text)

    @property
    def reasons(self) -> tuple[str, ...]:
        return (*self.why, f"and {self.more} more") if self.more else tuple(self.why)

    @property
    def how(self) -> str:
        return ", ".join(str(f) for f in self.found)

    def to_dict(self) -> dict[str, Any]:
        return {
            "vhost": self.vhost,
            "queue": self.queue,
            "foundBy": [str(f) for f in self.found],
            "why": list(self.reasons),
            "role": str(self.role) if self.role else None,
            "certain": self.certain,
            "readers": [reader.to_dict() for reader in self.readers],
        }


@dataclass(frozen=True)
class Discovery:
    receivers: tuple[Considered, ...]
    dead_letter_queues: tuple[Considered, ...]
    vhosts: tuple[str, ...]
    excluded: tuple[str, ...] = ()  # the platform's archive queues: shared by every contract, drained by the archiver


def headers_of(contract: Contract) -> HeaderModel:
    """What a message of ``contract`` may carry: the platform's headers, and the type headers other producers set."""
    known: dict[str, Any] = {name: contract.message_type for name in TYPE_HEADERS}
    known |= {"schema-version": contract.major, "producer": contract.owner.service}
    return HeaderModel(known, frozenset({"message-version", "tenant-id", "trace-id"}), closed=False)


def _entry(table: dict[tuple[str, str], Considered], vhost: str, queue: str) -> Considered:
    return table.setdefault((vhost, queue), Considered(vhost, queue))


def _receivers(contract: Contract, plan: TopologyPlan, topology: BrokerTopology, home: str) -> dict[Any, Considered]:
    table: dict[tuple[str, str], Considered] = {}
    for queue in plan.queues_of(Role.CONSUMER, Role.RETRY, Role.DLQ, Role.PARKING_LOT):
        entry = _entry(table, home, queue.name)
        entry.role = queue.role
        entry.add(Found.PLATFORM, f"{queue.role} queue of {contract.message_type} in the catalogue")
    headers = headers_of(contract)
    for vhost, hosted in topology.vhosts.items():
        reached = route_message(
            contract.transport.exchange, contract.transport.routing_key, headers, hosted.exchanges, hosted.bindings
        )
        for route in reached:
            entry = _entry(table, vhost, route.queue)
            entry.add(Found.BINDING, f"routed {route.describe()} with key {contract.transport.routing_key}")
            if vhost == home and route.queue == tap_queue_name(contract.message_type):
                entry.add(Found.PLATFORM, "the platform bridge's tap queue (republishes the version as its successor)")
            entry.certain = entry.certain and (route.match is Match.YES or Found.PLATFORM in entry.found)
    return table


def _dlx_reason(source: str, route: Route) -> str:
    return f"dead letters of {source} go {route.describe()}"


def _policy_reason(policy: Any, route: Route) -> str:
    return f"{policy.kind} {policy.name} (pattern {policy.pattern}) dead-letters {route.describe()}"


def _dead_letter_routes(hosted: VhostTopology) -> Iterable[tuple[Found, Callable[[], str], Route]]:
    """(how, why, route) for every queue the broker dead-letters into, in one virtual host."""
    anything = HeaderModel()
    by_source = index_bindings(hosted.bindings)
    routed: dict[tuple[str, str | None], list[Route]] = {}  # many queues share one DLX: route each once

    def routes(exchange: Any, key: Any) -> list[Route]:
        target = (str(exchange), str(key) if key else None)
        if target not in routed:
            routed[target] = route_message(target[0], target[1] or ANY_KEY, anything, hosted.exchanges, by_source)
        return routed[target]

    for queue in hosted.queues.values():
        exchange = queue.setting("x-dead-letter-exchange", "dead-letter-exchange")
        if exchange is None:
            continue
        key = queue.setting("x-dead-letter-routing-key", "dead-letter-routing-key")
        by_policy = queue.arguments.get("x-dead-letter-exchange") is None
        delayed = queue.setting("x-message-ttl", "message-ttl") is not None
        if exchange == "" and delayed:
            continue  # a delayed-retry queue handing messages back to a work queue
        source = f"{'the policy on ' if by_policy else ''}{queue.name}"
        for route in routes(exchange, key):
            yield (
                Found.POLICY if by_policy else Found.DLX,
                partial(_dlx_reason, source, route),
                route,
            )
    for policy in hosted.policies:
        exchange = policy.definition.get("dead-letter-exchange")
        if exchange is None or policy.apply_to == "exchanges":
            continue
        for route in routes(exchange, policy.definition.get("dead-letter-routing-key")):
            yield (
                Found.POLICY,
                partial(_policy_reason, policy, route),
                route,
            )


def _dead_letter_queues(
    plan: TopologyPlan, topology: BrokerTopology, home: str, suffixes: tuple[str, ...]
) -> dict[Any, Considered]:
    table: dict[tuple[str, str], Considered] = {}
    for queue in plan.queues_of(Role.DLQ, Role.PARKING_LOT):
        entry = _entry(table, home, queue.name)
        entry.role = queue.role
        entry.add(Found.PLATFORM, f"{queue.role} of {queue.serves or 'the version'} in the catalogue")
    lowered = tuple(suffix.lower() for suffix in suffixes)
    for vhost, hosted in topology.vhosts.items():
        for how, why, route in _dead_letter_routes(hosted):
            if route.queue in hosted.queues:
                _entry(table, vhost, route.queue).add(how, why)
        for name in hosted.queues:
            matched = next((s for s in lowered if name.lower().endswith(s)), None)
            if matched is not None:
                _entry(table, vhost, name).add(Found.NAME, f"name ends in {matched}")
    return table


def discover_queues(
    contract: Contract,
    plan: TopologyPlan,
    topology: BrokerTopology,
    *,
    home_vhost: str,
    suffixes: tuple[str, ...] = DEFAULT_DEAD_LETTER_SUFFIXES,
    scope: str = "",
) -> Discovery:
    """Every queue that receives the version and every dead-letter queue, in the watched virtual hosts.

    ``scope`` (a name prefix) limits the dead-letter queues, as before; the receivers are not limited:
    whatever the version reaches is its business.
    """
    archives = {q.name for q in plan.queues_of(Role.ARCHIVE)}
    receivers = _receivers(contract, plan, topology, home_vhost)
    excluded = sorted(name for (vhost, name) in receivers if vhost == home_vhost and name in archives)
    for name in excluded:
        del receivers[(home_vhost, name)]
    dead = _dead_letter_queues(plan, topology, home_vhost, suffixes)
    dead = {key: entry for key, entry in dead.items() if entry.queue.startswith(scope)}
    for table in (receivers, dead):
        for (vhost, name), entry in table.items():
            hosted = topology.vhosts.get(vhost)
            entry.readers = hosted.consumers.get(name, ()) if hosted is not None else ()
    order = _order(home_vhost)
    return Discovery(
        tuple(sorted(receivers.values(), key=order)),
        tuple(sorted(dead.values(), key=order)),
        tuple(topology.vhosts),
        tuple(excluded),
    )


def _order(home: str) -> Any:
    def key(entry: Considered) -> tuple[bool, str, bool, str]:
        return (entry.vhost != home, entry.vhost, Found.PLATFORM not in entry.found, entry.queue)

    return key

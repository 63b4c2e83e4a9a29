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
        attributed         the dead-letter queues that belong to the version (``attributed_queues``): its own
                           DLQs and parking lots; every queue a message of the version reaches when one of its
                           receivers dead-letters it (the receiver's ``x-dead-letter-exchange``, or its
                           effective policy's, with the dead-letter routing key, else the version's routing
                           key; followed on from there, each queue once); what the version's exchange's
                           ``<exchange>.dlx`` routes its routing key to; and a DLQ by name whose stem is one of
                           its receivers (``<queue>_error``) or whose name holds its messageType.
                           Replay's in-flight reading (``replay.inflight``) reads these and only these; the
                           retirement audit judges their readers and lists them, and reads every other DLQ
                           once per run for messages of any type (``retirement.snapshot``)

    dead_letter_index(topology, suffixes) -> DeadLetterIndex
        the broker-wide part (every DLQ and how it was found, the bindings indexed per virtual host):
        the same for every version, so a run that audits many versions builds it once and passes it on

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
    BindingInfo,
    HeaderModel,
    Match,
    Route,
    index_bindings,
    route_message,
)
from contract_platform.amqp.topology import Role, TopologyPlan, dlx_name, tap_queue_name
from contract_platform.archive_record import TYPE_HEADERS
from contract_platform.catalog.model import Contract

__all__ = [
    "DEFAULT_DEAD_LETTER_SUFFIXES",
    "Considered",
    "DeadLetterIndex",
    "Discovery",
    "Found",
    "dead_letter_index",
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
    attributed: tuple[Considered, ...] = ()  # the dead-letter queues that belong to the version (module docstring)

    def is_attributed(self, vhost: str, queue: str) -> bool:
        return any(entry.vhost == vhost and entry.queue == queue for entry in self.attributed)


@dataclass(frozen=True)
class DeadLetterIndex:
    """The broker-wide dead-letter queues of one topology, and its bindings indexed per virtual host.

    It depends on the topology and the naming net only, never on a version: build it once per topology
    (``dead_letter_index``) and pass it to every ``discover_queues`` of that topology."""

    entries: dict[tuple[str, str], Considered]  # (vhost, queue) -> how it was found; never a platform role
    bindings: dict[str, dict[str, list[BindingInfo]]]  # vhost -> bindings by source exchange
    suffixes: tuple[str, ...]
    by_stem: dict[tuple[str, str], list[tuple[str, str]]]  # (vhost, lowered name less its suffix) -> DLQs
    named: list[tuple[str, tuple[str, str]]] = field(default_factory=list)  # (lowered name, key) of NAME entries
    _ordered: dict[str, tuple[Considered, ...]] = field(default_factory=dict)

    def ordered(self, home: str) -> tuple[Considered, ...]:
        """Every entry in the report's order for a connection in ``home`` (computed once per home)."""
        if home not in self._ordered:
            order = _order(home)
            self._ordered[home] = tuple(sorted(self.entries.values(), key=order))
        return self._ordered[home]


class _DeadView:
    """A version's dead-letter table without copying the broker-wide one: its own entries over the shared ones."""

    def __init__(self, own: dict[tuple[str, str], Considered], index: DeadLetterIndex, scope: str) -> None:
        self.own = {key: entry for key, entry in own.items() if entry.queue.startswith(scope)}
        self.index = index
        self.scope = scope

    def get(self, key: tuple[str, str]) -> Considered | None:
        entry = self.own.get(key) or self.index.entries.get(key)
        return entry if entry is not None and entry.queue.startswith(self.scope) else None

    def __contains__(self, key: tuple[str, str]) -> bool:
        return self.get(key) is not None

    def __getitem__(self, key: tuple[str, str]) -> Considered:
        entry = self.get(key)
        if entry is None:
            raise KeyError(key)
        return entry

    def ordered(self, home: str) -> list[Considered]:
        first = sorted(self.own.values(), key=_order(home))
        rest = [
            e
            for e in self.index.ordered(home)
            if (e.vhost, e.queue) not in self.own and (not self.scope or e.queue.startswith(self.scope))
        ]
        return first + rest


def headers_of(contract: Contract) -> HeaderModel:
    """What a message of ``contract`` may carry: the platform's headers, and the type headers other producers set."""
    known: dict[str, Any] = {name: contract.message_type for name in TYPE_HEADERS}
    known |= {"schema-version": contract.major, "producer": contract.owner.service}
    return HeaderModel(known, frozenset({"message-version", "tenant-id", "trace-id"}), closed=False)


def _entry(table: dict[tuple[str, str], Considered], vhost: str, queue: str) -> Considered:
    return table.setdefault((vhost, queue), Considered(vhost, queue))


def _receivers(
    contract: Contract, plan: TopologyPlan, topology: BrokerTopology, home: str, index: DeadLetterIndex
) -> dict[Any, Considered]:
    table: dict[tuple[str, str], Considered] = {}
    for queue in plan.queues_of(Role.CONSUMER, Role.RETRY, Role.DLQ, Role.PARKING_LOT):
        entry = _entry(table, home, queue.name)
        entry.role = queue.role
        entry.add(Found.PLATFORM, f"{queue.role} queue of {contract.message_type} in the catalogue")
    headers = headers_of(contract)
    for vhost, hosted in topology.vhosts.items():
        by_source = index.bindings.get(vhost)
        reached = route_message(
            contract.transport.exchange,
            contract.transport.routing_key,
            headers,
            hosted.exchanges,
            by_source if by_source is not None else hosted.bindings,
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


def _dead_letter_routes(
    hosted: VhostTopology, by_source: dict[str, list[BindingInfo]]
) -> Iterable[tuple[Found, Callable[[], str], Route]]:
    """(how, why, route) for every queue the broker dead-letters into, in one virtual host."""
    anything = HeaderModel()
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


def dead_letter_index(
    topology: BrokerTopology, suffixes: tuple[str, ...] = DEFAULT_DEAD_LETTER_SUFFIXES
) -> DeadLetterIndex:
    """Every queue the broker dead-letters into, and every queue named like a DLQ, in every virtual host."""
    table: dict[tuple[str, str], Considered] = {}
    by_stem: dict[tuple[str, str], list[tuple[str, str]]] = {}
    indexed: dict[str, dict[str, list[BindingInfo]]] = {}
    lowered = tuple(suffix.lower() for suffix in suffixes)
    for vhost, hosted in topology.vhosts.items():
        indexed[vhost] = index_bindings(hosted.bindings)
        for how, why, route in _dead_letter_routes(hosted, indexed[vhost]):
            if route.queue in hosted.queues:
                _entry(table, vhost, route.queue).add(how, why)
        for name in hosted.queues:
            low = name.lower()
            matched = next((s for s in lowered if low.endswith(s)), None)
            if matched is not None:
                _entry(table, vhost, name).add(Found.NAME, f"name ends in {matched}")
                by_stem.setdefault((vhost, low[: len(low) - len(matched)]), []).append((vhost, name))
    for (vhost, name), entry in table.items():
        entry.readers = topology.vhosts[vhost].consumers.get(name, ())
    named = [(e.queue.lower(), key) for key, e in table.items() if Found.NAME in e.found]
    return DeadLetterIndex(table, indexed, tuple(suffixes), by_stem, named)


def _own_dead_letters(plan: TopologyPlan, index: DeadLetterIndex, home: str) -> dict[tuple[str, str], Considered]:
    """The version's own DLQs and parking lots: fresh entries with how the broker-wide index found them too."""
    table: dict[tuple[str, str], Considered] = {}
    for queue in plan.queues_of(Role.DLQ, Role.PARKING_LOT):
        entry = _entry(table, home, queue.name)
        entry.role = queue.role
        entry.add(Found.PLATFORM, f"{queue.role} of {queue.serves or 'the version'} in the catalogue")
        shared = index.entries.get((home, queue.name))
        if shared is not None:
            entry.found += [f for f in shared.found if f not in entry.found]
            entry.why += [w for w in shared.why if w not in entry.why]
            entry.more = shared.more
    return table


def _attributed(
    contract: Contract,
    topology: BrokerTopology,
    receivers: dict[Any, Considered],
    dead: _DeadView,
    index: DeadLetterIndex,
) -> list[Considered]:
    """The dead-letter queues of ``dead`` that belong to the version (the rule: module docstring)."""
    found: dict[tuple[str, str], Considered] = dict(dead.own)
    headers = headers_of(contract)
    key_of_version = contract.transport.routing_key
    pending: list[tuple[str, str]] = [*receivers, *found]
    seen: set[tuple[str, str]] = set()

    def reach(vhost: str, exchange: str, key: str) -> None:
        hosted = topology.vhosts.get(vhost)
        if hosted is None:
            return
        for route in route_message(exchange, key, headers, hosted.exchanges, index.bindings.get(vhost, {})):
            target = (vhost, route.queue)
            if target in dead and target not in found:
                found[target] = dead[target]
                pending.append(target)

    while pending:
        vhost, queue = pending.pop()
        if (vhost, queue) in seen:
            continue
        seen.add((vhost, queue))
        hosted = topology.vhosts.get(vhost)
        info = hosted.queues.get(queue) if hosted is not None else None
        if info is None:
            continue
        exchange = info.setting("x-dead-letter-exchange", "dead-letter-exchange")
        if exchange is None or (exchange == "" and info.setting("x-message-ttl", "message-ttl") is not None):
            continue  # no dead-lettering, or a delayed retry handing messages back to work
        key = info.setting("x-dead-letter-routing-key", "dead-letter-routing-key")
        reach(vhost, str(exchange), str(key) if key else key_of_version)
    for vhost in topology.vhosts:
        reach(vhost, dlx_name(contract.transport.exchange), key_of_version)
    type_name = contract.message_type.lower()
    for vhost, queue in receivers:
        for key in index.by_stem.get((vhost, queue.lower()), ()):
            if key in dead:
                found.setdefault(key, dead[key])
    for lowered, key in index.named:
        if type_name in lowered and key not in found and key in dead:
            found[key] = dead[key]
    return list(found.values())


def discover_queues(
    contract: Contract,
    plan: TopologyPlan,
    topology: BrokerTopology,
    *,
    home_vhost: str,
    suffixes: tuple[str, ...] = DEFAULT_DEAD_LETTER_SUFFIXES,
    scope: str = "",
    index: DeadLetterIndex | None = None,
) -> Discovery:
    """Every queue that receives the version and every dead-letter queue, in the watched virtual hosts.

    ``scope`` (a name prefix) limits the dead-letter queues, as before; the receivers are not limited:
    whatever the version reaches is its business. ``index``: ``dead_letter_index(topology, suffixes)``
    when the caller discovers many versions in one topology (built here otherwise).
    """
    if index is None or index.suffixes != tuple(suffixes):
        index = dead_letter_index(topology, tuple(suffixes))
    archives = {q.name for q in plan.queues_of(Role.ARCHIVE)}
    receivers = _receivers(contract, plan, topology, home_vhost, index)
    excluded = sorted(name for (vhost, name) in receivers if vhost == home_vhost and name in archives)
    for name in excluded:
        del receivers[(home_vhost, name)]
    dead = _DeadView(_own_dead_letters(plan, index, home_vhost), index, scope)
    attributed = _attributed(contract, topology, receivers, dead, index)
    for table in (receivers, dead.own):
        for (vhost, name), entry in table.items():
            hosted = topology.vhosts.get(vhost)
            entry.readers = hosted.consumers.get(name, ()) if hosted is not None else ()
    order = _order(home_vhost)
    return Discovery(
        tuple(sorted(receivers.values(), key=order)),
        tuple(dead.ordered(home_vhost)),
        tuple(topology.vhosts),
        tuple(excluded),
        tuple(sorted(attributed, key=order)),
    )


def _order(home: str) -> Any:
    def key(entry: Considered) -> tuple[bool, str, bool, str]:
        return (entry.vhost != home, entry.vhost, Found.PLATFORM not in entry.found, entry.queue)

    return key

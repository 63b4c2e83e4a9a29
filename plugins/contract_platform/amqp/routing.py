"""Where the broker routes a message: bindings matched as RabbitMQ matches them (pure, no I/O).

The rules, from the AMQP 0-9-1 model and RabbitMQ's exchange documentation (see ``docs/retirement-audit.md``):

- ``direct``: a binding matches when its key equals the routing key.
- ``fanout``: every binding matches; the routing key is ignored.
- ``topic``: keys and patterns are words separated by dots; ``*`` stands for exactly one word and
  ``#`` for zero or more words (``a.#`` matches ``a``; ``#`` matches everything, the empty key too).
- ``headers``: the routing key is ignored; the binding's ``x-match`` argument decides: ``all``
  (default: every other argument must match a header), ``any`` (at least one must), and
  ``all-with-x`` / ``any-with-x`` (the same, counting ``x-`` arguments too). A binding argument matches
  when the message has that header with an equal value (a void argument: when the header is there).
  ``all`` with no argument matches every message; ``any`` with none matches nothing.
- the default exchange (``""``) delivers to the queue named by the routing key.
- an exchange bound to another exchange forwards what its binding matched, and the destination matches
  again with the same routing key and headers; cycles are delivered once (each exchange visited once).
- an exchange's ``alternate-exchange`` receives a message its own bindings did not match at all.
- other exchange types (plugins: ``x-consistent-hash``, ``x-delayed-message``...) are not modelled:
  every binding counts as a possible route, so nothing they might deliver is missed.

A message's headers are rarely all known in advance (a trace id differs per message), so a headers
binding is judged three-valued: ``YES``, ``NO`` or ``MAYBE``; a ``MAYBE`` route is reported as such and
counts as receiving (a retirement must not rest on a guess).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = [
    "ANY_KEY",
    "BindingInfo",
    "ExchangeInfo",
    "HeaderModel",
    "Match",
    "Route",
    "binding_matches",
    "headers_match",
    "index_bindings",
    "route_message",
    "topic_matches",
]

DEFAULT_EXCHANGE = ""
MODELLED_TYPES = ("direct", "fanout", "topic", "headers")


class _AnyKey(str):
    """A routing key not known in advance (a dead letter keeps its original key): every binding may match."""

    __slots__ = ()


ANY_KEY = _AnyKey("<any routing key>")


class Match(Enum):
    NO = 0
    MAYBE = 1
    YES = 2

    def __and__(self, other: Match) -> Match:
        return self if self.value <= other.value else other

    def __or__(self, other: Match) -> Match:
        return self if self.value >= other.value else other


@dataclass(frozen=True)
class ExchangeInfo:
    name: str
    type: str = "topic"
    alternate: str | None = None  # alternate-exchange, from its arguments or its policy


@dataclass(frozen=True)
class BindingInfo:
    source: str
    destination: str
    destination_type: str  # "queue" or "exchange"
    routing_key: str = ""
    arguments: Mapping[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class HeaderModel:
    """What is known of a message's headers: ``known`` values, and ``varying`` names present with unknown values.

    ``closed``: no header outside ``known`` and ``varying`` is present (the platform's own publisher);
    open (the default) means a foreign producer may add others, so a condition on them is ``MAYBE``.
    """

    known: Mapping[str, Any] = field(default_factory=dict)
    varying: frozenset[str] = frozenset()
    closed: bool = False

    def has(self, name: str) -> Match:
        if name in self.known or name in self.varying:
            return Match.YES
        return Match.NO if self.closed else Match.MAYBE

    def equals(self, name: str, value: Any) -> Match:
        if name in self.known:
            return Match.YES if _same(self.known[name], value) else Match.NO
        if name in self.varying:
            return Match.MAYBE
        return Match.NO if self.closed else Match.MAYBE


def _same(header: Any, argument: Any) -> bool:
    """Header and binding values compare as the broker compares AMQP table values (text is text, bytes or str)."""
    if isinstance(header, bytes):
        header = header.decode("utf-8", "replace")
    if isinstance(argument, bytes):
        argument = argument.decode("utf-8", "replace")
    if isinstance(header, bool) or isinstance(argument, bool):
        return header is argument
    return bool(header == argument)


def topic_matches(pattern: str, key: str) -> bool:
    """Whether a topic binding ``pattern`` matches routing ``key`` (``*`` one word, ``#`` zero or more)."""
    return _topic(_words(pattern), _words(key))


def _words(text: str) -> list[str]:
    """RabbitMQ splits on dots; the empty key is zero words (only ``#`` or an empty pattern matches it)."""
    return text.split(".") if text else []


def _topic(pattern: Sequence[str], words: Sequence[str]) -> bool:
    # The set of pattern positions reachable after each word (an NFA walk): '#' may absorb any number of words.
    states = {0}
    for word in words:
        states = _closure(pattern, states)
        following = set()
        for at in states:
            if at < len(pattern) and pattern[at] == "#":
                following.add(at)  # '#' absorbs this word and may absorb more
            if at < len(pattern) and pattern[at] in ("*", word):
                following.add(at + 1)
        states = following
        if not states:
            return False
    return len(pattern) in _closure(pattern, states)


def _closure(pattern: Sequence[str], states: set[int]) -> set[int]:
    """Positions reachable by letting each ``#`` match zero words."""
    result = set(states)
    pending = list(states)
    while pending:
        at = pending.pop()
        if at < len(pattern) and pattern[at] == "#" and at + 1 not in result:
            result.add(at + 1)
            pending.append(at + 1)
    return result


def headers_match(arguments: Mapping[str, Any], headers: HeaderModel) -> Match:
    """A headers-exchange binding against a message's headers, three-valued."""
    mode = arguments.get("x-match", "all")
    if isinstance(mode, bytes):
        mode = mode.decode()
    with_x = mode in ("all-with-x", "any-with-x")
    conditions = [
        headers.has(name) if value is None else headers.equals(name, value)
        for name, value in arguments.items()
        if name != "x-match" and (with_x or not name.startswith("x-"))
    ]
    if mode in ("any", "any-with-x"):
        result = Match.NO
        for condition in conditions:
            result = result | condition
        return result
    result = Match.YES
    for condition in conditions:
        result = result & condition
    return result


def binding_matches(exchange_type: str, binding: BindingInfo, routing_key: str, headers: HeaderModel) -> Match:
    """Whether ``binding`` (on an exchange of ``exchange_type``) matches the message."""
    if exchange_type == "fanout":
        return Match.YES
    if exchange_type == "headers":
        return headers_match(binding.arguments, headers)
    if exchange_type not in MODELLED_TYPES:
        return Match.MAYBE
    if isinstance(routing_key, _AnyKey):
        return Match.MAYBE
    if exchange_type == "direct":
        return Match.YES if binding.routing_key == routing_key else Match.NO
    return Match.YES if topic_matches(binding.routing_key, routing_key) else Match.NO


@dataclass(frozen=True)
class Route:
    """A queue the message reaches, the exchanges it went through, and whether that is certain."""

    queue: str
    path: tuple[str, ...]
    match: Match
    via_alternate: bool = False

    def describe(self) -> str:
        hops = " -> ".join(name or "(default exchange)" for name in self.path)
        sure = "" if self.match is Match.YES else " (may match: header values not known in advance)"
        alternate = " via an alternate exchange" if self.via_alternate else ""
        return f"{hops} -> {self.queue}{alternate}{sure}"


def index_bindings(bindings: Iterable[BindingInfo]) -> dict[str, list[BindingInfo]]:
    """Bindings by source exchange: build once, route many messages (a broker may hold thousands)."""
    by_source: dict[str, list[BindingInfo]] = {}
    for binding in bindings:
        by_source.setdefault(binding.source, []).append(binding)
    return by_source


def route_message(
    exchange: str,
    routing_key: str,
    headers: HeaderModel,
    exchanges: Mapping[str, ExchangeInfo],
    bindings: Iterable[BindingInfo] | Mapping[str, Sequence[BindingInfo]],
) -> list[Route]:
    """Every queue a message published to ``exchange`` reaches, with how; unknown exchanges route nowhere.

    ``bindings``: the bindings, or ``index_bindings`` of them.
    """
    by_source = bindings if isinstance(bindings, Mapping) else index_bindings(bindings)
    found: dict[str, Route] = {}
    visited: dict[str, Match] = {}  # the best certainty each exchange was reached with (cycles end here)
    # (exchange, path so far, certainty so far, reached through an alternate exchange)
    pending: list[tuple[str, tuple[str, ...], Match, bool]] = [(exchange, (), Match.YES, False)]
    while pending:
        name, path, certainty, alternate = pending.pop(0)
        if name in visited and visited[name].value >= certainty.value:
            continue
        visited[name] = certainty
        here = (*path, name)
        if name == DEFAULT_EXCHANGE:
            if not isinstance(routing_key, _AnyKey) and routing_key:
                _keep(found, Route(routing_key, here, certainty, alternate))
            continue
        info = exchanges.get(name)
        if info is None:
            continue
        matched = Match.NO  # whether any binding matched: the alternate exchange gets what none did
        for binding in by_source.get(name, []):
            match = binding_matches(info.type, binding, routing_key, headers)
            if match is Match.NO:
                continue
            matched = matched | match
            reach = certainty & match
            if binding.destination_type == "queue":
                _keep(found, Route(binding.destination, here, reach, alternate))
            else:
                pending.append((binding.destination, here, reach, alternate))
        if matched is not Match.YES and info.alternate:
            unmatched = Match.YES if matched is Match.NO else Match.MAYBE
            pending.append((info.alternate, here, certainty & unmatched, True))
    return sorted(found.values(), key=lambda route: route.queue)


def _keep(found: dict[str, Route], route: Route) -> None:
    """One route per queue: a certain one over a possible one, else the shortest."""
    known = found.get(route.queue)
    if known is None or (route.match.value, -len(route.path)) > (known.match.value, -len(known.path)):
        found[route.queue] = route

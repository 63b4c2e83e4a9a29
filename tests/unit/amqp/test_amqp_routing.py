"""The routing matcher, case by case from the AMQP 0-9-1 model and RabbitMQ's exchange documentation."""

from __future__ import annotations

import pytest

from contract_platform.amqp.routing import (
    ANY_KEY,
    BindingInfo,
    ExchangeInfo,
    HeaderModel,
    Match,
    binding_matches,
    headers_match,
    route_message,
    topic_matches,
)

KEY = "billing.invoice.issued.v1"


@pytest.mark.parametrize(
    ("pattern", "key", "expected"),
    [
        ("billing.invoice.issued.v1", KEY, True),
        ("billing.invoice.issued.v2", KEY, False),
        ("billing.*.issued.v1", KEY, True),
        ("billing.*.v1", KEY, False),  # '*' is exactly one word
        ("*.*.*.*", KEY, True),
        ("*.*.*", KEY, False),
        ("billing.#", KEY, True),
        ("#.v1", KEY, True),
        ("#", KEY, True),
        ("#", "", True),  # '#' matches the empty key (zero words)
        ("*", "", False),
        ("billing.#", "billing", True),  # '#' may be zero words
        ("billing.#.v1", "billing.v1", True),
        ("billing.#.v1", "billing.invoice.issued.v1", True),
        ("billing.#.v1", "billing.invoice.issued.v2", False),
        ("#.issued.#", KEY, True),
        ("#.#", KEY, True),
        ("*.#.*", "a", False),  # two '*' need at least two words
        ("*.#.*", "a.b", True),
        ("billing.invoice", KEY, False),  # a prefix is not a match
        ("billing.invoice.issued.v1.extra", KEY, False),
        ("billing..v1", "billing..v1", True),  # empty words are words
        ("billing.*.v1", "billing..v1", True),
        ("", "", True),
        ("", KEY, False),
    ],
)
def test_topic_patterns(pattern: str, key: str, expected: bool) -> None:
    assert topic_matches(pattern, key) is expected


def binding(key: str = "", arguments: dict[str, object] | None = None, destination: str = "q") -> BindingInfo:
    return BindingInfo("x", destination, "queue", key, arguments or {})


TYPED = HeaderModel({"message-type": "billing.invoice-issued.v1", "schema-version": 1}, frozenset({"trace-id"}))
CLOSED = HeaderModel({"message-type": "billing.invoice-issued.v1"}, frozenset({"trace-id"}), closed=True)


def test_direct_is_exact_and_fanout_ignores_the_key() -> None:
    assert binding_matches("direct", binding(KEY), KEY, TYPED) is Match.YES
    assert binding_matches("direct", binding("billing.#"), KEY, TYPED) is Match.NO  # no wildcards on direct
    assert binding_matches("fanout", binding("anything"), KEY, TYPED) is Match.YES


def test_an_unknown_routing_key_may_match_any_keyed_binding() -> None:
    assert binding_matches("direct", binding("x"), ANY_KEY, TYPED) is Match.MAYBE
    assert binding_matches("fanout", binding("x"), ANY_KEY, TYPED) is Match.YES


def test_unmodelled_exchange_types_count_every_binding_as_possible() -> None:
    assert binding_matches("x-consistent-hash", binding("10"), KEY, TYPED) is Match.MAYBE


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"x-match": "all", "message-type": "billing.invoice-issued.v1"}, Match.YES),
        ({"x-match": "all", "message-type": b"billing.invoice-issued.v1"}, Match.YES),  # longstr arrives as bytes
        ({"x-match": "all", "message-type": "billing.invoice-issued.v2"}, Match.NO),
        ({"message-type": "billing.invoice-issued.v1", "schema-version": 2}, Match.NO),  # all is the default
        ({"x-match": "any", "message-type": "billing.invoice-issued.v2", "schema-version": 1}, Match.YES),
        ({"x-match": "any", "message-type": "billing.invoice-issued.v2", "schema-version": 2}, Match.NO),
        ({"x-match": "all"}, Match.YES),  # no condition: everything
        ({"x-match": "any"}, Match.NO),  # no condition: nothing
        ({"x-match": "all", "message-type": "billing.invoice-issued.v1", "trace-id": "t-1"}, Match.MAYBE),
        ({"x-match": "all", "region": "eu"}, Match.MAYBE),  # a foreign producer may set it
        ({"x-match": "all", "message-type": "billing.invoice-issued.v1", "x-origin": "a"}, Match.YES),  # x- ignored
        ({"x-match": "all-with-x", "message-type": "billing.invoice-issued.v1", "x-origin": "a"}, Match.MAYBE),
        ({"x-match": "any", "message-type": "other", "x-origin": "a"}, Match.NO),
        ({"x-match": "any-with-x", "message-type": "other", "x-origin": "a"}, Match.MAYBE),
        ({"x-match": "all", "schema-version": None}, Match.YES),  # void value: the header is present
        ({"x-match": "all", "schema-version": True}, Match.NO),  # bool is not the integer 1
    ],
)
def test_headers_binding(arguments: dict[str, object], expected: Match) -> None:
    assert headers_match(arguments, TYPED) is expected
    assert binding_matches("headers", binding("ignored", arguments), KEY, TYPED) is expected


def test_closed_headers_rule_out_absent_ones() -> None:
    assert headers_match({"x-match": "all", "region": "eu"}, CLOSED) is Match.NO
    assert headers_match({"x-match": "any", "region": "eu", "trace-id": "t"}, CLOSED) is Match.MAYBE


EXCHANGES = {
    "events": ExchangeInfo("events", "topic", alternate="events.unrouted"),
    "events.unrouted": ExchangeInfo("events.unrouted", "fanout"),
    "fan": ExchangeInfo("fan", "fanout"),
    "by-type": ExchangeInfo("by-type", "headers"),
    "by-region": ExchangeInfo("by-region", "headers", alternate="events.unrouted"),
    "loop-a": ExchangeInfo("loop-a", "fanout"),
    "loop-b": ExchangeInfo("loop-b", "fanout"),
}


def e2e(source: str, destination: str, key: str = "", arguments: dict[str, object] | None = None) -> BindingInfo:
    return BindingInfo(source, destination, "exchange", key, arguments or {})


def q(source: str, queue: str, key: str = "", arguments: dict[str, object] | None = None) -> BindingInfo:
    return BindingInfo(source, queue, "queue", key, arguments or {})


def queues(routes: list) -> dict[str, Match]:  # type: ignore[type-arg]
    return {route.queue: route.match for route in routes}


def test_routes_follow_exchange_to_exchange_bindings_transitively_and_survive_cycles() -> None:
    bindings = [
        q("events", "svc.in", "billing.#"),
        q("events", "other.in", "shipping.#"),
        e2e("events", "fan", "*.invoice.*.v1"),
        q("fan", "audit.in"),
        e2e("fan", "loop-a"),
        e2e("loop-a", "loop-b"),
        e2e("loop-b", "loop-a"),  # a cycle: delivered once, no endless walk
        q("loop-b", "deep.in"),
        e2e("events", "by-type", "#"),
        q("by-type", "typed.in", arguments={"x-match": "all", "message-type": "billing.invoice-issued.v1"}),
        q("by-type", "v2.in", arguments={"x-match": "all", "message-type": "billing.invoice-issued.v2"}),
        q("events.unrouted", "lost.in"),
    ]
    routes = route_message("events", KEY, TYPED, EXCHANGES, bindings)
    assert queues(routes) == {
        "svc.in": Match.YES,
        "audit.in": Match.YES,
        "deep.in": Match.YES,
        "typed.in": Match.YES,
    }
    deep = next(route for route in routes if route.queue == "deep.in")
    assert deep.path == ("events", "fan", "loop-a", "loop-b")


def test_the_alternate_exchange_receives_what_no_binding_matched() -> None:
    bindings = [q("events", "other.in", "shipping.#"), q("events.unrouted", "lost.in")]
    routes = route_message("events", KEY, TYPED, EXCHANGES, bindings)
    assert queues(routes) == {"lost.in": Match.YES}
    assert routes[0].via_alternate
    # ... and nothing when a binding matched
    matched = route_message("events", KEY, TYPED, EXCHANGES, [*bindings, q("events", "svc.in", KEY)])
    assert queues(matched) == {"svc.in": Match.YES}


def test_a_binding_that_may_match_leaves_the_alternate_exchange_possible() -> None:
    bindings = [
        e2e("events", "by-region", "#"),
        q("by-region", "eu.in", arguments={"x-match": "all", "region": "eu"}),
        q("events.unrouted", "lost.in"),
    ]
    assert queues(route_message("events", KEY, TYPED, EXCHANGES, bindings)) == {
        "eu.in": Match.MAYBE,
        "lost.in": Match.MAYBE,
    }


def test_an_exchange_to_exchange_match_counts_as_routed_for_the_alternate_exchange() -> None:
    bindings = [e2e("events", "by-type", "#"), q("events.unrouted", "lost.in")]  # by-type delivers nowhere
    assert route_message("events", KEY, TYPED, EXCHANGES, bindings) == []


def test_the_default_exchange_delivers_to_the_queue_named_by_the_key() -> None:
    assert queues(route_message("", "svc.in", TYPED, EXCHANGES, [])) == {"svc.in": Match.YES}
    assert route_message("", ANY_KEY, TYPED, EXCHANGES, []) == []


def test_an_exchange_that_does_not_exist_routes_nowhere() -> None:
    assert route_message("missing", KEY, TYPED, EXCHANGES, [q("missing", "svc.in", "#")]) == []


def test_a_certain_route_wins_over_a_possible_one_to_the_same_queue() -> None:
    bindings = [
        e2e("events", "by-type", "#"),
        q("by-type", "svc.in", arguments={"x-match": "all", "region": "eu"}),
        e2e("events", "fan", "#"),
        q("fan", "svc.in"),
    ]
    assert queues(route_message("events", KEY, TYPED, EXCHANGES, bindings)) == {"svc.in": Match.YES}

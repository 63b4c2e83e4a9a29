"""RabbitMQ's event exchange, read defensively (headers as the rabbitmq_event_exchange plugin documents them)."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from contract_platform.activity.events import MAX_NAME, ROUTING_KEYS, parse_event

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
MS = 1795608000123  # 2026-11-25T12:00:00.123Z


def props(**headers: object) -> SimpleNamespace:
    return SimpleNamespace(headers=headers, timestamp=None)


def test_a_consumer_event_keeps_its_identity_and_the_brokers_moment() -> None:
    event = parse_event(
        "consumer.created",
        props(
            queue=b"q1",
            vhost=b"billing",
            consumer_tag=b"ctag1.x",
            channel=b"<rabbit@n.1.2.3>",
            timestamp_in_ms=MS,
            user_who_performed_action=b"ledger",
        ),
        NOW,
    )
    assert event is not None and event.kind == "consumer.created" and event.vhost == "billing"
    assert (event.get("queue"), event.get("consumer_tag"), event.get("channel"), event.get("user")) == (
        "q1",
        "ctag1.x",
        "<rabbit@n.1.2.3>",
        "ledger",
    )
    assert event.at == datetime(2026, 11, 25, 12, 0, 0, 123000, tzinfo=UTC)


def test_a_connection_event_gives_the_client_name_and_a_readable_peer() -> None:
    client_properties = [
        b'{<<"product">>,longstr,<<"Pika Python Client Library">>}',
        b'{<<"connection_name">>,longstr,<<"nightly-ledger-batch">>}',
    ]
    event = parse_event(
        "connection.created",
        props(
            pid=b"<rabbit@n.1.9.0>",
            name=b"10.0.0.7:51000 -> 10.0.0.1:5672",
            client_properties=client_properties,
            peer_host=b"{10,0,0,7}",
            user=b"ledger",
        ),
        NOW,
    )
    assert event is not None
    assert (event.get("client_name"), event.get("peer_host"), event.get("user")) == (
        "nightly-ledger-batch",
        "10.0.0.7",
        "ledger",
    )
    v6 = parse_event("connection.created", props(pid=b"p", peer_host=b"{0,0,0,0,0,0,0,1}"), NOW)
    assert v6 is not None and v6.get("peer_host") == "0:0:0:0:0:0:0:1"
    named = parse_event("connection.created", props(pid=b"p", user_provided_name=b"given"), NOW)
    assert named is not None and named.get("client_name") == "given"


def test_redelivery_of_the_same_event_has_the_same_key_and_another_event_another() -> None:
    headers = {"queue": b"q", "vhost": b"/", "consumer_tag": b"t", "channel": b"c", "timestamp_in_ms": MS}
    first, again = (
        parse_event("consumer.created", props(**headers), NOW),
        parse_event("consumer.created", props(**headers), NOW),
    )
    deleted = parse_event("consumer.deleted", props(**headers), NOW)
    assert first is not None and again is not None and deleted is not None
    assert first.key == again.key != deleted.key


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"queue": {"nested": "table"}, "vhost": 5, "consumer_tag": ["x"], "channel": None},
        {"queue": b"\xff\xfe" * 1000, "timestamp_in_ms": -1},
        {"queue": "q", "timestamp_in_ms": 10**30},
        {"queue": True, "timestamp_in_ms": True},
    ],
)
def test_hostile_or_missing_headers_never_crash_and_stay_bounded(headers: dict[str, object]) -> None:
    event = parse_event("consumer.deleted", props(**headers), NOW)
    assert event is not None
    assert all(value is None or len(value) <= 4096 for value in event.fields.values())
    assert event.at.tzinfo is not None


@pytest.mark.parametrize(
    "raw",
    [
        b"nul\x00 control \x01\x1b[2J\x7f",
        "bidi \u202eevil\u202c".encode(),
        b"invalid \xff\xfe and cut \xe2\x82",
        b"overlong \xc0\xaf \xe0\x80\xaf and a surrogate \xed\xa0\x80",
        b"\xff" * 255,
    ],
)
def test_names_are_kept_as_the_broker_gave_them_byte_for_byte(raw: bytes) -> None:
    consumer = parse_event("consumer.created", props(queue=raw, consumer_tag=raw, vhost=raw, channel=b"c"), NOW)
    connection = parse_event("connection.created", props(pid=b"p", user_provided_name=raw, user=raw), NOW)
    assert consumer is not None and connection is not None
    kept = [consumer.vhost, consumer.get("queue"), consumer.get("consumer_tag"), connection.get("client_name")]
    assert [value.encode("utf-8", "surrogateescape") for value in kept if value is not None] == [raw] * 4
    assert connection.get("user") == raw.decode("utf-8", "surrogateescape")


def test_a_64_kb_connection_name_is_kept_whole_and_a_longer_one_is_cut_saying_so() -> None:
    whole = "n" * MAX_NAME
    event = parse_event("connection.created", props(pid=b"p", user_provided_name=whole.encode()), NOW)
    assert event is not None and event.get("client_name") == whole
    longer = parse_event("connection.created", props(pid=b"p", user_provided_name=whole + "\u202e" * 10), NOW)
    assert longer is not None and longer.get("client_name") == whole + "... (10 more characters cut)"


def test_other_routing_keys_and_headerless_messages_are_not_events() -> None:
    assert parse_event("user.authentication.success", props(name=b"x"), NOW) is None
    assert parse_event("consumer.created", SimpleNamespace(headers=None), NOW) is None
    assert "consumer.created" in ROUTING_KEYS and "queue.deleted" in ROUTING_KEYS

"""Which queues the delivery trace may bind, and how a trace message is read (``amqp.tracing``,
``activity.trace_reader``), from AMQP 0-9-1's short strings and RabbitMQ's firehose headers."""

from __future__ import annotations

import pika
import pytest

from contract_platform.activity.trace_reader import parse_trace
from contract_platform.amqp.tracing import CANARY_HEADER, binding_key, trace_queues, untraceable


@pytest.mark.parametrize(
    "queue",
    ["billing.v1", "a" * 247, "é" * 123, "a#b.c*d", "#tag", "nul\x00inside", "\u202ebidi"],
)
def test_a_name_whose_binding_fits_a_short_string_without_wildcards_is_traced(queue: str) -> None:
    assert untraceable(queue) is None
    assert len(binding_key(queue).encode("utf-8")) <= 255


@pytest.mark.parametrize(
    ("queue", "why"),
    [
        ("a" * 248, "too long"),
        ("é" * 124, "too long"),  # 248 bytes in UTF-8
        ("billing.#", "wildcard"),
        ("*.dlq", "wildcard"),
        ("a.*.b", "wildcard"),
        ("#", "wildcard"),
    ],
)
def test_a_name_that_could_route_an_undeliverable_trace_is_never_bound(queue: str, why: str) -> None:
    reason = untraceable(queue)
    assert reason is not None and why in reason


def test_a_delivery_trace_names_the_queue_and_the_connection_as_the_broker_does() -> None:
    properties = pika.BasicProperties(
        headers={
            "exchange_name": "",
            "routing_keys": ["billing.v1"],
            "properties": {"message_id": "m1"},
            "node": "rabbit@localhost",
            "redelivered": 0,
            "vhost": "ledger",
            "connection": "127.0.0.1:58420 -> 127.0.0.1:5672",
            "channel": 1,
            "user": b"cron\xff",  # not UTF-8: kept byte for byte
        }
    )

    traced = parse_trace("deliver.billing.v1", properties, "/")

    assert traced is not None
    assert (traced.vhost, traced.queue, traced.channel, traced.canary) == ("ledger", "billing.v1", "1", None)
    assert traced.connection == "127.0.0.1:58420 -> 127.0.0.1:5672"
    assert traced.user is not None and traced.user.encode("utf-8", "surrogateescape") == b"cron\xff"


def test_a_canary_is_known_by_its_own_header_and_a_publish_trace_is_not_a_delivery() -> None:
    canary = pika.BasicProperties(headers={"properties": {"headers": {CANARY_HEADER: "nonce:2026-11-29T06:00:00"}}})
    found = parse_trace(f"deliver.{trace_queues('sqlite:///r.db')[2]}", canary, "/")
    assert found is not None and found.canary == "nonce:2026-11-29T06:00:00"
    assert parse_trace("publish.amq.default", canary, "/") is None
    assert parse_trace("deliver.q", pika.BasicProperties(headers=None), "/") is not None  # no headers: still a read

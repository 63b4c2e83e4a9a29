"""Hostile messages interleaved with good ones, through the real broker into the archiver and the bridge.

One lane's v1 exchange feeds both the bridge's tap queue and an archive queue. Deep headers, a body
nested ~990 deep, a body of 2 MiB, non-UTF-8 header keys and values, a wrong content type, bodies that
are not JSON and header values of every AMQP type go out between valid envelopes. Every message must be
accounted for: archived exactly once (the deep headers as a fallback record), and bridged to v2 or
parked with its reason, none lost, none left in a queue. Before this, the deep headers crashed the
archiver and the deep body stopped the bridge with the good messages behind them stuck.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pika
import pika.exceptions
import pytest
from tests.integration.bridge.bridge_support import Lane, read_all, ready, run_bridge, v1_envelopes

from contract_platform.amqp import archive_queue_name, basic_properties, encode_body, open_connection
from contract_platform.archiver import Archiver, ArchiverConfig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def nested_table(depth: int) -> dict[str, Any]:
    table: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        table = {"t": table}
    return table


def deep_body(envelope: dict[str, Any], depth: int) -> bytes:
    envelope = copy.deepcopy(envelope)
    envelope["metadata"]["extra"] = "DEEP"
    return encode_body(envelope).replace(b'"DEEP"', b'{"d":' * depth + b"1" + b"}" * depth)


def traffic() -> list[tuple[str, bytes, pika.BasicProperties, str]]:
    """(name, body, properties, where it must end in the bridge: "v2" or a park reason) in publishing order."""
    envelopes = iter(v1_envelopes(20))
    messages: list[tuple[str, bytes, pika.BasicProperties, str]] = []

    def good(name: str) -> None:
        envelope = next(envelopes)
        messages.append((name, encode_body(envelope), basic_properties(envelope), "v2"))

    def hostile(name: str, where: str, body: bytes | None = None, **changes: Any) -> None:
        envelope = next(envelopes)
        properties = basic_properties(envelope)
        for key, value in changes.items():
            setattr(properties, key, value)
        messages.append((name, encode_body(envelope) if body is None else body, properties, where))

    good("good-1")
    hostile("headers-300-deep", "v2", headers={"schema-version": 1, "deep": nested_table(300)})
    good("good-2")
    hostile("body-990-deep", "too-deep", body=deep_body(next(envelopes), 990))
    good("good-3")
    hostile("body-2-mib", "parked", body=b'{"metadata": {}, "payload": "' + b"x" * (2 * 1024 * 1024) + b'"}')
    hostile("non-utf8-header", "v2", headers={"schema-version": 1, b"\xff\xfekey": b"\xc3\x28\xff"})
    hostile("wrong-content-type", "v2", content_type="text/plain", content_encoding="gzip")
    hostile("not-json", "not-json", body=b"\xff\x00\x01 not json at all {")
    hostile("json-array", "parked", body=b"[1, 2, 3]")
    odd_types = {
        "schema-version": 1,
        "decimal": Decimal("12.345"),
        "when": datetime(2026, 7, 1, 10, 15, 30, tzinfo=UTC),
        "big": -(2**62),
        "flag": False,
        "list": [1, "two", [None, True]],
        "bytes": b"\x00\xff",
    }
    hostile("odd-header-types", "v2", headers=odd_types)
    good("good-4")
    return messages  # each with its envelope's messageId as message_id: the v2 copy keeps it, a parked one too


@pytest.fixture
def archive_queue(lane: Lane) -> Iterator[str]:
    """``archive.<exchange>`` bound with ``#`` on the lane's exchange, deleted afterwards."""
    queue = archive_queue_name(lane.exchange)
    connection = open_connection(lane.url)
    try:
        channel = connection.channel()
        channel.queue_declare(queue, durable=True, arguments={"x-queue-type": "quorum"})
        channel.queue_bind(queue, lane.exchange, "#")
    finally:
        connection.close()
    try:
        yield queue
    finally:
        connection = open_connection(lane.url)
        try:
            with contextlib.suppress(pika.exceptions.ChannelClosedByBroker):
                connection.channel().queue_delete(queue)
        finally:
            connection.close()


def publish_all(lane: Lane, messages: list[tuple[str, bytes, pika.BasicProperties, str]]) -> None:
    connection = open_connection(lane.url)
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        for _, body, properties, _ in messages:
            channel.basic_publish(lane.exchange, lane.source_key, body, properties, mandatory=True)
    finally:
        connection.close()


def test_every_hostile_message_is_archived_once_and_bridged_or_parked(
    lane: Lane, archive_queue: str, tmp_path: Path
) -> None:
    messages = traffic()
    ids = [properties.message_id for _, _, properties, _ in messages]
    publish_all(lane, messages)

    report = Archiver(
        lane.url, ArchiverConfig(root=tmp_path / "archive", exchanges=(lane.exchange,), idle_timeout=1.0)
    ).run()

    # The archiver: every delivery once, the deep headers as a fallback record, nothing left behind.
    records = [json.loads(line) for path in report.files for line in path.read_bytes().splitlines()]
    assert Counter(record["properties"]["messageId"] for record in records) == Counter(ids)
    assert (report.total, report.fallbacks, report.unacknowledged) == (len(messages), 1, 0)
    [fallback] = [record for record in records if "archiveError" in record]
    assert fallback["properties"]["messageId"] == ids[[name for name, *_ in messages].index("headers-300-deep")]
    assert "nest deeper than" in fallback["archiveError"] and fallback["propertiesBase64"]
    assert ready(lane.url, archive_queue) == 0

    bridged = run_bridge(lane, "--idle-timeout", "2")  # its v2 messages go to the same exchange: archived later

    # The bridge: it ran to idle (exit 1: some were parked), every message is in v2 or the parking lot once.
    assert bridged.returncode == 1, bridged.stderr
    summary = json.loads(bridged.stdout)
    assert (summary["consumed"], summary["stoppedBy"]) == (len(messages), "idle")
    published = [properties.message_id for properties, _ in read_all(lane.url, lane.v2_queue)]
    parked = {properties.message_id: properties.headers for properties, _ in read_all(lane.url, lane.parking_lot)}
    assert sorted([*published, *parked]) == sorted(ids)
    assert ready(lane.url, lane.tap) == 0
    for name, _, properties, where in messages:
        message_id = properties.message_id
        if where == "v2":
            assert message_id in published, name
        else:
            assert message_id in parked, name
            if where != "parked":
                assert parked[message_id]["x-park-reason"] == where, (name, parked[message_id])

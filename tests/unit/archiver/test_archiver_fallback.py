"""``encode_record``: a delivery whose properties cannot be written as JSON becomes a fallback record, never a crash."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

import orjson
import pika
from pika.spec import Basic

from contract_platform.archiver import ORJSON_MAX_DEPTH, encode_record
from contract_platform.limits import depth_limit

RECEIVED = datetime(2026, 7, 1, 10, 15, 32, 120999, tzinfo=UTC)
BODY = b'{"metadata": {"messageId": "m-1"}, "payload": {}}'


def deliver() -> Basic.Deliver:
    return Basic.Deliver("ctag", 7, False, "billing.events", "billing.invoice.issued.v1")


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"x": value}
    return value


def properties(headers: dict[str, Any]) -> pika.BasicProperties:
    return pika.BasicProperties(message_id="m-1", type="billing.invoice-issued.v1", delivery_mode=2, headers=headers)


def test_headers_nested_300_deep_become_a_fallback_record_with_raw_property_bytes_and_reason() -> None:
    props = properties({"schema-version": 1, "deep": nested(300)})

    line, fallback = encode_record(deliver(), props, BODY, RECEIVED)

    record = orjson.loads(line)
    assert fallback is True
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert "nest deeper than" in record["archiveError"] and "/deep/x/x" in record["archiveError"]
    assert record["properties"]["messageId"] == "m-1" and record["properties"]["headers"] == {}
    assert record["body"] == BODY.decode() and record["bodyBase64"] is None
    restored = pika.BasicProperties()
    restored.decode(base64.b64decode(record["propertiesBase64"]))
    assert restored.headers["schema-version"] == 1 and restored.message_id == "m-1"


def test_headers_just_within_the_limit_are_an_ordinary_record() -> None:
    allowed = min(depth_limit(), ORJSON_MAX_DEPTH) - 2  # headers sit two levels down in the record
    props = properties({"deep": nested(allowed - 1)})

    line, fallback = encode_record(deliver(), props, BODY, RECEIVED)

    assert fallback is False
    assert "archiveError" not in orjson.loads(line)


def test_a_value_json_cannot_hold_becomes_a_fallback_record_naming_the_type() -> None:
    props = properties({"odd": object()})  # pika decodes nothing like it; a header table built in code can hold it

    line, fallback = encode_record(deliver(), props, BODY, RECEIVED)

    record = orjson.loads(line)
    assert fallback is True
    assert "TypeError" in record["archiveError"]
    assert record["propertiesBase64"] is None and "could not be re-encoded" in record["archiveError"]


def test_non_utf8_header_keys_and_values_stay_an_ordinary_record() -> None:
    props = properties({b"\xff\xfekey": b"\xc3\x28", "schema-version": 1})

    line, fallback = encode_record(deliver(), props, b"\xff\x00not json", RECEIVED)

    record = orjson.loads(line)
    assert fallback is False
    assert record["properties"]["headers"]["\\xff\\xfekey"] == {"$base64": base64.b64encode(b"\xc3\x28").decode()}
    assert base64.b64decode(record["bodyBase64"]) == b"\xff\x00not json"

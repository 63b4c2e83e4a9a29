"""``to_record``: one delivery -> one archive record (docs/design.md#archive-record), JSON-safe whatever the headers hold."""

from __future__ import annotations

import base64
import json
import struct
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import orjson
import pika
import pytest
from pika.data import decode_table
from pika.spec import Basic

from contract_platform.archive_record import to_record

RECEIVED = datetime(2026, 7, 1, 10, 15, 32, 120999, tzinfo=UTC)


def deliver(redelivered: bool = False) -> Basic.Deliver:
    return Basic.Deliver("ctag", 7, redelivered, "billing.events", "billing.invoice.issued.v1")


def properties(**overrides: object) -> pika.BasicProperties:
    values: dict[str, object] = {
        "message_id": "m-1",
        "correlation_id": "c-1",
        "type": "billing.invoice-issued.v1",
        "content_type": "application/json",
        "content_encoding": "utf-8",
        "delivery_mode": 2,
        "timestamp": 1782900931,
        "app_id": "billing-service",
        "headers": {"schema-version": 1, "producer": "billing-service"},
    }
    return pika.BasicProperties(**(values | overrides))


def test_utf8_body_is_text_and_every_design_field_is_there() -> None:
    body = '{"payload":{"name":"Zoë €"}}'.encode()
    record = to_record(deliver(), properties(), body, RECEIVED)

    assert record == {
        "exchange": "billing.events",
        "routingKey": "billing.invoice.issued.v1",
        "receivedAt": "2026-07-01T10:15:32.120Z",
        "redelivered": False,
        "properties": {
            "messageId": "m-1",
            "correlationId": "c-1",
            "type": "billing.invoice-issued.v1",
            "contentType": "application/json",
            "contentEncoding": "utf-8",
            "deliveryMode": 2,
            "timestamp": 1782900931,
            "appId": "billing-service",
            "priority": None,
            "expiration": None,
            "replyTo": None,
            "userId": None,
            "headers": {"schema-version": 1, "producer": "billing-service"},
        },
        "body": '{"payload":{"name":"Zoë €"}}',
        "bodyBase64": None,
    }


@pytest.mark.parametrize("body", [b"\xff\xfe\x00binary", b'{"a":"\xe9"}', b"\xc3"], ids=["binary", "latin-1", "cut"])
def test_body_that_is_not_utf8_goes_to_body_base64_and_body_is_null(body: bytes) -> None:
    record = to_record(deliver(redelivered=True), properties(), body, RECEIVED)

    assert record["body"] is None
    assert base64.b64decode(record["bodyBase64"]) == body
    assert record["redelivered"] is True


def test_empty_body_and_absent_properties() -> None:
    record = to_record(deliver(), pika.BasicProperties(), b"", RECEIVED)

    assert (record["body"], record["bodyBase64"]) == ("", None)
    assert record["properties"]["headers"] == {}
    assert record["properties"]["messageId"] is None
    assert record["properties"]["deliveryMode"] is None


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(2026, 7, 1, 10, 15, 32, 120999, tzinfo=UTC), "2026-07-01T10:15:32.120Z"),
        (datetime(2026, 7, 1, 0, 0, 0, tzinfo=UTC), "2026-07-01T00:00:00.000Z"),
        (datetime(2026, 7, 1, 1, 30, 0, 5000, tzinfo=timezone(timedelta(hours=2))), "2026-06-30T23:30:00.005Z"),
    ],
)
def test_received_at_is_utc_with_milliseconds_and_z(moment: datetime, expected: str) -> None:
    assert to_record(deliver(), properties(), b"{}", moment)["receivedAt"] == expected


def test_naive_received_at_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        to_record(deliver(), properties(), b"{}", datetime(2026, 7, 1, 10, 0, 0))


def _field(name: str, kind: bytes, payload: bytes) -> bytes:
    raw = name.encode()
    return bytes([len(raw)]) + raw + kind + payload


def _long(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _table(*fields: bytes) -> bytes:
    return _long(b"".join(fields))


def wire_headers() -> dict:
    """A header table holding every AMQP 0-9-1 field type, decoded exactly as pika decodes it off the wire."""
    nested = _table(_field("at", b"T", struct.pack(">Q", 1782900931)), _field("raw", b"x", _long(b"\x80\x81")))
    array = _long(b"I" + struct.pack(">i", 5) + b"S" + _long(b"five") + b"V")
    encoded = _table(
        _field("bool", b"t", b"\x01"),
        _field("int8", b"b", struct.pack(">b", -5)),
        _field("uint8", b"B", struct.pack(">B", 200)),
        _field("int16", b"s", struct.pack(">h", -300)),
        _field("int16-U", b"U", struct.pack(">h", -301)),
        _field("uint16", b"u", struct.pack(">H", 60000)),
        _field("int32", b"I", struct.pack(">i", -70000)),
        _field("uint32", b"i", struct.pack(">I", 4_000_000_000)),
        _field("int64", b"l", struct.pack(">q", -(2**40))),
        _field("int64-L", b"L", struct.pack(">q", 2**62)),
        _field("float", b"f", struct.pack(">f", 2.0)),
        _field("double", b"d", struct.pack(">d", 3.0)),
        _field("decimal", b"D", struct.pack(">Bi", 2, 12995)),
        _field("text", b"S", _long("Zoë €".encode())),
        _field("text-not-utf8", b"S", _long(b"\xff\xfe")),
        _field("bytes-utf8", b"x", _long(b"abc")),
        _field("bytes", b"x", _long(b"\x00\x80")),
        _field("timestamp", b"T", struct.pack(">Q", 1782900931)),
        _field("table", b"F", nested),
        _field("array", b"A", array),
        _field("void", b"V", b""),
    )
    headers, _ = decode_table(encoded, 0)
    return headers


def test_headers_of_every_amqp_type_become_json() -> None:
    headers = wire_headers()
    assert isinstance(headers["decimal"], Decimal) and isinstance(headers["timestamp"], datetime)  # what pika gives

    record = to_record(deliver(), properties(headers=headers), b"{}", RECEIVED)

    assert record["properties"]["headers"] == {
        "bool": True,
        "int8": -5,
        "uint8": 200,
        "int16": -300,
        "int16-U": -301,
        "uint16": 60000,
        "int32": -70000,
        "uint32": 4_000_000_000,
        "int64": -(2**40),
        "int64-L": 2**62,
        "float": 2,  # pika 1.4 decodes float and double fields as int
        "double": 3,
        "decimal": "129.95",
        "text": "Zoë €",
        "text-not-utf8": {"$base64": "//4="},
        "bytes-utf8": "abc",
        "bytes": {"$base64": "AIA="},
        "timestamp": "2026-07-01T10:15:31Z",
        "table": {"at": "2026-07-01T10:15:31Z", "raw": {"$base64": "gIE="}},
        "array": [5, "five", None],
        "void": None,
    }
    text = json.dumps(record, allow_nan=False)  # strict JSON: no NaN, no bytes, no datetime
    assert json.loads(text) == json.loads(orjson.dumps(record))


def test_values_other_clients_may_hand_over_are_json_safe_too() -> None:
    headers = {
        "nan": float("nan"),
        "inf": float("-inf"),
        "half": 0.5,
        "naive": datetime(2026, 7, 1, 10, 0, 0),
        "aware": datetime(2026, 7, 1, 12, 0, 0, 250000, tzinfo=timezone(timedelta(hours=2))),
        "big-decimal": Decimal("1E+3"),
        "tuple": (b"\xff", bytearray(b"ok")),
        b"\xffkey": "bytes key",
    }
    record = to_record(deliver(), properties(headers=headers), b"{}", RECEIVED)

    assert record["properties"]["headers"] == {
        "nan": "nan",
        "inf": "-inf",
        "half": 0.5,
        "naive": "2026-07-01T10:00:00Z",
        "aware": "2026-07-01T10:00:00.250000Z",
        "big-decimal": "1000",
        "tuple": [{"$base64": "/w=="}, "ok"],
        "\\xffkey": "bytes key",
    }
    json.dumps(record, allow_nan=False)


def test_a_type_amqp_cannot_carry_is_a_bug_not_a_silent_string() -> None:
    with pytest.raises(TypeError, match="set is not an AMQP field value"):
        to_record(deliver(), properties(headers={"bad": {1, 2}}), b"{}", RECEIVED)

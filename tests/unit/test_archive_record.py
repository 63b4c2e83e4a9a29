"""archive_record: the record's one definition (fields, Spark schema, writer) and its one type precedence."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pika
import pytest

from contract_platform.archive_record import (
    FIELDS,
    PROPERTIES,
    TYPE_PRECEDENCE,
    fallback_record,
    message_type_of,
    record_type,
    resolve_type,
    spark_schema,
    to_record,
)

V1, V2 = "billing.invoice-issued.v1", "billing.invoice-issued.v2"
RECEIVED = datetime(2026, 7, 1, 10, 15, 32, 120_000, tzinfo=UTC)
DELIVER = SimpleNamespace(exchange="billing.events", routing_key="billing.invoice.issued.v1", redelivered=False)


def envelope(message_type: Any) -> bytes:
    return json.dumps({"metadata": {"messageId": "m-1", "messageType": message_type}, "payload": {}}).encode()


def test_the_spark_schema_has_exactly_the_python_fields_in_order() -> None:
    schema = spark_schema()
    assert schema.fieldNames() == [field.name for field in FIELDS]
    assert schema["properties"].dataType.fieldNames() == [field.name for field in PROPERTIES]
    kinds = {"string": "string", "boolean": "boolean", "int": "int", "long": "bigint", "headers": "map<string,string>"}
    for field in (*FIELDS, *PROPERTIES):
        if field.kind != "properties":
            parent = schema if field in FIELDS else schema["properties"].dataType
            assert parent[field.name].dataType.simpleString() == kinds[field.kind], field.name


def test_a_projection_keeps_the_record_order_and_refuses_unknown_names() -> None:
    assert spark_schema("body", "receivedAt").fieldNames() == ["receivedAt", "body"]
    with pytest.raises(ValueError, match="messageType"):
        spark_schema("body", "messageType")


def test_the_writer_writes_only_fields_of_the_record() -> None:
    properties = pika.BasicProperties(message_id="m-1", type=V1, headers={"schema-version": 1}, delivery_mode=2)
    record = to_record(DELIVER, properties, envelope(V1), RECEIVED)
    fallback = fallback_record(DELIVER, properties, b"\xff", RECEIVED, "headers too deep")
    names = [field.name for field in FIELDS]
    assert [name for name in names if name in record] == list(record)  # the record's order, nothing else
    assert set(fallback) == set(names)  # a fallback record fills every field
    assert list(record["properties"]) == list(fallback["properties"]) == [field.name for field in PROPERTIES]
    assert (fallback["body"], fallback["bodyBase64"]) == (None, "/w==")


def record_of(type_: str | None = None, headers: dict[str, Any] | None = None, body: bytes = b"not json") -> Any:
    properties = pika.BasicProperties(message_id="m-1", type=type_, headers=headers or {})
    return to_record(DELIVER, properties, body, RECEIVED)


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (record_of(type_=V1), (V1, "property")),
        (record_of(headers={"x-park-source-type": V1}), (V1, "header:x-park-source-type")),
        (record_of(headers={"message-type": V1, "x-message-type": V2}), (V1, "header:message-type")),
        (record_of(body=envelope(V1)), (V1, "body")),
        (record_of(type_=V2, headers={"message-type": V2}, body=envelope(V1)), (V1, "body")),  # conflict: envelope
        (record_of(type_="", headers={"message-type": ""}, body=envelope("")), (None, None)),  # empty is absent
        (record_of(type_=V2, body=envelope(7)), (V2, "property")),  # a messageType that is not text is no type
        (record_of(type_=V2, body=b"[1, 2]"), (V2, "property")),
        (record_of(), (None, None)),
        ({"properties": "not an object", "body": None}, (None, None)),
    ],
)
def test_the_type_comes_from_the_body_then_the_property_then_a_header(record: Any, expected: Any) -> None:
    assert resolve_type(record) == expected
    assert record_type(record) == expected[0]
    assert expected[1] is None or expected[1] in TYPE_PRECEDENCE


def test_an_already_parsed_envelope_is_used_as_the_body() -> None:
    record = record_of(type_=V2, body=envelope(V2))
    assert record_type(record, {"metadata": {"messageType": V1}}) == V1


def test_a_message_read_from_a_queue_resolves_like_its_record() -> None:
    properties = pika.BasicProperties(type=V2, headers={"x-park-source-type": V1.encode()})
    for body in (envelope(V1), b"\xff not json", b""):
        record = to_record(DELIVER, properties, body, RECEIVED)
        assert message_type_of(properties, body) == resolve_type(record)

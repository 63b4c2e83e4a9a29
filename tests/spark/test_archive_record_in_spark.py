"""archive_record in Spark: a line parsed with ``spark_schema`` gets the type ``record_type`` gives in Python."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pika
import pytest
from pyspark.sql import functions as F

from contract_platform.archive_record import record_type, spark_schema, to_record, type_column

pytestmark = pytest.mark.spark

V1, V2 = "billing.invoice-issued.v1", "billing.invoice-issued.v2"
RECEIVED = datetime(2026, 7, 1, 10, 15, 32, 120_000, tzinfo=UTC)
DELIVER = SimpleNamespace(exchange="billing.events", routing_key="billing.invoice.issued.v1", redelivered=False)


def envelope(message_type: Any) -> bytes:
    return json.dumps({"metadata": {"messageId": "m-1", "messageType": message_type}, "payload": {}}).encode()


def line(type_: str | None = None, headers: dict[str, Any] | None = None, body: bytes = b"not json") -> str:
    properties = pika.BasicProperties(message_id="m-1", type=type_, headers=headers or {"schema-version": 1})
    return json.dumps(to_record(DELIVER, properties, body, RECEIVED))


LINES = {
    "in the AMQP property": (line(type_=V1), V1),
    "in a header": (line(headers={"x-park-source-type": V1, "schema-version": 1}), V1),
    "in the first of two headers": (line(headers={"message-type": V2, "x-message-type": V1}), V2),
    "only in body metadata": (line(body=envelope(V1)), V1),
    "conflicting": (line(type_=V2, headers={"message-type": V2}, body=envelope(V1)), V1),
    "empty everywhere": (line(type_="", headers={"message-type": ""}, body=envelope("")), None),
    "not text in the body": (line(type_=V2, body=envelope({"name": V1})), V2),
    "a number in the body": (line(type_=V2, body=envelope(1)), V2),
    "a body that is an array": (line(type_=V2, body=b"[1]"), V2),
    "a body that is not UTF-8": (line(type_=V2, body=b"\xff"), V2),
    "none": (line(), None),
}


def test_spark_and_python_give_every_line_the_same_type(spark: Any) -> None:
    names = list(LINES)
    frame = spark.createDataFrame([(name, LINES[name][0]) for name in names], "name string, line string")
    typed = frame.select("name", type_column(F.from_json("line", spark_schema())).alias("type"))
    in_spark = {row["name"]: row["type"] for row in typed.collect()}

    in_python = {name: record_type(json.loads(LINES[name][0])) for name in names}

    assert in_python == {name: expected for name, (_, expected) in LINES.items()}
    assert in_spark == in_python

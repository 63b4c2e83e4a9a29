"""The archive record (docs/design.md#archive-record): its fields, its Spark schema, its messageType.

One JSON Lines record per archived delivery. This module is its one definition:

- ``FIELDS`` / ``PROPERTIES``: the record's fields and the AMQP properties it keeps, in order, each with
  its type; ``to_record`` (the archiver's writer, also replay's reader of in-flight messages) and
  ``fallback_record`` build records from them, and ``spark_schema`` turns them into the Spark
  ``StructType`` every Spark job parses lines with (PySpark is imported inside that function only).
- ``record_type``: which messageType a record carries. The sources are tried in ``TYPE_PRECEDENCE``
  order and the first that holds a non-empty string wins:

  1. ``body``: the body's ``metadata.messageType``, when the body is a JSON envelope. The envelope is
     the message; the AMQP properties mirror it (docs/design.md#amqp-properties), and a property that
     disagrees with it is the validation's HEADER_MISMATCH, not a second type;
  2. ``property``: the AMQP ``type`` property (``properties.type``), for a body that is not an envelope;
  3. ``header:<name>``: the first of ``TYPE_HEADERS`` (producers outside the platform, parked copies).

  ``type_column`` is the same precedence as a Spark Column expression over a record parsed with
  ``spark_schema``; ``message_type_of`` applies it to a message read from a queue (pika properties and
  body bytes); ``peek_type`` applies steps 2 and 3 alone, the header peek of a consumer that must not parse
  a body before it knows the type (``contract_platform.client``).

Pure Python (no pika, no Spark at module level): the archiver, the Spark jobs, the record checker
(``validation.records``), the retirement scan and replay all import it.
"""

from __future__ import annotations

import base64
import decimal
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import StructType

__all__ = [
    "FIELDS",
    "PROPERTIES",
    "TYPE_HEADERS",
    "TYPE_PRECEDENCE",
    "Field",
    "fallback_record",
    "format_received_at",
    "json_safe",
    "message_type_of",
    "peek_type",
    "record_type",
    "resolve_type",
    "spark_schema",
    "to_record",
    "type_column",
]


@dataclass(frozen=True)
class Field:
    """One field of the record: its JSON name, its type (``string``, ``boolean``, ``int``, ``long``,
    ``headers``: a JSON object of header values, ``properties``: ``PROPERTIES``) and, for a property,
    the pika ``BasicProperties`` attribute it comes from."""

    name: str
    kind: str
    attribute: str = ""


PROPERTIES: tuple[Field, ...] = (
    Field("messageId", "string", "message_id"),
    Field("correlationId", "string", "correlation_id"),
    Field("type", "string", "type"),
    Field("contentType", "string", "content_type"),
    Field("contentEncoding", "string", "content_encoding"),
    Field("deliveryMode", "int", "delivery_mode"),
    Field("timestamp", "long", "timestamp"),
    Field("appId", "string", "app_id"),
    Field("priority", "int", "priority"),
    Field("expiration", "string", "expiration"),
    Field("replyTo", "string", "reply_to"),
    Field("userId", "string", "user_id"),
    Field("headers", "headers", "headers"),
)

FIELDS: tuple[Field, ...] = (
    Field("exchange", "string"),
    Field("routingKey", "string"),
    Field("receivedAt", "string"),
    Field("redelivered", "boolean"),
    Field("properties", "properties"),
    Field("body", "string"),
    Field("bodyBase64", "string"),
    Field("propertiesBase64", "string"),  # fallback records only
    Field("archiveError", "string"),  # fallback records only
)
FALLBACK_ONLY = ("propertiesBase64", "archiveError")

# Headers that may name a message's type (checked in this order, after the body and the ``type`` property).
TYPE_HEADERS = ("message-type", "x-message-type", "messageType", "x-park-source-type")
TYPE_PRECEDENCE: tuple[str, ...] = ("body", "property", *(f"header:{name}" for name in TYPE_HEADERS))


# --- writing ------------------------------------------------------------------------------------


def to_record(method: Any, properties: Any, body: bytes, received_at: datetime) -> dict[str, Any]:
    """The archive record of one delivery (pure): ``method`` is a Basic.Deliver, ``properties`` BasicProperties.

    Raises ``TypeError`` for a header value no AMQP client hands over (the archiver then writes a
    ``fallback_record``).
    """
    kept = {}
    for field in PROPERTIES:
        value = getattr(properties, field.attribute)
        kept[field.name] = json_safe(value or {}) if field.kind == "headers" else json_safe(value)
    text, encoded = _body(body)
    return {
        "exchange": method.exchange,
        "routingKey": method.routing_key,
        "receivedAt": format_received_at(received_at),
        "redelivered": bool(method.redelivered),
        "properties": kept,
        "body": text,
        "bodyBase64": encoded,
    }


def fallback_record(method: Any, properties: Any, body: bytes, received_at: datetime, reason: str) -> dict[str, Any]:
    """The record of a delivery ``to_record`` cannot write: what can be written, the raw property bytes, and why.

    ``properties`` keeps each property that can be written on its own, with empty ``headers``;
    ``propertiesBase64`` holds the AMQP content-header property bytes (null if even those cannot be had);
    ``archiveError`` says why. The body is kept exactly as ``to_record`` keeps it.
    """
    try:
        raw: str | None = base64.b64encode(b"".join(properties.encode())).decode("ascii")
    except Exception:  # the bytes are a courtesy; the reason below says they are missing
        raw, reason = None, f"{reason}; the property bytes could not be re-encoded either"
    kept: dict[str, Any] = {}
    for field in PROPERTIES:
        if field.kind == "headers":
            kept[field.name] = {}
            continue
        try:
            value = json_safe(getattr(properties, field.attribute, None))
            orjson.dumps(value)  # what the archiver's encoder will be asked to write
        except (TypeError, ValueError, OverflowError, RecursionError):
            value = None
        kept[field.name] = value
    text, encoded = _body(body)
    return {
        "exchange": json_safe(method.exchange),
        "routingKey": json_safe(method.routing_key),
        "receivedAt": format_received_at(received_at),
        "redelivered": bool(method.redelivered),
        "properties": kept,
        "propertiesBase64": raw,
        "archiveError": reason,
        "body": text,
        "bodyBase64": encoded,
    }


def _body(body: bytes) -> tuple[str | None, str | None]:
    """(body, bodyBase64): the text of a UTF-8 body, else its base64."""
    try:
        return body.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, base64.b64encode(body).decode("ascii")


def format_received_at(moment: datetime) -> str:
    """``2026-07-01T10:15:32.120Z``: UTC, milliseconds."""
    if moment.tzinfo is None:
        raise ValueError("received_at must be timezone-aware")
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def json_safe(value: Any) -> Any:
    """A header or property value as JSON can hold it; pika decodes nothing outside these types.

    bytes -> UTF-8 text, or ``{"$base64": ...}`` when not UTF-8; datetime -> ISO 8601 UTC with ``Z``;
    Decimal -> string; non-finite float -> string; tables and arrays recursively.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return {"$base64": base64.b64encode(raw).decode("ascii")}
    if isinstance(value, datetime):
        moment = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return moment.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, Mapping):
        return {_key(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    raise TypeError(f"{type(value).__name__} is not an AMQP field value")


def _key(key: Any) -> str:
    return key.decode("utf-8", "backslashreplace") if isinstance(key, bytes) else str(key)


# --- the type -----------------------------------------------------------------------------------

_NOT_READ = object()


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _body_type(record: Mapping[str, Any], envelope: Any) -> str | None:
    if envelope is _NOT_READ:
        body = record.get("body")
        if not isinstance(body, str):
            return None
        try:
            envelope = json.loads(body)
        except (ValueError, RecursionError):
            return None
    metadata = envelope.get("metadata") if isinstance(envelope, dict) else None
    return _text(metadata.get("messageType")) if isinstance(metadata, dict) else None


def _source(record: Mapping[str, Any], source: str, envelope: Any) -> str | None:
    """The type one source of ``TYPE_PRECEDENCE`` gives, or None."""
    if source == "body":
        return _body_type(record, envelope)
    properties = record.get("properties")
    if not isinstance(properties, Mapping):
        return None
    if source == "property":
        return _text(properties.get("type"))
    headers = properties.get("headers")
    return _text(headers.get(source.removeprefix("header:"))) if isinstance(headers, Mapping) else None


def resolve_type(record: Mapping[str, Any], envelope: Any = _NOT_READ) -> tuple[str | None, str | None]:
    """(messageType, its source in ``TYPE_PRECEDENCE``: ``body`` / ``property`` / ``header:<name>``), or (None, None).

    ``envelope``: the body already parsed (the record checker has it), so it is not parsed twice.
    """
    for source in TYPE_PRECEDENCE:
        found = _source(record, source, envelope)
        if found is not None:
            return found, source
    return None, None


def record_type(record: Mapping[str, Any], envelope: Any = _NOT_READ) -> str | None:
    """The messageType of an archive record, by ``TYPE_PRECEDENCE`` (see the module docstring), or None."""
    return resolve_type(record, envelope)[0]


def message_type_of(properties: Any, body: bytes | None, envelope: Any = _NOT_READ) -> tuple[str | None, str | None]:
    """``resolve_type`` of a message read from a queue: pika ``BasicProperties`` and the body bytes.

    ``envelope``: the body as its reader already parsed it within the platform's bounds (``None``: it could
    not be read), so the body is not parsed again here."""
    headers = getattr(properties, "headers", None) or {}
    view = {
        "properties": {
            "type": getattr(properties, "type", None),
            "headers": {name: _header_text(headers.get(name)) for name in TYPE_HEADERS},
        },
        "body": _body(body or b"")[0],
    }
    return resolve_type(view, envelope)


def peek_type(properties: Any) -> tuple[str | None, str | None]:
    """(messageType, its source: ``property`` or ``header:<name>``) from the AMQP properties alone, or (None, None):
    ``TYPE_PRECEDENCE`` without the body, which is never read here (a header peek)."""
    found = getattr(properties, "type", None)
    if type(found) is str and found:
        return found, "property"
    headers = getattr(properties, "headers", None)
    if isinstance(headers, Mapping):
        for name in TYPE_HEADERS:
            value = _text(_header_text(headers.get(name)))
            if value is not None:
                return value, f"header:{name}"
    return None, None


def _header_text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


# --- Spark --------------------------------------------------------------------------------------


def spark_schema(*names: str) -> StructType:
    """The record as a Spark ``StructType`` (all of ``FIELDS``, or only ``names``, in ``FIELDS`` order).

    ``headers`` is a map of strings: Spark keeps a header value that is not a string as its JSON text.
    """
    from pyspark.sql import types as T

    simple = {"string": T.StringType(), "boolean": T.BooleanType(), "int": T.IntegerType(), "long": T.LongType()}
    headers = T.MapType(T.StringType(), T.StringType())

    def spark_type(field: Field) -> Any:
        if field.kind == "properties":
            return T.StructType([T.StructField(p.name, spark_type(p)) for p in PROPERTIES])
        return headers if field.kind == "headers" else simple[field.kind]

    unknown = set(names) - {f.name for f in FIELDS}
    if unknown:
        raise ValueError(f"not fields of the archive record: {', '.join(sorted(unknown))}")
    return T.StructType([T.StructField(f.name, spark_type(f)) for f in FIELDS if not names or f.name in names])


def type_column(record: Column) -> Column:
    """``record_type`` as a Spark Column, over ``record``: a struct parsed with ``spark_schema`` (with
    at least ``properties`` and ``body``). Same ``TYPE_PRECEDENCE``, same rule: the first non-empty string."""
    from pyspark.sql import functions as F

    # variant, not string: from_json would read a number or an object as its JSON text, record_type takes strings only
    declared = F.from_json(record["body"], "metadata struct<messageType: variant>")["metadata"]["messageType"]
    body_type = F.when(F.schema_of_variant(declared) == "STRING", F.variant_get(declared, "$", "string"))
    sources = {"body": body_type, "property": record["properties"]["type"]}
    for name in TYPE_HEADERS:
        sources[f"header:{name}"] = record["properties"]["headers"][name]
    return F.coalesce(*(F.nullif(sources[source], F.lit("")) for source in TYPE_PRECEDENCE))

"""AMQP properties and headers mirrored from the envelope (docs/design.md#amqp-properties).

Plain dicts here; ``contract_platform.amqp`` turns them into pika objects. PII never goes into a
header: only the fixed list below is copied, and the linter checks no PII pointer feeds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

__all__ = ["HEADER_FIELDS", "amqp_properties", "parse_timestamp"]

# header name -> metadata field
HEADER_FIELDS: Mapping[str, str] = {
    "schema-version": "schemaVersion",
    "message-version": "messageVersion",
    "producer": "producer",
    "tenant-id": "tenantId",
    "trace-id": "traceId",
}


def parse_timestamp(text: str) -> datetime:
    """An ISO-8601 timestamp with a zone (``Z`` accepted) as an aware datetime."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    if value.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone; write UTC with a trailing Z")
    return value


def amqp_properties(envelope: Mapping[str, Any]) -> dict[str, Any]:
    """The AMQP properties of a valid envelope: message_id, correlation_id, type, timestamp, headers..."""
    metadata = envelope["metadata"]
    headers = {name: metadata[field] for name, field in HEADER_FIELDS.items() if metadata.get(field) is not None}
    return {
        "message_id": metadata["messageId"],
        "correlation_id": metadata["correlationId"],
        "type": metadata["messageType"],
        "content_type": "application/json",
        "content_encoding": "utf-8",
        "delivery_mode": 2,
        "timestamp": int(parse_timestamp(metadata["publishedAt"]).timestamp()),
        "app_id": metadata["producer"],
        "headers": headers,
    }

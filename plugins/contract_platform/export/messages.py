"""One contract version -> an AsyncAPI 3.0 Message Object (``components.messages.<messageType>``).

::

    name, title, summary, description     messageType, the payload schema's title, a one-line record, the contract's text
    contentType                           application/json
    payload                               allOf [the envelope, {metadata.messageType const, payload -> the contract's schema}]
    headers                               the AMQP headers the publisher copies from metadata (envelope.properties)
    correlationId                         $message.payload#/metadata/correlationId
    bindings.amqp                         contentEncoding, messageType
    examples                              the contract's valid fixtures, with the headers they would travel with
    deprecated, x-contract                lifecycle status, owner, compatibility, PII, retention, consumers...
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from contract_platform.catalog.model import Contract, Status
from contract_platform.durations import format_duration
from contract_platform.envelope.properties import HEADER_FIELDS, amqp_properties
from contract_platform.export.schemas import component_key, component_ref

__all__ = [
    "AMQP_BINDING_VERSION",
    "CONTENT_ENCODING",
    "CONTENT_TYPE",
    "CORRELATION_ID_LOCATION",
    "DEPRECATED_STATUSES",
    "build_message",
    "payload_key",
]

AMQP_BINDING_VERSION = "0.3.0"
CONTENT_TYPE = "application/json"
CONTENT_ENCODING = "utf-8"  # what envelope.properties.amqp_properties puts on every message
CORRELATION_ID_LOCATION = "$message.payload#/metadata/correlationId"
# A consumer still on one of these versions should move to its successor.
DEPRECATED_STATUSES = frozenset({Status.SUPERSEDED, Status.DEPRECATED, Status.RETIRED})


def payload_key(contract: Contract) -> str:
    """The components.schemas key of a contract's payload schema (its $defs go under ``<key>.<Def>``)."""
    return f"{contract.message_type}.payload"


def build_message(contract: Contract, *, envelope_key: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The Message Object of ``contract``.

    ``envelope_key``: the components.schemas key of the envelope; ``metadata``: the envelope's
    ``metadata`` schema as it stands in the document (its ``$ref`` s already rewritten), which the
    headers schema copies its field schemas from.
    """
    message: dict[str, Any] = {
        "name": contract.message_type,
        "title": _title(contract),
        "summary": (
            f"{contract.kind.value.capitalize()} {contract.message_type} {contract.version} ({contract.status.value}), "
            f"owned by {contract.owner.team} ({contract.owner.service})."
        ),
        "description": contract.description,
        "contentType": CONTENT_TYPE,
        "headers": _headers(contract, metadata),
        "payload": _payload(contract, envelope_key),
        "correlationId": {
            "description": "metadata.correlationId; the publisher also sets it as the AMQP correlation_id property.",
            "location": CORRELATION_ID_LOCATION,
        },
        "tags": [{"name": contract.domain}, {"name": contract.kind.value}, {"name": contract.status.value}],
        "bindings": {
            "amqp": {
                "contentEncoding": CONTENT_ENCODING,
                "messageType": contract.message_type,
                "bindingVersion": AMQP_BINDING_VERSION,
            }
        },
        "deprecated": contract.status in DEPRECATED_STATUSES,
        "x-contract": contract_record(contract),
    }
    examples = _examples(contract)
    if examples:
        message["examples"] = examples
    return message


def _title(contract: Contract) -> str:
    title = contract.payload_schema.get("title")
    return str(title).removesuffix(" payload") if isinstance(title, str) and title else contract.message_type


def _payload(contract: Contract, envelope_key: str) -> dict[str, Any]:
    """The whole envelope: the shared envelope schema, narrowed to this contract's type and payload."""
    return {
        "title": f"{contract.message_type} envelope",
        "description": (
            f"The standard envelope ({envelope_key}) with metadata.messageType {contract.message_type} "
            f"and the payload of that contract ({payload_key(contract)})."
        ),
        "allOf": [
            {"$ref": component_ref(envelope_key)},
            {
                "type": "object",
                "properties": {
                    "metadata": {
                        "type": "object",
                        "properties": {
                            "messageType": {"const": contract.message_type},
                            "schemaVersion": {"const": contract.major},
                        },
                    },
                    "payload": {"$ref": component_ref(payload_key(contract))},
                },
            },
        ],
    }


def _headers(contract: Contract, metadata: Mapping[str, Any]) -> dict[str, Any]:
    fields = metadata.get("properties", {})
    required_fields = set(metadata.get("required", []))
    if contract.tenancy_required:
        required_fields.add("tenantId")
    properties: dict[str, Any] = {}
    for header, field in HEADER_FIELDS.items():
        schema = dict(fields.get(field, {}))
        note = f"Copied from metadata.{field}."
        described = str(schema.get("description") or "")
        schema["description"] = f"{note} {described[:1].upper()}{described[1:]}." if described else note
        if field == "schemaVersion":
            schema["const"] = contract.major
        properties[header] = schema
    return {
        "type": "object",
        "description": "AMQP headers the publisher copies from the envelope metadata (never personal data).",
        "properties": properties,
        "required": [header for header, field in HEADER_FIELDS.items() if field in required_fields],
    }


def _examples(contract: Contract) -> list[dict[str, Any]]:
    examples = []
    for fixture in contract.fixtures:
        if not fixture.valid:
            continue
        example: dict[str, Any] = {
            "name": component_key(fixture.path.stem),
            "summary": f"fixtures/valid/{fixture.name}",
        }
        # Not a usable envelope: `contractctl check` reports it; the example still shows the body.
        with contextlib.suppress(KeyError, TypeError, ValueError, AttributeError):
            example["headers"] = amqp_properties(fixture.document)["headers"]
        example["payload"] = fixture.document
        examples.append(example)
    return examples


def _retention(contract: Contract) -> dict[str, str]:
    """As contract.yaml writes it (``14d`` stays ``14d``), else the shortest exact form."""
    written = contract.raw.get("retention")
    if isinstance(written, Mapping):
        return {key: str(value) for key, value in written.items()}
    retention = contract.retention
    return {key: format_duration(getattr(retention, key)) for key in ("queue", "dlq", "archive")}


def contract_record(contract: Contract) -> dict[str, Any]:
    """``x-contract``: what contract.yaml says beyond the message's shape."""
    owner = {"team": contract.owner.team, "service": contract.owner.service}
    if contract.owner.contact:
        owner["contact"] = contract.owner.contact
    record: dict[str, Any] = {
        "messageType": contract.message_type,
        "version": contract.version,
        "kind": contract.kind.value,
        "status": contract.status.value,
        "owner": owner,
        "transport": {"exchange": contract.transport.exchange, "routingKey": contract.transport.routing_key},
        "compatibility": contract.compatibility,
        "compatibilityPolicy": contract.compatibility_policy,
        "idempotencyKey": contract.idempotency_key,
        "pii": {"containsPii": contract.pii.contains_pii, "fields": list(contract.pii.fields)},
        "retention": _retention(contract),
        "consumers": [{"service": c.service, "queue": c.queue} for c in contract.consumers],
    }
    if contract.callers:
        record["callers"] = list(contract.callers)
    if contract.ordering is not None:
        record["ordering"] = {"key": contract.ordering.key, "sequence": contract.ordering.sequence}
    if contract.superseded_by:
        record["supersededBy"] = contract.superseded_by
    if contract.sunset is not None:
        record["sunset"] = contract.sunset.isoformat()
    if contract.holds:
        record["holds"] = [
            {"kind": hold.kind, "until": hold.until.isoformat(), "reason": hold.reason} for hold in contract.holds
        ]
    return record

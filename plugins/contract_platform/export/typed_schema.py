"""One contract version as the JSON Schema of its typed envelope: what a code generator is given.

A generator reads one schema and writes one set of types, so the envelope standard and the version's payload
schema are put together here, once, for every language (``export.python_models`` today):

=====================================  ==================================================================
the typed schema                       why
=====================================  ==================================================================
the envelope standard at the root,     the envelope type holds ``metadata`` and ``payload``; a version's
its ``payload`` the version's payload  own envelope type refuses another version's message
schema (local ``$ref`` s rebased under
``/properties/payload``, its ``$id``
dropped), ``metadata.messageType``
and ``schemaVersion`` constants
``$schema`` of the payload             the payload's draft decides how its keywords read (draft-04's
                                       boolean ``exclusiveMaximum``...); the envelope's keywords read
                                       alike in every draft
``format`` moved into the             a value is handed on exactly as written (``2026-07-01T10:15:30Z``
description, with a ``pattern`` for    stays that text, never a re-printed datetime, a UUID object or a
``date-time``, ``date``, ``time``      float); the pattern is the type's own check of the shape (the guard
and ``uuid`` when none is written      also checks the calendar and every other format)
an enum whose ``x-unknownValuePolicy``  the guard hands such a value to the handler as sent
is ``passthrough``: its type without   (``client.tolerance``); ``fallback:`` values are replaced by the
the list (the known values go into     guard, so that enum keeps its list; ``reject`` keeps it too
the description)
an object without                      open models stay open: an added field survives a round trip
``additionalProperties`` gets          (``additionalProperties: false`` stays closed, except where the
``additionalProperties: true``         contract's mode is FORWARD or FULL: the guard lets later minors'
                                       fields through, so the reader's type must too)
=====================================  ==================================================================

Everything else (``required``, ``pattern``, lengths, ranges, ``enum``, ``const``, ``$ref``, ``allOf`` /
``oneOf`` / ``anyOf``, nullable types, arrays of objects, descriptions) goes to the generator as written.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contract_platform.catalog.model import Catalog, Contract
from contract_platform.client.tolerance import FORWARD_MODES, fallback_of

__all__ = ["FORMAT_PATTERNS", "TypedVersion", "class_stem", "subschemas", "typed_version"]

_DATE = "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
_TIME = "([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"
# RFC 3339 shapes, ASCII digits only (ECMA-262's \d); the formats a generator would turn into objects
FORMAT_PATTERNS: Mapping[str, str] = {
    "date-time": f"^{_DATE}[Tt]{_TIME}$",
    "date": f"^{_DATE}$",
    "time": f"^{_TIME}$",
    "uuid": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
}
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SUBSCHEMAS = (
    "items",
    "prefixItems",
    "additionalItems",
    "contains",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "additionalProperties",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_OBJECT_KEYWORDS = ("properties", "patternProperties", "required")
_DIALECT_URIS = {
    "draft-04": "http://json-schema.org/draft-04/schema#",
    "draft-06": "http://json-schema.org/draft-06/schema#",
    "draft-07": "http://json-schema.org/draft-07/schema#",
    "2019-09": "https://json-schema.org/draft/2019-09/schema",
    "2020-12": _DRAFT_2020_12,
}


@dataclass(frozen=True)
class TypedVersion:
    """The typed schema of one version, and what a generated envelope type carries besides its fields."""

    message_type: str
    version: str  # the contract's MAJOR.MINOR.PATCH
    major: int
    exchange: str
    routing_key: str
    description: str
    envelope_class: str  # InvoiceIssuedV2
    payload_class: str  # InvoiceIssuedV2Payload
    module: str  # billing_invoice_issued_v2
    schema_file: str  # where the payload schema came from, for errors
    schema: dict[str, Any]

    def constants(self, revision: str) -> dict[str, str | int]:
        """The constants every generated envelope type carries, in every language, in this order."""
        return {
            "MESSAGE_TYPE": self.message_type,
            "VERSION": self.version,
            "SCHEMA_VERSION": self.major,
            "EXCHANGE": self.exchange,
            "ROUTING_KEY": self.routing_key,
            "CATALOG_REVISION": revision,
        }


def class_stem(message_type: str) -> str:
    """``billing.invoice-issued.v2`` -> ``InvoiceIssuedV2`` (the domain is the module's, not the class's)."""
    _domain, name, major = message_type.split(".")
    words = re.split(r"[^A-Za-z0-9]+", name)
    return "".join(w[:1].upper() + w[1:] for w in words if w) + major.upper()


def typed_version(catalog: Catalog, contract: Contract) -> TypedVersion:
    """The typed schema of ``contract`` (module docstring), a new document the caller may change."""
    stem = class_stem(contract.message_type)
    forward = contract.compatibility.upper() in FORWARD_MODES
    payload = {k: v for k, v in copy.deepcopy(dict(contract.payload_schema)).items() if k not in ("$schema", "$id")}
    payload = _rebased(payload, "#/properties/payload")
    _adapt(payload, forward=forward)
    payload["title"] = f"{stem}Payload"
    envelope = copy.deepcopy(dict(catalog.envelope_schema))
    envelope.pop("$id", None)
    envelope["$schema"] = contract.payload_schema.get("$schema") or _DIALECT_URIS.get(contract.dialect, _DRAFT_2020_12)
    envelope["title"] = stem
    envelope["description"] = contract.description
    metadata = envelope["properties"]["metadata"]
    metadata["title"] = "Metadata"
    metadata["description"] = "The envelope's metadata (contracts/envelope/envelope.v1.schema.json)."
    fields = metadata["properties"]
    fields["messageType"] = {"const": contract.message_type, "description": "The version this type reads."}
    fields["schemaVersion"] = {"const": contract.major, "description": "The MAJOR of messageType."}
    _adapt(metadata, forward=False)
    envelope["properties"]["payload"] = payload
    return TypedVersion(
        message_type=contract.message_type,
        version=contract.version,
        major=contract.major,
        exchange=contract.transport.exchange,
        routing_key=contract.transport.routing_key,
        description=contract.description,
        envelope_class=stem,
        payload_class=f"{stem}Payload",
        module=re.sub(r"[^a-z0-9]+", "_", contract.message_type.lower()),
        schema_file=str(contract.schema_file),
        schema=envelope,
    )


def _rebased(node: Any, prefix: str) -> Any:
    """``node`` with every local reference (``#``, ``#/...``) pointing under ``prefix``, where it now lives."""
    if isinstance(node, dict):
        return {
            key: (
                prefix + value[1:]
                if key == "$ref" and isinstance(value, str) and value.startswith("#")
                else _rebased(value, prefix)
            )
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_rebased(item, prefix) for item in node]
    return node


def _adapt(node: Any, *, forward: bool) -> None:
    """Formats as strings with their patterns, passthrough enums opened, open models said to be open (in place)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if not isinstance(item, dict):
            continue
        written = item.pop("format", None)
        if isinstance(written, str):
            shape = FORMAT_PATTERNS.get(written)
            if shape is not None and "pattern" not in item:
                item["pattern"] = shape
            item["description"] = f"{item.get('description', '')} (format: {written})".strip()
        policy = fallback_of(item) if "enum" in item else None
        if policy is not None and policy[0] == "passthrough":
            known = ", ".join(str(value) for value in item.pop("enum"))
            item["description"] = f"{item.get('description', '')} Known values: {known}; others are passed on as sent."
        if _is_object(item) and (
            "additionalProperties" not in item or (forward and item["additionalProperties"] is False)
        ):
            item["additionalProperties"] = True
        stack.extend(subschemas(item))


def subschemas(schema: dict[str, Any]) -> list[Any]:
    """The schemas directly inside ``schema``, by keyword (never a property *named* like a keyword)."""
    found: list[Any] = []
    for key in _SCHEMA_MAPS:
        value = schema.get(key)
        if isinstance(value, dict):
            found.extend(value.values())
    for key in _SUBSCHEMAS:
        value = schema.get(key)
        if isinstance(value, list):
            found.extend(value)
        elif isinstance(value, dict):
            found.append(value)
    return found


def _is_object(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    named = kind == "object" or (isinstance(kind, list) and "object" in kind)
    return named or (kind is None and any(k in schema for k in _OBJECT_KEYWORDS))

"""Record-level rules: one archive record (a JSON Lines line, DESIGN section 5) -> ``CheckedRecord``.

Plain Python values in and out, so the rules are tested without Spark; the Spark job runs
``RecordChecker.check`` over Arrow batches. One function per rule; the cross-record rules
(DUPLICATE, CONFLICTING_DUPLICATE, OUT_OF_ORDER) are in ``contract_platform.validation.sequence``.

JSON is read with orjson and, when orjson refuses a text, once more with the standard library
(which reads lone surrogate escapes and refuses NaN here), so MALFORMED means "not JSON" for both.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from contract_platform.catalog.documents import pointer_from_path, resolve_pointer
from contract_platform.catalog.model import Catalog, Contract, Ordering, Status
from contract_platform.catalog.pointers import split_pointer
from contract_platform.envelope.properties import HEADER_FIELDS
from contract_platform.envelope.validation import EnvelopeValidator
from contract_platform.validation.model import CheckedRecord, Finding
from contract_platform.validation.reasons import Reason
from contract_platform.validation.schemas import FastValidator

__all__ = ["DEFAULT_OVERSIZE_BYTES", "NotJson", "RecordChecker", "effective_statuses", "parse_json", "payload_hash"]

DEFAULT_OVERSIZE_BYTES = 1_048_576  # 1 MiB
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


class NotJson(ValueError):
    """A text that is not JSON; the message says where."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def parse_json(text: str | bytes) -> Any:
    """The JSON value of ``text``; raises ``NotJson`` (also for nesting too deep to read)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        reason = str(exc)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")  # strictly: the standard library would guess UTF-16 or UTF-32
        except UnicodeDecodeError as exc:
            raise NotJson(f"not UTF-8 text (byte {exc.start} of {len(text)})") from None
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise NotJson("nested too deeply") from None
    except ValueError:
        raise NotJson(reason) from None


def payload_hash(payload: Any) -> bytes:
    """16 bytes that are equal exactly when two payloads are equal as JSON (keys sorted)."""
    try:
        canonical = orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):  # a lone surrogate or an integer beyond 64 bits
        canonical = json.dumps(payload, sort_keys=True, ensure_ascii=True).encode("ascii")
    return hashlib.sha1(canonical, usedforsecurity=False).digest()[:16]  # an identity, not a security check


def effective_statuses(catalog: Catalog, statuses: Mapping[str, str] | None) -> dict[str, Status]:
    """messageType -> status: the caller's (effective, from the registry) or else the declared one."""
    given = dict(statuses or {})
    found: dict[str, Status] = {}
    for contract in catalog:
        value = given.get(contract.message_type)
        if value is None:
            found[contract.message_type] = contract.status
            continue
        try:
            found[contract.message_type] = Status(str(value).lower())
        except ValueError:
            allowed = ", ".join(s.value for s in Status)
            raise ValueError(f"status {value!r} given for {contract.message_type} is not one of {allowed}") from None
    return found


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}.get(type(value), "null")


def _epoch_us(text: Any) -> int | None:
    if not isinstance(text, str):
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return (value - _EPOCH) // _MICROSECOND


def _same(left: Any, right: Any) -> bool:
    return type(left) is type(right) and left == right


def _header_path(name: str) -> str:
    return pointer_from_path(["properties", "headers", name])


def _normalized(name: str) -> str:
    return name.replace("-", "").replace("_", "").lower()


class _PiiRule:
    """PII_IN_HEADERS for one contract: its PII pointers, and the header names that would name them."""

    def __init__(self, contract: Contract) -> None:
        self.pointers = contract.pii.fields
        self.names: dict[str, str] = {}
        for pointer in self.pointers:
            try:
                self.names.setdefault(_normalized(split_pointer(pointer)[-1]), pointer)
            except ValueError:  # not a pointer: the linter reports it; nothing to match here
                continue

    def findings(self, headers: Mapping[str, Any], document: Mapping[str, Any]) -> list[Finding]:
        values = []
        for pointer in self.pointers:
            try:
                value = resolve_pointer(document, pointer)
            except KeyError:
                continue
            if isinstance(value, str | int | float) and not isinstance(value, bool) and value != "":
                values.append((pointer, value))
        found = []
        for name, value in headers.items():
            named = self.names.get(_normalized(str(name)))
            if named is not None:
                message = f"header {name!r} names the PII field {named}"
                found.append(Finding(Reason.PII_IN_HEADERS, _header_path(name), message))
            for pointer, pii in values:
                if _same(value, pii):
                    message = f"header {name!r} carries the value of {pointer}"
                    found.append(Finding(Reason.PII_IN_HEADERS, _header_path(name), message))
        return found


class RecordChecker:
    """Every record-level rule for one catalogue; build once per process (schemas compile here)."""

    def __init__(
        self,
        catalog: Catalog,
        *,
        oversize_bytes: int = DEFAULT_OVERSIZE_BYTES,
        statuses: Mapping[str, str] | None = None,
        validator: FastValidator | EnvelopeValidator | None = None,
    ) -> None:
        self.catalog = catalog
        self.oversize_bytes = oversize_bytes
        self.validator = validator or FastValidator(catalog)
        self.statuses = effective_statuses(catalog, statuses)
        self._pii = {c.message_type: _PiiRule(c) for c in catalog if c.pii.fields}

    def check(self, line: str | bytes) -> CheckedRecord:
        checked = CheckedRecord()
        try:
            record = parse_json(line)
        except NotJson as exc:
            checked.findings.append(Finding(Reason.MALFORMED, "", f"record line is not JSON: {exc}"))
            return checked
        if not isinstance(record, dict):
            message = f"record line is a JSON {_kind(record)}, not an object"
            checked.findings.append(Finding(Reason.MALFORMED, "", message))
            return checked
        self._read_delivery(record, checked)
        body = self._body(record, checked)
        if body is None:
            return checked
        try:
            document = parse_json(body)
        except NotJson as exc:
            checked.findings.append(Finding(Reason.MALFORMED, "/body", f"body is not JSON: {exc}"))
            return checked
        if not isinstance(document, dict):
            message = f"body is a JSON {_kind(document)}, not an object"
            checked.findings.append(Finding(Reason.MALFORMED, "/body", message))
            return checked
        self._check_document(record, document, checked)
        return checked

    # -- the record ----------------------------------------------------------------------------

    @staticmethod
    def _read_delivery(record: Mapping[str, Any], checked: CheckedRecord) -> None:
        exchange, routing_key, received_at = record.get("exchange"), record.get("routingKey"), record.get("receivedAt")
        checked.exchange = exchange if isinstance(exchange, str) else None
        checked.routing_key = routing_key if isinstance(routing_key, str) else None
        checked.received_at = received_at if isinstance(received_at, str) else None
        checked.received_us = _epoch_us(received_at)
        redelivered = record.get("redelivered")
        checked.redelivered = redelivered if isinstance(redelivered, bool) else None

    def _body(self, record: Mapping[str, Any], checked: CheckedRecord) -> str | None:
        """The body text, with MALFORMED when there is none and OVERSIZE when it is too big."""
        body, encoded = record.get("body"), record.get("bodyBase64")
        if isinstance(body, str):
            checked.body_bytes = len(body) if body.isascii() else len(body.encode("utf-8", "surrogatepass"))
            text: str | None = body
        elif body is not None:
            checked.findings.append(Finding(Reason.MALFORMED, "/body", f"body is a JSON {_kind(body)}, not a string"))
            return None
        elif isinstance(encoded, str):
            text = self._decoded(encoded, checked)
        else:
            message = "record has no body: body and bodyBase64 are both missing or null"
            checked.findings.append(Finding(Reason.MALFORMED, "/body", message))
            return None
        if checked.body_bytes > self.oversize_bytes:
            message = f"body is {checked.body_bytes} bytes, over the {self.oversize_bytes}-byte limit"
            checked.findings.append(Finding(Reason.OVERSIZE, "/body", message))
        return text

    @staticmethod
    def _decoded(encoded: str, checked: CheckedRecord) -> str | None:
        try:
            raw = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            checked.findings.append(Finding(Reason.MALFORMED, "/bodyBase64", "bodyBase64 is not valid base64"))
            return None
        checked.body_bytes = len(raw)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            message = f"body is not UTF-8 text (byte {exc.start} of {len(raw)})"
            checked.findings.append(Finding(Reason.MALFORMED, "/bodyBase64", message))
            return None

    # -- the message ---------------------------------------------------------------------------

    def _check_document(self, record: Mapping[str, Any], document: dict[str, Any], checked: CheckedRecord) -> None:
        findings = checked.findings
        findings.extend(
            Finding(Reason.ENVELOPE_INVALID, i.pointer, i.message) for i in self.validator.envelope_issues(document)
        )
        metadata = document.get("metadata")
        if isinstance(metadata, dict):
            message_type, message_id = metadata.get("messageType"), metadata.get("messageId")
            checked.message_type = message_type if isinstance(message_type, str) else None
            checked.message_id = message_id if isinstance(message_id, str) else None
            findings.extend(_header_mismatches(record, metadata))
        if checked.message_id is not None:
            checked.payload_hash = payload_hash(document.get("payload"))
        if checked.message_type is None:
            return
        contract = self.catalog.get(checked.message_type)
        if contract is None:
            message = f"messageType {_show(checked.message_type)} is not in the catalogue"
            findings.append(Finding(Reason.UNKNOWN_TYPE, "/metadata/messageType", message))
            return
        payload = document.get("payload")
        if isinstance(payload, dict):
            issues = self.validator.payload_issues(contract, payload)
            findings.extend(Finding(Reason.PAYLOAD_INVALID, i.pointer, i.message) for i in issues)
        findings.extend(_routing_mismatches(checked, contract))
        pii = self._pii.get(contract.message_type)
        if pii is not None:
            findings.extend(pii.findings(_headers(record), document))
        findings.extend(self._status_findings(contract))
        if contract.ordering is not None:
            _read_ordering(document, contract.ordering, checked)

    def _status_findings(self, contract: Contract) -> list[Finding]:
        status = self.statuses.get(contract.message_type, contract.status)
        if status is Status.RETIRED:
            return [Finding(Reason.RETIRED_TYPE, "/metadata/messageType", f"{contract.message_type} is retired")]
        if status is Status.DEPRECATED:
            sunset = f", sunset {contract.sunset.isoformat()}" if contract.sunset else ""
            message = f"{contract.message_type} is deprecated{sunset}"
            return [Finding(Reason.DEPRECATED_TYPE, "/metadata/messageType", message)]
        return []


def _headers(record: Mapping[str, Any]) -> Mapping[str, Any]:
    properties = record.get("properties")
    headers = properties.get("headers") if isinstance(properties, dict) else None
    return headers if isinstance(headers, dict) else {}


_REQUIRED_HEADER = "schema-version"
# (pointer into the record, label, header name, metadata field) of the mirrored headers compared when present
_OPTIONAL_HEADERS = tuple(
    (pointer_from_path(["properties", "headers", name]), f"header {name}", name, field)
    for name, field in HEADER_FIELDS.items()
    if name != _REQUIRED_HEADER
)


def _header_mismatches(record: Mapping[str, Any], metadata: Mapping[str, Any]) -> list[Finding]:
    """HEADER_MISMATCH: AMQP properties and mirrored headers that disagree with the metadata.

    ``messageId``, ``type`` and the ``schema-version`` header must be there; the other mirrored
    headers (``HEADER_FIELDS``) are compared when present.
    """
    properties = record.get("properties")
    if not isinstance(properties, dict):
        properties = {}
    headers = properties.get("headers")
    if not isinstance(headers, dict):
        headers = {}
    found = []
    value, expected = properties.get("messageId"), metadata.get("messageId")
    if value != expected or type(value) is not type(expected):
        found.append(_mismatch("/properties/messageId", "properties.messageId", value, "messageId", expected))
    value, expected = properties.get("type"), metadata.get("messageType")
    if value != expected or type(value) is not type(expected):
        found.append(_mismatch("/properties/type", "properties.type", value, "messageType", expected))
    value, expected = headers.get(_REQUIRED_HEADER), metadata.get(HEADER_FIELDS[_REQUIRED_HEADER])
    if value != expected or type(value) is not type(expected):
        path = pointer_from_path(["properties", "headers", _REQUIRED_HEADER])
        found.append(_mismatch(path, f"header {_REQUIRED_HEADER}", value, HEADER_FIELDS[_REQUIRED_HEADER], expected))
    if len(headers) > 1:
        for path, label, name, field in _OPTIONAL_HEADERS:
            if name in headers:
                value, expected = headers[name], metadata.get(field)
                if value != expected or type(value) is not type(expected):
                    found.append(_mismatch(path, label, value, field, expected))
    return found


def _mismatch(path: str, label: str, value: Any, field: str, expected: Any) -> Finding:
    return Finding(Reason.HEADER_MISMATCH, path, f"{label} is {_show(value)} but metadata.{field} is {_show(expected)}")


def _routing_mismatches(checked: CheckedRecord, contract: Contract) -> list[Finding]:
    found = []
    transport = contract.transport
    if checked.exchange != transport.exchange:
        message = f"exchange {_show(checked.exchange)} is not {contract.message_type}'s {transport.exchange!r}"
        found.append(Finding(Reason.ROUTING_MISMATCH, "/exchange", message))
    if checked.routing_key != transport.routing_key:
        message = f"routing key {_show(checked.routing_key)} is not {contract.message_type}'s {transport.routing_key!r}"
        found.append(Finding(Reason.ROUTING_MISMATCH, "/routingKey", message))
    return found


def _read_ordering(document: Mapping[str, Any], ordering: Ordering, checked: CheckedRecord) -> None:
    """The ordering key and sequence, when both are there and usable (a string or number; an integer)."""
    try:
        key = resolve_pointer(document, ordering.key)
        sequence = resolve_pointer(document, ordering.sequence)
    except KeyError:
        return
    if isinstance(key, bool) or not isinstance(key, str | int):
        return
    if isinstance(sequence, float) and sequence.is_integer():
        sequence = int(sequence)
    if isinstance(sequence, bool) or not isinstance(sequence, int) or not -(2**63) <= sequence < 2**63:
        return
    checked.order_key = str(key)
    checked.sequence = sequence

"""Record-level rules: one archive record (a JSON Lines line, docs/design.md#archive-record) -> ``CheckedRecord``.

Plain Python values in and out, so the rules are tested without Spark; the Spark job runs
``RecordChecker.check`` over Arrow batches. One function per rule; the cross-record rules
(DUPLICATE, CONFLICTING_DUPLICATE, OUT_OF_ORDER) are in ``contract_platform.validation.sequence``.

JSON is read with orjson and, when orjson refuses a text, once more with the standard library
(which reads lone surrogate escapes and refuses NaN here), so MALFORMED means "not JSON" for both.
A record or body nested deeper than ``limits.depth_limit()`` is MALFORMED too (no rule walks it), and
a record that makes any rule raise is UNCHECKABLE with the exception named: ``check`` never raises for
a record, so one record never fails a Spark task. A schema ``pattern`` the platform will not evaluate
(``contract_platform.patterns``: lookaround, backreferences...) makes UNCHECKABLE too, with its reason:
regular expressions run in linear time, so no record stalls its task either.

A record's messageType is ``archive_record.record_type`` (the body's, else the ``type`` property, else a
type header), read once the body is a JSON object; a property that disagrees with the body is HEADER_MISMATCH.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import orjson

from contract_platform.archive_record import json_safe, record_type
from contract_platform.catalog.documents import MISSING, pointer_from_path, pointer_reader
from contract_platform.catalog.model import Catalog, Contract, Status
from contract_platform.catalog.pointers import split_pointer
from contract_platform.envelope.properties import HEADER_FIELDS
from contract_platform.envelope.validation import EnvelopeValidator
from contract_platform.errors import PatternNotEvaluable, clipped
from contract_platform.limits import depth_limit, may_nest_beyond, nesting_beyond
from contract_platform.validation.model import CheckedRecord, Finding
from contract_platform.validation.reasons import Reason
from contract_platform.validation.schemas import FastValidator

__all__ = [
    "DEFAULT_OVERSIZE_BYTES",
    "NotJson",
    "RecordChecker",
    "effective_statuses",
    "header_mismatches",
    "parse_json",
    "payload_hash",
    "producer_of",
    "retirement_times",
    "statuses_given",
]

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
    """messageType -> status: the caller's (effective, from the registry) or else the declared one.

    A status may carry the moment it took effect after an ``@`` (``retired@2026-11-24T06:00:00+00:00``):
    see :func:`retirement_times`.
    """
    given = dict(statuses or {})
    found: dict[str, Status] = {}
    for contract in catalog:
        value = given.get(contract.message_type)
        if value is None:
            found[contract.message_type] = contract.status
            continue
        word, _, _ = str(value).partition("@")
        try:
            found[contract.message_type] = Status(word.lower())
        except ValueError:
            allowed = ", ".join(s.value for s in Status)
            raise ValueError(f"status {value!r} given for {contract.message_type} is not one of {allowed}") from None
    return found


def statuses_given(states: Iterable[Any]) -> dict[str, str]:
    """messageType -> status as ``effective_statuses`` and ``retirement_times`` read it, from the registry's
    effective states (``VersionState``): a retired version's carries the moment it was retired
    (``retired@<ISO time>``; retired is terminal, so its last update is the retirement), so what was archived
    before it is history, not a finding."""
    return {
        state.message_type: (
            f"{state.status}@{state.updated_at.isoformat()}" if state.status is Status.RETIRED else str(state.status)
        )
        for state in states
    }


def retirement_times(statuses: Mapping[str, str] | None) -> dict[str, int]:
    """messageType -> when it was retired (µs since the epoch), for statuses given as ``retired@<ISO time>``.

    A message received before its version was retired was published while the version was still in service
    (deprecated): it counts as DEPRECATED_TYPE, not as RETIRED_TYPE. Without a time, every message of a
    retired version is RETIRED_TYPE.
    """
    found: dict[str, int] = {}
    for message_type, value in (statuses or {}).items():
        word, sep, when = str(value).partition("@")
        if sep and word.lower() == Status.RETIRED.value:
            moment = _epoch_us(when)
            if moment is None:
                raise ValueError(f"status {value!r} given for {message_type}: {when!r} is not an ISO 8601 time")
            found[message_type] = moment
    return found


def _show(value: Any, most: int = 60) -> str:
    return clipped(repr(value), most)


_TEXT_FIELDS = ("exchange", "routing_key", "received_at", "message_type", "message_id", "order_key", "retired_producer")


def _encodable(text: str) -> str:
    """``text``, with any lone surrogate (JSON allows ``"\\ud800"``) written as its escape: Arrow and every
    writer after it need UTF-8, and one such string must not fail the Spark task that holds the record."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _make_encodable(checked: CheckedRecord) -> None:
    for name in _TEXT_FIELDS:
        value = getattr(checked, name)
        if value is not None:
            setattr(checked, name, _encodable(value))
    findings = checked.findings
    for index, finding in enumerate(findings):
        path, message = _encodable(finding.path), _encodable(finding.message)
        if path is not finding.path or message is not finding.message:
            findings[index] = Finding(finding.code, path, message)


def _too_deep(value: Any, what: str, limit: int) -> str | None:
    """A MALFORMED message when ``value`` nests past ``limit``, else None."""
    pointer = nesting_beyond(value, limit)
    if pointer is None:
        return None
    return f"{what} nests deeper than {limit} levels (at {_show(pointer, 120)}); no rule reads it"


def _kind(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}.get(type(value), "null")


def _json_object(text: str | bytes, what: str, pointer: str, checked: CheckedRecord) -> dict[str, Any] | None:
    """``text`` parsed as a JSON object; None, with a MALFORMED finding at ``pointer`` naming ``what``, if not one."""
    try:
        value = parse_json(text)
    except NotJson as exc:
        checked.findings.append(Finding(Reason.MALFORMED, pointer, f"{what} is not JSON: {exc}"))
        return None
    if type(value) is not dict:
        checked.findings.append(Finding(Reason.MALFORMED, pointer, f"{what} is a JSON {_kind(value)}, not an object"))
        return None
    return value


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
        self.readers = [(pointer, pointer_reader(pointer)) for pointer in self.pointers]
        self.names: dict[str, str] = {}
        for pointer in self.pointers:
            try:
                self.names.setdefault(_normalized(split_pointer(pointer)[-1]), pointer)
            except ValueError:  # not a pointer: the linter reports it; nothing to match here
                continue
        self._named: dict[str, str | None] = {}  # header name -> the PII pointer it names (names repeat)

    def _names_pii(self, name: str) -> str | None:
        named: str | None = self._named.get(name, MISSING)
        if named is MISSING:
            named = self.names.get(_normalized(name))
            if len(self._named) < 10_000:
                self._named[name] = named
        return named

    def findings(self, headers: Mapping[str, Any], document: Mapping[str, Any]) -> list[Finding]:
        values = []
        for pointer, read in self.readers:
            value = read(document)
            if isinstance(value, str | int | float) and not isinstance(value, bool) and value != "":
                values.append((pointer, value))
        found = []
        for name, value in headers.items():
            named = self._names_pii(str(name))
            if named is not None:
                message = f"header {name!r} names the PII field {named}"
                found.append(Finding(Reason.PII_IN_HEADERS, _header_path(name), message))
            for pointer, pii in values:
                if _same(value, pii):
                    message = f"header {name!r} carries the value of {pointer}"
                    found.append(Finding(Reason.PII_IN_HEADERS, _header_path(name), message))
        return found


class _ContractRules:
    """What the record-level rules need of one contract, worked out once per checker."""

    def __init__(
        self,
        contract: Contract,
        status: Status,
        validator: FastValidator | EnvelopeValidator,
        retired_us: int | None = None,
    ) -> None:
        self.contract = contract
        self.exchange = contract.transport.exchange
        self.routing_key = contract.transport.routing_key
        self.pii = _PiiRule(contract) if contract.pii.fields else None
        self.status = _status_findings(contract, status)
        self.retired_us = retired_us if status is Status.RETIRED else None
        self.in_service = _status_findings(contract, Status.DEPRECATED)  # before it was retired
        self.ordering = None
        if contract.ordering is not None:
            self.ordering = (pointer_reader(contract.ordering.key), pointer_reader(contract.ordering.sequence))
        self.payload_issues = partial(validator.payload_issues, contract)

    def status_findings(self, received_us: int | None) -> tuple[Finding, ...]:
        """The status finding of a message received at ``received_us`` (unknown time: as if received now)."""
        if self.retired_us is not None and received_us is not None and received_us < self.retired_us:
            return self.in_service
        return self.status


def _status_findings(contract: Contract, status: Status) -> tuple[Finding, ...]:
    if status is Status.RETIRED:
        return (Finding(Reason.RETIRED_TYPE, "/metadata/messageType", f"{contract.message_type} is retired"),)
    if status is Status.DEPRECATED:
        sunset = f", sunset {contract.sunset.isoformat()}" if contract.sunset else ""
        message = f"{contract.message_type} is deprecated{sunset}"
        return (Finding(Reason.DEPRECATED_TYPE, "/metadata/messageType", message),)
    return ()


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
        retired = retirement_times(statuses)
        self.depth_limit = depth_limit()  # read once: the environment is slow to ask per record
        self._rules = {
            c.message_type: _ContractRules(
                c, self.statuses.get(c.message_type, c.status), self.validator, retired.get(c.message_type)
            )
            for c in catalog
        }

    def check(self, line: str | bytes) -> CheckedRecord:
        """Every record-level finding of one line; never raises for what the line holds."""
        checked = CheckedRecord()
        try:
            self._check(line, checked)
        except PatternNotEvaluable as exc:  # the schema's, not the record's: no verdict, said why
            message = (
                f"not judged: the regular expression {clipped(exc.pattern, 60)!r} cannot be evaluated: {exc.reason}"
            )
            checked.findings.append(Finding(Reason.UNCHECKABLE, "", message))
        except Exception as exc:  # any rule, any input: reported, never raised into the Spark task
            message = f"a rule raised {type(exc).__name__} on this record: {_show(str(exc))}"
            checked.findings.append(Finding(Reason.UNCHECKABLE, "", message))
        _make_encodable(checked)
        return checked

    def _check(self, line: str | bytes, checked: CheckedRecord) -> None:
        record = _json_object(line, "record line", "", checked)
        if record is None:
            return
        # The line holds the body's text too: with no more brackets than the limit, neither can nest past it.
        deep = may_nest_beyond(line, self.depth_limit)
        if deep and (found := _too_deep(record, "record line", self.depth_limit)) is not None:
            checked.findings.append(Finding(Reason.MALFORMED, "", found))
            return
        _read_delivery(record, checked)
        archive_error = record.get("archiveError")
        if archive_error is not None:
            message = f"the archiver kept this delivery as a fallback record: {_show(archive_error, 200)}"
            checked.findings.append(Finding(Reason.MALFORMED, "/properties", message))
        body = self._body(record, checked)
        if body is None:
            return
        document = _json_object(body, "body", "/body", checked)
        if document is None:
            return
        if type(record.get("body")) is not str:  # decoded from bodyBase64: its brackets were not in the line
            deep = may_nest_beyond(body, self.depth_limit)
        if deep and (found := _too_deep(document, "body", self.depth_limit)) is not None:
            checked.findings.append(Finding(Reason.MALFORMED, "/body", found))
            return
        self._check_document(record, document, checked)

    # -- the record ----------------------------------------------------------------------------

    def _body(self, record: Mapping[str, Any], checked: CheckedRecord) -> str | None:
        """The body text, with MALFORMED when there is none and OVERSIZE when it is too big."""
        body = record.get("body")
        if type(body) is str:
            checked.body_bytes = len(body) if body.isascii() else len(body.encode("utf-8", "surrogatepass"))
            text: str | None = body
        elif body is not None:
            checked.findings.append(Finding(Reason.MALFORMED, "/body", f"body is a JSON {_kind(body)}, not a string"))
            return None
        elif isinstance(encoded := record.get("bodyBase64"), str):
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
        issues = self.validator.envelope_issues(document)
        if issues:
            findings.extend(Finding(Reason.ENVELOPE_INVALID, i.pointer, i.message) for i in issues)
        checked.message_type = record_type(record, document)
        metadata = document.get("metadata")
        if type(metadata) is dict:
            message_id = metadata.get("messageId")
            checked.message_id = message_id if type(message_id) is str else None
            mismatches = _header_mismatches(record, metadata)
            if mismatches:
                findings.extend(mismatches)
        payload = document.get("payload", MISSING)
        if checked.message_id is not None:
            checked.payload_hash = payload_hash(None if payload is MISSING else payload)
        if checked.message_type is None:
            return
        rules = self._rules.get(checked.message_type)
        if rules is None:
            message = f"messageType {_show(checked.message_type)} is not in the catalogue"
            findings.append(Finding(Reason.UNKNOWN_TYPE, "/metadata/messageType", message))
            return
        if type(payload) is dict:
            issues = rules.payload_issues(payload)
            if issues:
                findings.extend(Finding(Reason.PAYLOAD_INVALID, i.pointer, i.message) for i in issues)
        if checked.exchange != rules.exchange or checked.routing_key != rules.routing_key:
            findings.extend(_routing_mismatches(checked, rules.contract))
        if rules.pii is not None:
            pii = rules.pii.findings(_headers(record), document)
            if pii:
                findings.extend(pii)
        if rules.status:
            status = rules.status_findings(checked.received_us)
            findings.extend(status)
            if any(finding.code is Reason.RETIRED_TYPE for finding in status):
                checked.retired_producer = producer_of(record, metadata)
        if rules.ordering is not None:
            _read_ordering(document, rules.ordering, checked)


PRODUCER_MOST = 200  # characters of a producer's name kept: the name is whatever the client sent


def producer_of(record: Mapping[str, Any], metadata: Any) -> str:
    """Who sent the message of ``record``: the envelope's ``metadata.producer``, else the AMQP ``app_id``
    (``properties.appId``), else the ``producer`` header; "" when none of them names one."""
    named = metadata.get("producer") if type(metadata) is dict else None
    if type(named) is not str or not named:
        properties = record.get("properties")
        named = properties.get("appId") if isinstance(properties, dict) else None
    if type(named) is not str or not named:
        named = _headers(record).get("producer")
    return clipped(named, PRODUCER_MOST) if type(named) is str else ""


def _read_delivery(record: Mapping[str, Any], checked: CheckedRecord) -> None:
    exchange, routing_key, received_at = record.get("exchange"), record.get("routingKey"), record.get("receivedAt")
    checked.exchange = exchange if type(exchange) is str else None
    checked.routing_key = routing_key if type(routing_key) is str else None
    if type(received_at) is str:
        checked.received_at = received_at
        checked.received_us = _epoch_us(received_at)
    redelivered = record.get("redelivered")
    checked.redelivered = redelivered if type(redelivered) is bool else None


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


def header_mismatches(properties: Any, metadata: Mapping[str, Any]) -> list[Finding]:
    """HEADER_MISMATCH of a delivery's pika ``BasicProperties`` against its envelope's metadata: the same rule as
    an archived record's (paths under ``/properties``), for a consumer that checks before its handler runs."""
    headers = getattr(properties, "headers", None)
    view = {
        "messageId": getattr(properties, "message_id", None),
        "type": getattr(properties, "type", None),
        "headers": _as_archived(headers) if isinstance(headers, Mapping) else {},
    }
    return _header_mismatches({"properties": view}, metadata)


_PLAIN = frozenset({str, int, bool, type(None)})


def _as_archived(headers: Mapping[str, Any]) -> Mapping[str, Any]:
    """Headers as the archive record keeps them (``json_safe``: bytes as text...); plain ones as they are."""
    if type(headers) is dict and _PLAIN.issuperset(map(type, headers.values())):
        return headers
    safe: Mapping[str, Any] = json_safe(headers)
    return safe


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


def _read_ordering(document: Mapping[str, Any], ordering: tuple[Any, Any], checked: CheckedRecord) -> None:
    """The ordering key and sequence, when both are there and usable (a string or number; an integer)."""
    read_key, read_sequence = ordering
    key = read_key(document)
    sequence = read_sequence(document)
    if key is MISSING or sequence is MISSING:
        return
    if isinstance(key, bool) or not isinstance(key, str | int):
        return
    if isinstance(sequence, float) and sequence.is_integer():
        sequence = int(sequence)
    if isinstance(sequence, bool) or not isinstance(sequence, int) or not -(2**63) <= sequence < 2**63:
        return
    checked.order_key = str(key)
    checked.sequence = sequence

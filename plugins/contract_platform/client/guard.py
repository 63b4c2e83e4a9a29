"""The guard at a service's boundary: one message in, either the envelope its handler may trust, or why not.

Pure (no broker): the consumer (``client.consumer``), the test kit (``client.testkit``) and the benchmarks run
the same ``Guard``. A delivery is judged in this order, and the first failure decides, with a stable reason
code (``RejectReason``; the archive validation's codes where they mean the same, docs/design.md#reason-codes)::

    1. header peek     the type from the AMQP ``type`` property, else a type header (archive_record.peek_type);
                       the body is not read. No type: HEADER_MISMATCH. A type the service does not read and
                       cannot read through a migration: UNKNOWN_TYPE (a permanent failure), unless the service
                       registered it as unchecked; a major it reads only through a migration that does not go
                       that way: NOT_MIGRATABLE
    2. size            over the contract's ``limits.maxBodyBytes``: OVERSIZE (nothing parsed)
    3. parse           not UTF-8 JSON, not an object, or nested deeper than ``limits.depth_limit()``: MALFORMED
    4. envelope        the envelope standard: ENVELOPE_INVALID
    5. properties      ``message_id``, ``type`` and the mirrored headers against the metadata: HEADER_MISMATCH
    6. payload         the contract's schema, strictly, then what ``client.tolerance`` lets through (unknown
                       enum values with a passthrough or fallback policy; added fields where the compatibility
                       mode promises forward reading): PAYLOAD_INVALID
    7. migration       into the version the service reads (``migration.yaml`` forward, or read backwards by
                       ``migration.inverse``; fewest steps first), then
                       the target's schema: NOT_MIGRATABLE

Anything that raises inside the guard is UNCHECKABLE with the exception's type, so no message ever stops a
consumer. A rejection names the reason, the JSON pointer and the schema keyword; its ``detail`` never quotes a
payload value (it travels in the dead-letter copy's headers).

``check_outgoing`` is the publisher's side: the same validator, fail fast, ``ContractViolation`` naming the
first problem's pointer and keyword, nothing sent.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from contract_platform.archive_record import peek_type
from contract_platform.catalog.model import Contract
from contract_platform.client.bundle import Bundle, MigrationStep
from contract_platform.client.tolerance import Tolerance, classify
from contract_platform.envelope.validation import SchemaIssue, describe_errors
from contract_platform.errors import ContractViolation, MessageNotMigratable, PatternNotEvaluable, clipped
from contract_platform.limits import depth_limit, may_nest_beyond, nesting_beyond
from contract_platform.validation.reasons import Reason
from contract_platform.validation.records import NotJson, header_mismatches, parse_json

__all__ = ["Guard", "Inspected", "RejectReason", "Rejection", "Unchecked"]


class RejectReason(StrEnum):
    """Why a message never reached its handler (the guard), or why the handler turned it down."""

    MALFORMED = Reason.MALFORMED.value
    UNCHECKABLE = Reason.UNCHECKABLE.value
    ENVELOPE_INVALID = Reason.ENVELOPE_INVALID.value
    UNKNOWN_TYPE = Reason.UNKNOWN_TYPE.value
    PAYLOAD_INVALID = Reason.PAYLOAD_INVALID.value
    HEADER_MISMATCH = Reason.HEADER_MISMATCH.value
    OVERSIZE = Reason.OVERSIZE.value
    NOT_MIGRATABLE = "NOT_MIGRATABLE"  # no migration goes that way, or this message cannot be migrated
    BUSINESS_REJECTED = "BUSINESS_REJECTED"  # the handler raised Reject: valid, but the service will not take it
    HANDLER_FAILED = "HANDLER_FAILED"  # the handler raised something else, again on redelivery

    @property
    def origin(self) -> str:
        """``contract``: the guard judged the message against its contract; ``handler``: the service did."""
        return "handler" if self in (RejectReason.BUSINESS_REJECTED, RejectReason.HANDLER_FAILED) else "contract"


@dataclass(frozen=True)
class Rejection:
    """Why a message does not reach the handler; every field can travel in a header (no payload value)."""

    reason: RejectReason
    pointer: str  # JSON pointer: into the envelope (/metadata, /payload) or the delivery (/properties, /body)
    keyword: str  # the schema keyword that failed, '' when no schema is at fault
    detail: str
    message_type: str | None  # the type the delivery claimed (peeked), when it claimed one
    contract_version: str | None  # the bundle's version of that type, when the bundle has it

    @property
    def contract_label(self) -> str:
        return f"{self.message_type}@{self.contract_version}" if self.contract_version else str(self.message_type)


@dataclass(slots=True)
class Inspected:
    """A message the handler may trust: the envelope in the version the service reads."""

    envelope: dict[str, Any]
    message_type: str  # the version handed over (what the service registered)
    received_type: str  # the version on the wire
    migrated: bool
    tolerated: tuple[Tolerance, ...] = ()


@dataclass(frozen=True)
class Unchecked:
    """A type the service reads without a contract (``on_unchecked``): the parsed body, or None when not JSON."""

    message_type: str
    document: Any


@dataclass(frozen=True)
class _Plan:
    """What to do with one received type, decided once per guard."""

    source: Contract
    target: Contract
    steps: tuple[MigrationStep, ...] = ()
    refusal: str | None = None  # why this major cannot be read as the one the service reads


@dataclass
class Guard:
    """Judges deliveries for a service that reads ``reads`` (message types of the bundle) and ``unchecked`` types."""

    bundle: Bundle
    reads: Collection[str]
    unchecked: Collection[str] = ()
    _plans: dict[str, _Plan] = field(init=False, repr=False)
    _depth: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        missing = sorted(set(self.reads) - set(self.bundle.message_types))
        if missing:
            from contract_platform.errors import UsageError

            raise UsageError(
                f"{', '.join(missing)}: not in the bundle {self.bundle.where} (it holds {', '.join(self.bundle.message_types)}); "
                "export a bundle that includes them"
            )
        self._plans = {t: plan for t in self.bundle.message_types if (plan := self._plan(t)) is not None}
        self._depth = depth_limit()

    def _plan(self, received: str) -> _Plan | None:
        source = self.bundle.contract(received)
        assert source is not None
        if received in self.reads:
            return _Plan(source, source)
        family = [t for t in self.reads if self.bundle.contract(t).family == source.family]  # type: ignore[union-attr]  # reads are in the bundle
        if not family:
            return None
        for wanted in sorted(family, key=lambda t: self.bundle.contract(t).major):  # type: ignore[union-attr]  # as above
            steps = self.bundle.route(received, wanted)
            if steps is not None:
                return _Plan(source, steps[-1].target, tuple(steps))
        wanted = family[0]
        directions = ", ".join(f"{s} -> {t}" for s, t in sorted(self.bundle.migrations)) or "none"
        backwards = self.bundle.not_backwards.get((received, wanted))
        why = (
            f"; {received} -> {wanted} would read a migration.yaml backwards, which cannot be: {backwards}"
            if backwards
            else ""
        )
        return _Plan(
            source,
            source,
            refusal=f"this service reads {wanted}, and no migration.yaml of the bundle reads {received} as it "
            f"(migrations: {directions}){why}",
        )

    # -- consuming -----------------------------------------------------------------------------------------

    def peek(self, properties: Any) -> str | None:
        """The message type of a delivery from its properties alone (the body is not read)."""
        return peek_type(properties)[0]

    def inspect(self, properties: Any, body: bytes) -> Inspected | Unchecked | Rejection:
        """Judge one delivery; never raises for what the delivery holds."""
        message_type = None
        try:
            message_type = peek_type(properties)[0]
            return self._inspect(message_type, properties, body)
        except PatternNotEvaluable as exc:
            return self._reject(RejectReason.UNCHECKABLE, "", "pattern", f"not judged: {exc.reason}", message_type)
        except Exception as exc:  # any input, any rule: one message never stops the consumer
            detail = f"the guard raised {type(exc).__name__} on this message"
            return self._reject(RejectReason.UNCHECKABLE, "", "", detail, message_type)

    def _inspect(self, message_type: str | None, properties: Any, body: bytes) -> Inspected | Unchecked | Rejection:
        if message_type is None:
            detail = "no AMQP type property and no type header: the envelope standard sets type = messageType"
            return self._reject(RejectReason.HEADER_MISMATCH, "/properties/type", "", detail, None)
        plan = self._plans.get(message_type)
        if plan is None:
            if message_type in self.unchecked:
                return Unchecked(message_type, _parse(body) if len(body) <= _UNCHECKED_MOST else None)
            detail = f"type {clipped(message_type, 120)!r} is not one this service reads"
            return self._reject(RejectReason.UNKNOWN_TYPE, "/properties/type", "", detail, message_type)
        if plan.refusal is not None:
            return self._reject(RejectReason.NOT_MIGRATABLE, "/metadata/messageType", "", plan.refusal, message_type)
        source = plan.source
        if len(body) > source.max_body_bytes:
            detail = f"the body is {len(body)} bytes, over the {source.max_body_bytes} bytes of maxBodyBytes"
            return self._reject(RejectReason.OVERSIZE, "/body", "", detail, message_type)
        envelope = _parse(body)
        if type(envelope) is not dict:
            detail = "the body is not UTF-8 JSON" if envelope is _NOT_JSON else "the body is not a JSON object"
            return self._reject(RejectReason.MALFORMED, "/body", "", detail, message_type)
        if may_nest_beyond(body, self._depth) and (deep := nesting_beyond(envelope, self._depth)) is not None:
            detail = f"the body nests deeper than {self._depth} levels"
            return self._reject(RejectReason.MALFORMED, clipped(deep, 200), "", detail, message_type)
        validator = self.bundle.validator
        issues = validator.envelope_issues(envelope)
        if issues:
            return self._schema(RejectReason.ENVELOPE_INVALID, issues, "the envelope standard", message_type)
        mismatches = header_mismatches(properties, envelope["metadata"])
        if mismatches:
            first = mismatches[0]  # its message quotes both values: the detail names the place only
            more = f" (and {len(mismatches) - 1} more)" if len(mismatches) > 1 else ""
            detail = f"{first.path} disagrees with the envelope's metadata, which the standard mirrors there{more}"
            return self._reject(RejectReason.HEADER_MISMATCH, first.path, "", detail, message_type)
        tolerated: tuple[Tolerance, ...] = ()
        if validator.payload_issues(source, envelope["payload"]):
            outcome = self._tolerated(source, envelope["payload"], message_type)
            if isinstance(outcome, Rejection):
                return outcome
            tolerated = outcome
        if not plan.steps:
            return Inspected(envelope, message_type, message_type, False, tolerated)
        return self._migrated(plan, envelope, tolerated)

    def _tolerated(self, contract: Contract, payload: Any, message_type: str) -> tuple[Tolerance, ...] | Rejection:
        """What ``client.tolerance`` lets through of a payload the schema refuses, fallbacks applied; else why not."""
        schema = self.bundle.reference.payload_validator(contract)
        tolerated, refused = classify(schema.iter_errors(payload), contract.compatibility)
        if not refused and any(t.substitutes for t in tolerated):
            for tolerance in tolerated:
                if tolerance.substitutes:
                    _replace(payload, tolerance.path, tolerance.fallback)
            # a fallback in place may meet or break a condition elsewhere (if/then): judged once more
            again, refused = classify(schema.iter_errors(payload), contract.compatibility)
            if not refused and any(t.substitutes for t in again):  # a fallback the enum does not list (lint says so)
                refused = [error for error in schema.iter_errors(payload) if error.validator == "enum"][:1]
        if refused:
            issues = describe_errors(refused, prefix="/payload")
            return self._schema(RejectReason.PAYLOAD_INVALID, issues, contract.message_type, message_type)
        return tuple(tolerated)

    def _migrated(
        self, plan: _Plan, envelope: dict[str, Any], tolerated: tuple[Tolerance, ...]
    ) -> Inspected | Rejection:
        received = plan.source.message_type
        current: dict[str, Any] = envelope
        for step in plan.steps:
            try:
                current = step.migrate(current)
            except MessageNotMigratable as exc:
                detail = f"{step.source.message_type} -> {step.target.message_type}: {clipped(exc.reason, 200)}"
                return self._reject(RejectReason.NOT_MIGRATABLE, exc.pointer, "", detail, received)
        target = plan.target
        issues = self.bundle.validator.envelope_issues(current) or self.bundle.validator.payload_issues(
            target, current["payload"]
        )
        if issues:
            first = issues[0]
            keyword = _keyword(first)
            detail = f"migrated to {target.message_type}, the message is not valid there: {keyword} at {first.pointer}"
            return self._reject(RejectReason.NOT_MIGRATABLE, first.pointer, keyword, detail, received)
        return Inspected(current, target.message_type, received, True, tolerated)

    def _schema(self, reason: RejectReason, issues: list[SchemaIssue], against: str, message_type: str) -> Rejection:
        first = issues[0]
        keyword = _keyword(first)
        more = f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""
        detail = f"fails {against}: {keyword} at {first.pointer or '/'}{more}"
        return self._reject(reason, first.pointer, keyword, detail, message_type)

    def _reject(
        self, reason: RejectReason, pointer: str, keyword: str, detail: str, message_type: str | None
    ) -> Rejection:
        contract = self.bundle.contract(message_type) if message_type else None
        return Rejection(reason, pointer, keyword, detail, message_type, contract.version if contract else None)

    # -- publishing ----------------------------------------------------------------------------------------

    def check_outgoing(self, envelope: Any, *, producer: str | None = None) -> Contract:
        """The contract of a valid envelope to publish; else ``ContractViolation`` (first problem's pointer and
        keyword; every problem in ``errors``). ``producer``: the publishing service, held to ``Contract.producers``."""
        message_type = _message_type(envelope)
        contract = self.bundle.contract(message_type) if message_type else None
        validator = self.bundle.validator
        issues = validator.envelope_issues(envelope)
        if issues:
            raise _violation(RejectReason.ENVELOPE_INVALID, issues, message_type, "the envelope standard")
        if contract is None:
            shown = repr(clipped(message_type or "", 120))
            raise ContractViolation(
                f"messageType {shown} is not in the bundle {self.bundle.where} (it holds "
                f"{', '.join(self.bundle.message_types)}): nothing was published",
                reason=RejectReason.UNKNOWN_TYPE,
                pointer="/metadata/messageType",
                keyword="",
                message_type=message_type,
            )
        issues = validator.payload_issues(contract, envelope["payload"])
        if issues:
            raise _violation(
                RejectReason.PAYLOAD_INVALID, issues, message_type, f"{contract.message_type} {contract.version}"
            )
        allowed = contract.producers
        sender = envelope["metadata"]["producer"]
        if allowed is not None and (sender not in allowed or (producer is not None and producer != sender)):
            who = f"{sender!r}" + (
                f" (this publisher is {producer!r})" if producer is not None and producer != sender else ""
            )
            raise ContractViolation(
                f"{contract.message_type} is sent by {', '.join(allowed)}, not by {who}: nothing was published",
                reason=RejectReason.ENVELOPE_INVALID,
                pointer="/metadata/producer",
                keyword="producer",
                message_type=message_type,
            )
        return contract


_UNCHECKED_MOST = 1 << 20  # an unchecked type's body is parsed for the handler up to this size
_NOT_JSON: Any = object()


def _parse(body: bytes) -> Any:
    """The JSON value of ``body`` (strict UTF-8), or ``_NOT_JSON``: the platform's reader of message bodies
    (``validation.records.parse_json``: orjson, then the standard library for the few texts orjson refuses)."""
    try:
        return parse_json(body)
    except NotJson:
        return _NOT_JSON


def _replace(document: Any, path: tuple[str | int, ...], value: Any) -> None:
    parent = document
    for token in path[:-1]:
        parent = parent[token]
    parent[path[-1]] = value


def _keyword(issue: SchemaIssue) -> str:
    """The keyword of an issue (``describe_errors`` writes ``<keyword>: <message>``)."""
    return issue.message.split(":", 1)[0]


def _message_type(envelope: Any) -> str | None:
    metadata = envelope.get("metadata") if type(envelope) is dict or isinstance(envelope, Mapping) else None
    value = metadata.get("messageType") if type(metadata) is dict or isinstance(metadata, Mapping) else None
    return value if type(value) is str else None


def _violation(
    reason: RejectReason, issues: list[SchemaIssue], message_type: str | None, against: str
) -> ContractViolation:
    first = issues[0]
    keyword = _keyword(first)
    more = f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""
    return ContractViolation(
        f"not valid against {against}: {keyword} at {first.pointer or '/'}{more}; nothing was published",
        reason=reason,
        pointer=first.pointer,
        keyword=keyword,
        message_type=message_type,
        errors=[(issue.pointer, issue.message) for issue in issues],
    )

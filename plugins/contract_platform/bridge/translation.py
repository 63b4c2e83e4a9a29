"""What the bridge does to one message: the migration route, and a v1 delivery -> v2 message or parked copy.

::

    route = resolve_route(catalog, "billing.invoice-issued.v2")   # or the path of its migration.yaml
    translate = Translator(route, target_validator(catalog), parking_lot)
    translate.prepare(body)                       -> Migrated | Unmigratable   (pure, picklable)
    translate.finish(prepared, properties, body)  -> relay.Outgoing

A message that cannot be migrated (``MessageNotMigratable``, not JSON, nested deeper than
``limits.depth_limit()``, not a valid target envelope, too large) is never dropped: it becomes a copy of
the original for the parking lot, with every original property and the ``x-park-*`` headers. So does a
message whose translation raised anything at all (``failed``: the exception's type is the reason, never
its text), so one message never stops the bridge. No payload value ever goes into a header (the reason of
a ``MessageNotMigratable`` names the rule and the pointer, never the value; a schema issue is named by its
keyword only).
"""

from __future__ import annotations

import copy
import json
import struct
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import orjson
import pika.exceptions as px

from contract_platform.amqp.encoded import EncodedProperties, encode_properties
from contract_platform.amqp.publisher import encode_compact, plain_properties
from contract_platform.bridge.relay import Outgoing
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.envelope.properties import amqp_properties
from contract_platform.envelope.validation import EnvelopeValidator, SchemaIssue
from contract_platform.errors import MessageNotMigratable, MigrationSpecError, Problem, UsageError, clipped
from contract_platform.limits import depth_limit, may_nest_beyond, nesting_beyond
from contract_platform.migration import MigrationSpec, check_spec, compile_spec, parse_spec

__all__ = [
    "PUBLISHED",
    "MigrationRoute",
    "Migrated",
    "ParkReason",
    "Translator",
    "Unmigratable",
    "park_headers",
    "resolve_route",
    "target_validator",
]

PUBLISHED = "published"  # the label of a message published to the target (parked ones carry their reason)
_LONGEST_POINTER = 200  # x-park-pointer of a message nested too deep: its first characters


class ParkReason(StrEnum):
    """Why a message went to the parking lot (``x-park-reason``); stable codes."""

    NOT_JSON = "not-json"  # the body is not a UTF-8 JSON document
    NOT_MIGRATABLE = "not-migratable"  # MessageNotMigratable: the spec cannot migrate this message
    INVALID_TARGET = "invalid-target"  # migrated, but the result is not a valid target envelope
    OVERSIZE = "oversize"  # migrated and valid, but over the target's maxBodyBytes
    TOO_DEEP = "too-deep"  # the body nests deeper than limits.depth_limit(): never walked
    FAILED = "failed"  # translating or publishing it raised (x-park-detail names the exception's type)


@dataclass(frozen=True)
class MigrationRoute:
    """What one bridge migrates: ``source`` messages into ``target`` ones by ``spec``."""

    source: Contract
    target: Contract
    spec: MigrationSpec


class TargetValidator(Protocol):
    def envelope_issues(self, document: Any) -> list[SchemaIssue]: ...

    def payload_issues(self, contract: Contract, payload: Any) -> list[SchemaIssue]: ...


def target_validator(catalog: Catalog) -> TargetValidator:
    """EnvelopeValidator's verdicts; through its jsonschema-rs fast path when that module is installed."""
    try:
        from contract_platform.validation.schemas import FastValidator
    except ImportError:  # the fast path is optional: same verdicts, about ten times slower
        return EnvelopeValidator(catalog)
    return FastValidator(catalog)


# -- one message ------------------------------------------------------------------------------------


def park_headers(
    properties: Any, reason: ParkReason, pointer: str, detail: str, route: MigrationRoute
) -> dict[str, Any]:
    """The original headers plus the park headers (no payload value ever goes into a header)."""
    headers = dict(getattr(properties, "headers", None) or {})
    headers.update(
        {
            "x-park-reason": str(reason),
            "x-park-pointer": pointer,
            "x-park-detail": detail,
            "x-park-source-type": route.source.message_type,
            "x-park-target-type": route.target.message_type,
        }
    )
    return headers


class Migrated(NamedTuple):
    """A message the target will get: its body and AMQP properties (``amqp_properties`` of the envelope), the
    properties already in pika's wire form (``amqp.encoded``): encoded where ``prepare`` runs, in the helper."""

    body: bytes
    properties: bytes
    message_id: str


class Unmigratable(NamedTuple):
    """A message for the parking lot, and why (``x-park-*`` headers)."""

    reason: ParkReason
    pointer: str
    detail: str


class Translator:
    """A v1 delivery -> the confirmed publish it becomes: the v2 message, or a parked copy of the original.

    ``prepare(body)`` does the work (parse, migrate, validate, encode) and is pure, so a relay may run it
    in a helper process; ``finish(prepared, properties, body)`` builds the publish.
    """

    def __init__(self, route: MigrationRoute, validator: TargetValidator, parking_lot: str) -> None:
        self.route = route
        self.validator = validator
        self.parking_lot = parking_lot
        self._migrate = compile_spec(route.spec).for_target(route.target)  # = migrate_envelope(spec, ., target)
        self.depth_limit = depth_limit()  # read once: the environment is slow to ask per message

    def __call__(self, body: bytes, properties: Any) -> Outgoing:
        return self.finish(self.prepare(body), properties, body)

    def prepare(self, body: bytes) -> Migrated | Unmigratable:
        """What ``body`` becomes; never raises for anything in the message (whatever raises parks it)."""
        try:
            return self._prepare(body)
        except Exception as exc:  # not only the anticipated failures: one message must never stop the bridge
            return Unmigratable(ParkReason.FAILED, "", f"translating it raised {type(exc).__name__}")

    def _prepare(self, body: bytes) -> Migrated | Unmigratable:
        envelope = _parse(body)
        if envelope is None:
            return Unmigratable(ParkReason.NOT_JSON, "", "the body is not a UTF-8 JSON document")
        limit = self.depth_limit
        if may_nest_beyond(body, limit) and (pointer := nesting_beyond(envelope, limit)) is not None:
            shown = clipped(pointer, _LONGEST_POINTER)
            return Unmigratable(ParkReason.TOO_DEEP, shown, f"the body nests deeper than {limit} levels")
        target = self.route.target
        try:
            migrated = self._migrate(envelope)
        except MessageNotMigratable as exc:
            return Unmigratable(ParkReason.NOT_MIGRATABLE, exc.pointer, exc.reason)
        issues = self.validator.envelope_issues(migrated) or self.validator.payload_issues(target, migrated["payload"])
        if issues:
            return self._invalid(issues)
        try:
            new_body = encode_compact(migrated)
            properties = amqp_properties(migrated)
            encoded = encode_properties(properties)
        except (KeyError, TypeError, ValueError, struct.error, px.AMQPError) as exc:
            return Unmigratable(
                ParkReason.INVALID_TARGET, "", f"cannot be encoded as an AMQP message ({type(exc).__name__})"
            )
        if len(new_body) > target.max_body_bytes:
            detail = f"{len(new_body)} bytes once migrated, over the {target.max_body_bytes} bytes of maxBodyBytes"
            return Unmigratable(ParkReason.OVERSIZE, "", detail)
        return Migrated(new_body, encoded, str(properties["message_id"]))

    def finish(self, prepared: Migrated | Unmigratable, properties: Any, body: bytes) -> Outgoing:
        if isinstance(prepared, Migrated):
            transport = self.route.target.transport
            new_properties = EncodedProperties(prepared.properties)  # = basic_properties(migrated envelope)
            return Outgoing(
                transport.exchange, transport.routing_key, prepared.body, new_properties, prepared.message_id, PUBLISHED
            )
        parked = copy.copy(properties)  # every original property kept; headers extended
        parked.headers = park_headers(properties, prepared.reason, prepared.pointer, prepared.detail, self.route)
        message_id = getattr(properties, "message_id", None)
        return Outgoing("", self.parking_lot, body, parked, message_id, str(prepared.reason))

    def failed(self, properties: Any, body: bytes, error: BaseException) -> Outgoing:
        """The parked copy of a delivery whose ``finish`` or publication raised (e.g. headers pika cannot
        encode again): the original body, its plain properties, and only the ``x-park-*`` headers."""
        parked = plain_properties(properties)
        detail = f"publishing it raised {type(error).__name__}; its original headers were left out"
        parked.headers = park_headers(None, ParkReason.FAILED, "", detail, self.route)
        message_id = parked.message_id
        return Outgoing(
            "",
            self.parking_lot,
            body,
            parked,
            message_id if isinstance(message_id, str) else None,
            str(ParkReason.FAILED),
        )

    def _invalid(self, issues: list[SchemaIssue]) -> Unmigratable:
        first = issues[0]
        keyword = first.message.split(":", 1)[0]  # "format", "required"...: the message may quote a value
        more = f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""
        detail = f"the migrated message is not a valid {self.route.target.message_type}: {keyword} failed{more}"
        return Unmigratable(ParkReason.INVALID_TARGET, first.pointer, detail)


def _parse(body: bytes) -> Any | None:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        pass
    try:  # orjson refuses what json accepts in a few corners (integers past 64 bits)
        return json.loads(body, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def resolve_route(catalog: Catalog, migration: str) -> MigrationRoute:
    """The route of ``migration``: a target messageType, or the path of its migration.yaml in ``catalog``.

    The spec is parsed and checked (every source fixture must migrate into a valid target) before
    anything runs: ``MigrationSpecError`` names the file and the JSON pointer of each problem.
    """
    target = catalog.get(migration)
    if target is None:
        path = Path(migration).expanduser()
        if not path.name.endswith((".yaml", ".yml")):
            with_migration = ", ".join(c.message_type for c in catalog if c.migration is not None) or "none"
            raise UsageError(
                f"{migration} is neither a messageType in {catalog.root} (with a migration: "
                f"{with_migration}) nor a migration.yaml"
            )
        if not path.is_file():
            raise MigrationSpecError(Problem(str(path), "", "no such file"))
        found = [c for c in catalog if c.migration_file.resolve() == path.resolve()]
        if not found:
            raise UsageError(f"{path} is not the migration.yaml of a contract in {catalog.root}; pass --catalog")
        target = found[0]
    file = str(target.migration_file)
    if target.migration is None:
        raise MigrationSpecError(Problem(file, "", f"{target.message_type} has no migration.yaml: nothing to bridge"))
    spec = parse_spec(target.migration, file)
    source = catalog.get(spec.source)
    if source is None:
        raise MigrationSpecError(Problem(file, "/from", f"{spec.source} is not in the catalogue {catalog.root}"))
    problems = check_spec(spec, source, target, EnvelopeValidator(catalog))
    if problems:
        raise MigrationSpecError(problems)
    return MigrationRoute(source, target, spec)

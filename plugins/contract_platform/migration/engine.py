"""Applying a ``MigrationSpec``: an old envelope in, the new envelope out.

The payload is built from nothing, in three passes: the copy and conversion ops in file order,
then every ``default`` (only where nothing produced the field), then every ``constant`` (always
wins). An op whose source field is absent does nothing, so optional fields stay absent.

Envelope rules are built in, not written in the file: ``messageType``, ``schemaVersion`` and
``messageVersion`` become the target contract's; everything else in ``metadata`` (messageId,
correlationId, causationId, producer, timestamps, traceId, tenantId, partitionKey) is kept as is:
the migrated message is the same business fact.

A message the spec cannot migrate raises ``MessageNotMigratable`` with a reason and a JSON pointer
into the source envelope; the spec itself is never blamed for one bad message.

A spec is compiled once (``compile_spec``, cached per spec object) into ``CompiledMigration``: its
JSON pointers split into tokens and each op bound to a step function, so a message costs only the
reads and writes it needs. The new envelope shares no mutable object with the old one or the spec.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from contract_platform.catalog.model import Contract
from contract_platform.errors import MessageNotMigratable, MigrationSpecError, Problem
from contract_platform.migration.conversions import decimal_to_minor_units, minor_units_to_decimal, number_to_text
from contract_platform.migration.spec import MigrationSpec, describe_value
from contract_platform.migration.steps import compile_steps, copied

__all__ = [
    "CompiledMigration",
    "compile_spec",
    "decimal_to_minor_units",
    "migrate_envelope",
    "migrate_payload",
    "minor_units_to_decimal",
    "number_to_text",
]


class CompiledMigration:
    """One ``MigrationSpec`` ready to migrate many messages; ``compile_spec`` makes and caches these."""

    def __init__(self, spec: MigrationSpec) -> None:
        self.spec = spec
        self._steps = compile_steps(spec.ops)

    def __reduce__(self) -> tuple[Any, ...]:
        return compile_spec, (self.spec,)

    def payload(self, payload: Any) -> dict[str, Any]:
        """``migrate_payload(self.spec, payload)``."""
        if type(payload) is not dict and not isinstance(payload, Mapping):
            raise MessageNotMigratable("the payload is not a JSON object", "/payload")
        result: dict[str, Any] = {}
        for step in self._steps:
            step(payload, result)
        return result

    def envelope(self, envelope: Any, target: Contract) -> dict[str, Any]:
        """``migrate_envelope(self.spec, envelope, target)``."""
        if target.message_type != self.spec.target:
            raise MigrationSpecError(
                Problem(self.spec.file, "/to", f"this migration produces {self.spec.target}, not {target.message_type}")
            )
        new_metadata = self._metadata(envelope)
        new_metadata.update(messageType=target.message_type, schemaVersion=target.major, messageVersion=target.version)
        return {"metadata": new_metadata, "payload": self.payload(envelope.get("payload"))}

    def for_target(self, target: Contract) -> Callable[[Any], dict[str, Any]]:
        """``migrate_envelope(self.spec, envelope, target)`` as a function of the envelope, the target read once."""
        try:
            major = target.major if target.message_type == self.spec.target else None
        except (IndexError, ValueError):
            major = None
        if major is None:  # the target is refused (MigrationSpecError) or fails as it would in envelope()
            return partial(self.envelope, target=target)
        stamp = {"messageType": target.message_type, "schemaVersion": major, "messageVersion": target.version}
        return partial(self._stamped, stamp)

    def _stamped(self, stamp: Mapping[str, Any], envelope: Any) -> dict[str, Any]:
        new_metadata = self._metadata(envelope)
        new_metadata.update(stamp)
        return {"metadata": new_metadata, "payload": self.payload(envelope.get("payload"))}

    def _metadata(self, envelope: Any) -> dict[str, Any]:
        """A copy of the envelope's metadata, once the envelope is known to be of the spec's source type."""
        if type(envelope) is not dict and not isinstance(envelope, Mapping):
            raise MessageNotMigratable("the message is not a JSON object", "")
        metadata = envelope.get("metadata")
        if type(metadata) is not dict and not isinstance(metadata, Mapping):
            raise MessageNotMigratable("the message has no metadata object", "/metadata")
        message_type = metadata.get("messageType")
        if message_type != self.spec.source:
            raise MessageNotMigratable(
                f"messageType is not {self.spec.source}, the type this migration reads",
                "/metadata/messageType",
                value=describe_value(message_type),
            )
        new_metadata: dict[str, Any] = copied(metadata if type(metadata) is dict else dict(metadata), "/metadata")
        return new_metadata


_COMPILED: dict[int, CompiledMigration] = {}  # id(spec) -> its compiled form, which keeps the spec alive
_COMPILED_MAX = 64


def compile_spec(spec: MigrationSpec) -> CompiledMigration:
    """The compiled form of ``spec``, made on first use and cached for that spec object."""
    compiled = _COMPILED.get(id(spec))
    if compiled is None or compiled.spec is not spec:
        compiled = CompiledMigration(spec)
        if len(_COMPILED) >= _COMPILED_MAX:
            _COMPILED.clear()
        _COMPILED[id(spec)] = compiled
    return compiled


def migrate_payload(spec: MigrationSpec, payload: Any) -> dict[str, Any]:
    """The new payload built from ``payload`` by the spec's ops (pointers in errors are into the envelope)."""
    return compile_spec(spec).payload(payload)


def migrate_envelope(spec: MigrationSpec, envelope: Any, target: Contract) -> dict[str, Any]:
    """The whole new envelope: target's messageType/schemaVersion/messageVersion, the rest of metadata kept."""
    return compile_spec(spec).envelope(envelope, target)

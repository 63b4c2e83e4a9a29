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
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal, localcontext
from typing import Any

from contract_platform.catalog.documents import resolve_pointer
from contract_platform.catalog.model import Contract
from contract_platform.catalog.pointers import split_pointer
from contract_platform.errors import MessageNotMigratable, MigrationSpecError, Problem
from contract_platform.migration.spec import (
    Constant,
    Copy,
    DecimalToMinorUnits,
    Default,
    Drop,
    MapEnum,
    MigrationSpec,
    Op,
    ToString,
    describe_value,
)

__all__ = [
    "decimal_to_minor_units",
    "migrate_envelope",
    "migrate_payload",
    "minor_units_to_decimal",
    "number_to_text",
]

_DECIMAL = re.compile(r"-?[0-9]+(\.[0-9]+)?")
_ABSENT: Any = object()


# -- conversions (pure, reusable by the parity job) -----------------------------------------------


def decimal_to_minor_units(text: str, exponent: int) -> int:
    """``"129.95"`` with exponent 2 -> ``12995``, exactly; raises ValueError rather than round.

    Trailing zeros are fine (``"129.950"`` -> 12995): only a non-zero digit past ``exponent``
    places would need rounding, and that is refused.
    """
    if not isinstance(text, str) or not _DECIMAL.fullmatch(text):
        raise ValueError("is not a decimal string such as 129.95")
    value = Decimal(text)
    with localcontext() as context:
        context.prec = len(text) + exponent + 2  # enough digits that scaling is exact
        scaled = value.scaleb(exponent)
        if scaled != scaled.to_integral_value():
            places = len(text.partition(".")[2].rstrip("0"))
            raise ValueError(f"has {places} decimal places but the exponent is {exponent}; it is not rounded")
        return int(scaled)


def minor_units_to_decimal(minor_units: int, exponent: int) -> Decimal:
    """The inverse: ``12995`` with exponent 2 -> ``Decimal("129.95")``."""
    with localcontext() as context:
        context.prec = len(str(abs(minor_units))) + exponent + 2
        return Decimal(minor_units).scaleb(-exponent)


def number_to_text(value: Any) -> str:
    """The canonical decimal text of a JSON number: 0.1 -> "0.1", 1e16 -> "10000000000000000"."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise ValueError("is not a number")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("is not a finite number")
    number = Decimal(repr(value)) if isinstance(value, float) else value  # repr: the shortest exact text
    if not number.is_finite():
        raise ValueError("is not a finite number")
    return format(number, "f")


# -- reading and writing payload fields -----------------------------------------------------------


def _read(payload: Mapping[str, Any], pointer: str) -> Any:
    try:
        return resolve_pointer(payload, pointer)
    except KeyError:
        return _ABSENT


def _write(result: dict[str, Any], pointer: str, value: Any) -> None:
    """Set ``pointer`` in ``result``, creating intermediate objects."""
    tokens = split_pointer(pointer)
    node = result
    for depth, token in enumerate(tokens[:-1]):
        child = node.setdefault(token, {})
        if not isinstance(child, dict):
            above = "/" + "/".join(tokens[: depth + 1])
            raise MessageNotMigratable(
                f"cannot write {pointer}: the new payload already holds a non-object at {above}", "/payload"
            )
        node = child
    node[tokens[-1]] = copy.deepcopy(value)


def _present(result: Mapping[str, Any], pointer: str) -> bool:
    return _read(result, pointer) is not _ABSENT


# -- one function per op --------------------------------------------------------------------------


def _copy(op: Copy, payload: Mapping[str, Any], result: dict[str, Any]) -> None:
    value = _read(payload, op.source)
    if value is not _ABSENT:
        _write(result, op.target, value)


def _exponent_of(op: DecimalToMinorUnits, payload: Mapping[str, Any]) -> int:
    if op.exponent is not None:
        return op.exponent
    where = "/payload" + str(op.currency_source)
    currency = _read(payload, str(op.currency_source))
    if currency is _ABSENT:
        raise MessageNotMigratable(f"no currency at {where} to choose the exponent of {op.source}", where)
    if not isinstance(currency, str):
        raise MessageNotMigratable(f"the currency at {where} is not a string code", where)
    exponent = op.exponents.get(currency, op.default_exponent)
    if exponent is None:
        raise MessageNotMigratable(
            f"currency {describe_value(currency)} has no exponent in the spec's exponents and no defaultExponent", where
        )
    return exponent


def _decimal_to_minor_units(op: DecimalToMinorUnits, payload: Mapping[str, Any], result: dict[str, Any]) -> None:
    text = _read(payload, op.source)
    if text is _ABSENT:
        return
    exponent = _exponent_of(op, payload)
    try:
        minor_units = decimal_to_minor_units(text, exponent)
    except ValueError as exc:
        shown = describe_value(text) if isinstance(text, str) and len(text) <= 40 else "the amount"
        raise MessageNotMigratable(f"{shown} {exc}", "/payload" + op.source) from None
    _write(result, op.target, minor_units)
    if op.exponent_target is not None:
        _write(result, op.exponent_target, exponent)


def _map_enum(op: MapEnum, payload: Mapping[str, Any], result: dict[str, Any]) -> None:
    value = _read(payload, op.source)
    if value is _ABSENT:
        return
    if isinstance(value, str) and value in op.mapping:
        _write(result, op.target, op.mapping[value])
    elif op.has_default:
        _write(result, op.target, op.default)
    else:
        shown = describe_value(value) if isinstance(value, str) and len(value) <= 40 else "the value"
        raise MessageNotMigratable(
            f"{shown} has no mapping to {op.target} and the mapEnum op gives no default", "/payload" + op.source
        )


def _to_string(op: ToString, payload: Mapping[str, Any], result: dict[str, Any]) -> None:
    value = _read(payload, op.source)
    if value is _ABSENT:
        return
    try:
        text = number_to_text(value)
    except ValueError as exc:
        raise MessageNotMigratable(
            f"the value {exc}, so toString cannot write {op.target}", "/payload" + op.source
        ) from None
    _write(result, op.target, text)


def _nothing(op: Op, payload: Mapping[str, Any], result: dict[str, Any]) -> None:
    """``drop`` leaves the field behind; ``default`` and ``constant`` run in later passes."""


_TRANSFORMS: Mapping[type[Any], Callable[[Any, Mapping[str, Any], dict[str, Any]], None]] = {
    Copy: _copy,
    DecimalToMinorUnits: _decimal_to_minor_units,
    MapEnum: _map_enum,
    ToString: _to_string,
    Drop: _nothing,
    Default: _nothing,
    Constant: _nothing,
}


def migrate_payload(spec: MigrationSpec, payload: Any) -> dict[str, Any]:
    """The new payload built from ``payload`` by the spec's ops (pointers in errors are into the envelope)."""
    if not isinstance(payload, Mapping):
        raise MessageNotMigratable("the payload is not a JSON object", "/payload")
    result: dict[str, Any] = {}
    for op in spec.ops:
        _TRANSFORMS[type(op)](op, payload, result)
    for op in spec.ops:
        if isinstance(op, Default) and not _present(result, op.target):
            _write(result, op.target, op.value)
    for op in spec.ops:
        if isinstance(op, Constant):
            _write(result, op.target, op.value)
    return result


def migrate_envelope(spec: MigrationSpec, envelope: Any, target: Contract) -> dict[str, Any]:
    """The whole new envelope: target's messageType/schemaVersion/messageVersion, the rest of metadata kept."""
    if target.message_type != spec.target:
        raise MigrationSpecError(
            Problem(spec.file, "/to", f"this migration produces {spec.target}, not {target.message_type}")
        )
    if not isinstance(envelope, Mapping):
        raise MessageNotMigratable("the message is not a JSON object", "")
    metadata = envelope.get("metadata")
    if not isinstance(metadata, Mapping):
        raise MessageNotMigratable("the message has no metadata object", "/metadata")
    message_type = metadata.get("messageType")
    if message_type != spec.source:
        shown = describe_value(message_type)
        raise MessageNotMigratable(
            f"messageType is {shown}; this migration reads {spec.source}", "/metadata/messageType"
        )
    new_metadata = copy.deepcopy(dict(metadata))
    new_metadata.update(messageType=target.message_type, schemaVersion=target.major, messageVersion=target.version)
    return {"metadata": new_metadata, "payload": migrate_payload(spec, envelope.get("payload"))}

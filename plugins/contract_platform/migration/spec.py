"""``migration.yaml`` as typed ops: one frozen dataclass per op, parsed with every problem reported.

The file (contracts/README.md, "migration.yaml")::

    from: billing.invoice-issued.v1
    to: billing.invoice-issued.v2
    description: one sentence
    payload:                       # applied in order to build the new payload from the old one
      - {op: copy, from: /a, to: /b}
      - ...

``parse_spec`` checks the file's shape only (ops, keys, types, pointers, from/to naming two majors
of one message). Whether the ops fit the two contracts is ``checking.check_spec``'s job.
Each op remembers ``at``, its own JSON pointer in the file (``/payload/3``), so later problems can
point at it.
"""

from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from contract_platform.catalog.documents import pointer_from_path
from contract_platform.errors import MigrationSpecError, Problem

__all__ = [
    "MAX_EXPONENT",
    "OPS",
    "Constant",
    "Copy",
    "DecimalToMinorUnits",
    "Default",
    "Drop",
    "MapEnum",
    "MigrationSpec",
    "MinorUnitsToDecimal",
    "Op",
    "ToString",
    "describe_value",
    "parse_spec",
]

MAX_EXPONENT = 18  # far beyond any currency (ISO 4217 tops out at 4), small enough to stay exact
_MESSAGE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z][a-z0-9-]*\.v[1-9][0-9]*$")
_TOP_KEYS = ("from", "to", "description", "payload")


@dataclass(frozen=True)
class Copy:
    """Copy the value at ``source`` to ``target``: a rename or a move when the paths differ."""

    at: str
    source: str
    target: str


@dataclass(frozen=True)
class DecimalToMinorUnits:
    """A decimal string becomes an integer count of minor units, exactly (never rounded).

    The exponent is either fixed (``exponent``) or looked up from the currency code at
    ``currency_source`` in ``exponents``, falling back to ``default_exponent``. ``exponent_target``,
    if set, receives the exponent used.
    """

    at: str
    source: str
    target: str
    exponent_target: str | None = None
    currency_source: str | None = None
    exponents: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    default_exponent: int | None = None
    exponent: int | None = None


@dataclass(frozen=True)
class MinorUnitsToDecimal:
    """An integer count of minor units becomes the decimal string it stands for, exactly: 12995 with exponent 2
    is "129.95" (always ``exponent`` decimal places). ``decimalToMinorUnits`` read backwards.

    The exponent is fixed (``exponent``), read from the message (``exponent_source``, an integer field), or
    looked up from the currency code at ``currency_source`` in ``exponents``, falling back to
    ``default_exponent``: exactly one of the three.
    """

    at: str
    source: str
    target: str
    exponent_source: str | None = None
    currency_source: str | None = None
    exponents: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    default_exponent: int | None = None
    exponent: int | None = None


@dataclass(frozen=True)
class MapEnum:
    """A string becomes another value through ``mapping``; an unmapped value takes ``default`` if given."""

    at: str
    source: str
    target: str
    mapping: Mapping[str, Any]
    has_default: bool = False
    default: Any = None


@dataclass(frozen=True)
class ToString:
    """A number becomes its canonical decimal text (0.1 stays "0.1", never "0.1000000000000000055")."""

    at: str
    source: str
    target: str


@dataclass(frozen=True)
class Default:
    """Set ``value`` at ``target`` only when no other op produced it."""

    at: str
    target: str
    value: Any


@dataclass(frozen=True)
class Constant:
    """Always set ``value`` at ``target``."""

    at: str
    target: str
    value: Any


@dataclass(frozen=True)
class Drop:
    """The old field at ``source`` is left behind on purpose, for ``reason``."""

    at: str
    source: str
    reason: str


Op = Copy | DecimalToMinorUnits | MinorUnitsToDecimal | MapEnum | ToString | Default | Constant | Drop


@dataclass(frozen=True)
class MigrationSpec:
    """One parsed ``migration.yaml``: how a ``source`` message becomes a ``target`` message."""

    file: str
    source: str
    target: str
    description: str
    ops: tuple[Op, ...]


# -- the op table: YAML name -> (class, required keys, optional keys) ------------------------------

# YAML key -> dataclass field
_FIELD = {
    "from": "source",
    "to": "target",
    "exponentTo": "exponent_target",
    "exponentFrom": "exponent_source",
    "currencyFrom": "currency_source",
    "exponents": "exponents",
    "defaultExponent": "default_exponent",
    "exponent": "exponent",
    "mapping": "mapping",
    "default": "default",
    "value": "value",
    "reason": "reason",
}


@dataclass(frozen=True)
class _Shape:
    cls: type[Any]
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()


OPS: Mapping[str, _Shape] = MappingProxyType(
    {
        "copy": _Shape(Copy, ("from", "to")),
        "decimalToMinorUnits": _Shape(
            DecimalToMinorUnits,
            ("from", "to"),
            ("exponentTo", "currencyFrom", "exponents", "defaultExponent", "exponent"),
        ),
        "minorUnitsToDecimal": _Shape(
            MinorUnitsToDecimal,
            ("from", "to"),
            ("exponentFrom", "currencyFrom", "exponents", "defaultExponent", "exponent"),
        ),
        "mapEnum": _Shape(MapEnum, ("from", "to", "mapping"), ("default",)),
        "toString": _Shape(ToString, ("from", "to")),
        "default": _Shape(Default, ("to", "value")),
        "constant": _Shape(Constant, ("to", "value")),
        "drop": _Shape(Drop, ("from", "reason")),
    }
)

_INVALID = object()  # a key whose value was refused (the problem is already recorded)


class _Collector:
    """Problems found in one file, each located by a JSON pointer."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[Problem] = []

    def add(self, pointer: str, message: str) -> object:
        self.problems.append(Problem(self.file, pointer, message))
        return _INVALID


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxdict, _REPR.maxlist = 2, 60, 60, 4, 4


def describe_value(value: Any) -> str:
    """A short, safe rendering of any value a YAML file can hold (even deeply nested junk)."""
    return _REPR.repr(value)


def _kind(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", type(None): "null"}
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return names.get(type(value), type(value).__name__)


# -- value parsers: (value, pointer, collector) -> parsed value or _INVALID -------------------------


def _pointer(value: Any, where: str, out: _Collector) -> object:
    if not isinstance(value, str):
        return out.add(where, f"must be a JSON pointer such as /amount, not {_kind(value)}")
    if not value.startswith("/"):
        return out.add(where, f"{describe_value(value)} is not a JSON pointer into the payload; it must start with '/'")
    if re.search(r"~(?![01])", value):
        return out.add(
            where, f"{describe_value(value)} has a '~' not followed by 0 or 1 (write ~0 for '~' and ~1 for '/')"
        )
    if "" in value[1:].split("/"):
        return out.add(where, f"{describe_value(value)} has an empty segment; name every field on the path")
    return value


def _text(value: Any, where: str, out: _Collector) -> object:
    if not isinstance(value, str) or not value.strip():
        return out.add(where, f"must be a non-empty string, not {describe_value(value)}")
    return value


def _exponent(value: Any, where: str, out: _Collector) -> object:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_EXPONENT:
        return out.add(
            where, f"an exponent is an integer from 0 to {MAX_EXPONENT} (decimal places), not {describe_value(value)}"
        )
    return value


def _exponents(value: Any, where: str, out: _Collector) -> object:
    if not isinstance(value, Mapping):
        return out.add(where, f"must map currency codes to exponents (e.g. {{JPY: 0}}), not {_kind(value)}")
    parsed: dict[str, int] = {}
    for code, exponent in value.items():
        here = where + pointer_from_path([code])
        if not isinstance(code, str) or not code:
            out.add(here, f"currency code {describe_value(code)} must be a non-empty string")
        elif _exponent(exponent, here, out) is not _INVALID:
            parsed[code] = exponent
    return MappingProxyType(parsed) if len(parsed) == len(value) else _INVALID


def _json_value(value: Any, where: str, out: _Collector) -> object:
    """Any JSON value: objects with string keys, lists, strings, finite numbers, booleans, null."""
    stack: list[tuple[Any, str]] = [(value, where)]
    ok = True
    while stack:
        item, here = stack.pop()
        if isinstance(item, Mapping):
            for key, child in item.items():
                if isinstance(key, str):
                    stack.append((child, here + pointer_from_path([key])))
                else:
                    out.add(here, f"key {describe_value(key)} is not a string; quote it")
                    ok = False
        elif isinstance(item, list):
            stack.extend((child, f"{here}/{index}") for index, child in enumerate(item))
        elif isinstance(item, float) and not math.isfinite(item):
            out.add(here, f"{describe_value(item)} is not a JSON number")
            ok = False
        elif not isinstance(item, str | int | float | bool | type(None)):
            out.add(here, f"{_kind(item)} is not a JSON value")
            ok = False
    return value if ok else _INVALID


def _mapping(value: Any, where: str, out: _Collector) -> object:
    if not isinstance(value, Mapping) or not value:
        return out.add(where, f"must map old values to new ones (e.g. {{OPEN: ISSUED}}), not {describe_value(value)}")
    if _json_value(value, where, out) is _INVALID:
        return _INVALID
    return MappingProxyType(dict(value))


_PARSERS: Mapping[str, Callable[[Any, str, _Collector], object]] = MappingProxyType(
    {
        "from": _pointer,
        "to": _pointer,
        "exponentTo": _pointer,
        "exponentFrom": _pointer,
        "currencyFrom": _pointer,
        "exponents": _exponents,
        "defaultExponent": _exponent,
        "exponent": _exponent,
        "mapping": _mapping,
        "default": _json_value,
        "value": _json_value,
        "reason": _text,
    }
)


# -- ops ------------------------------------------------------------------------------------------


_KEY_HINT = {
    "from": ": the JSON pointer of the old payload field to read",
    "to": ": the JSON pointer of the new payload field to write",
    "mapping": ": old value -> new value",
    "value": ": the JSON value to set",
    "reason": ": why the field is left behind",
}


def _decimal_rules(name: str, fields: Mapping[str, Any], at: str, out: _Collector) -> None:
    """decimalToMinorUnits and minorUnitsToDecimal take their exponent from exactly one place: fixed
    (``exponent``), the currency (``currencyFrom`` + exponents/defaultExponent) or, for minorUnitsToDecimal,
    the message (``exponentFrom``)."""
    sources = [key for key in ("exponent", "exponentFrom", "currencyFrom") if key in fields]
    if len(sources) > 1:
        out.add(f"{at}/{sources[0]}", f"give the exponent one way ({' or '.join(sources)}), not {len(sources)}")
    elif sources and sources[0] != "currencyFrom":
        for key in ("exponents", "defaultExponent"):
            if key in fields:
                out.add(f"{at}/{key}", f"{key} only applies with currencyFrom; this op has {sources[0]}")
    elif sources:
        if "exponents" not in fields and "defaultExponent" not in fields:
            out.add(at, f"{name} with currencyFrom needs exponents, defaultExponent or both")
    else:
        from_message = ", `exponentFrom` (an integer field of the message)" if name == "minorUnitsToDecimal" else ""
        out.add(
            at,
            f"{name} needs an exponent: a fixed `exponent`{from_message}, or `currencyFrom` with "
            "exponents/defaultExponent",
        )


def _parse_op(item: Any, at: str, out: _Collector) -> Op | None:
    if not isinstance(item, Mapping):
        out.add(at, f"each step is a mapping with an `op`, not {_kind(item)}")
        return None
    name = item.get("op")
    if "op" not in item:
        out.add(at, f"step has no `op`; use one of: {', '.join(OPS)}")
        return None
    if not isinstance(name, str) or name not in OPS:
        out.add(at + "/op", f"unknown op {describe_value(name)}; use one of: {', '.join(OPS)}")
        return None
    shape = OPS[name]
    before = len(out.problems)
    allowed = ("op", *shape.required, *shape.optional)
    for key in item:
        if key not in allowed:
            out.add(
                at + pointer_from_path([key]),
                f"unknown key {describe_value(key)} for {name}; allowed: {', '.join(allowed)}",
            )
    for key in shape.required:
        if key not in item:
            out.add(at, f"{name} needs `{key}`{_KEY_HINT.get(key, '')}")
    fields: dict[str, Any] = {}
    for key in (*shape.required, *shape.optional):
        if key in item:
            parsed = _PARSERS[key](item[key], f"{at}/{key}", out)
            if parsed is not _INVALID:
                fields[key] = parsed
    if name in ("decimalToMinorUnits", "minorUnitsToDecimal"):
        _decimal_rules(name, item, at, out)
    if len(out.problems) > before:
        return None
    arguments = {_FIELD[key]: value for key, value in fields.items()}
    if name == "mapEnum":
        arguments["has_default"] = "default" in fields
    op: Op = shape.cls(at=at, **arguments)
    return op


def _message_types(raw: Mapping[Any, Any], out: _Collector) -> tuple[str, str]:
    """``from`` and ``to`` name two majors of one message, the newer one second."""
    names: dict[str, str] = {}
    for key in ("from", "to"):
        value = raw.get(key)
        if key not in raw:
            out.add("", f"missing `{key}`: the messageType this migration goes {key} (e.g. billing.invoice-issued.v2)")
        elif not isinstance(value, str) or not _MESSAGE_TYPE.match(value):
            out.add(f"/{key}", f"{describe_value(value)} is not a messageType (<domain>.<name>.v<MAJOR>)")
        else:
            names[key] = value
    source, target = names.get("from", ""), names.get("to", "")
    if source and target:
        source_family, source_major = source.rsplit(".v", 1)
        target_family, target_major = target.rsplit(".v", 1)
        if source_family != target_family:
            out.add(
                "/from",
                f"{source} is another message than {target}; a migration goes from an older major of the same message",
            )
        elif int(source_major) >= int(target_major):
            out.add("/from", f"{source} is not an older major than {target}")
    return source, target


def parse_spec(raw: Mapping[str, Any], file: str) -> MigrationSpec:
    """The typed spec of one ``migration.yaml``; raises ``MigrationSpecError`` listing every problem."""
    out = _Collector(file)
    if not isinstance(raw, Mapping):
        raise MigrationSpecError(Problem(file, "", f"migration.yaml must be a mapping with {', '.join(_TOP_KEYS)}"))
    for key in raw:
        if key not in _TOP_KEYS:
            out.add(pointer_from_path([key]), f"unknown key {describe_value(key)}; allowed: {', '.join(_TOP_KEYS)}")
    source, target = _message_types(raw, out)
    description = raw.get("description")
    if "description" not in raw:
        out.add("", "missing `description`: one sentence saying what changes between the two majors")
    else:
        _text(description, "/description", out)
    steps = raw.get("payload")
    ops: list[Op] = []
    if "payload" not in raw:
        out.add("", "missing `payload`: the list of ops that build the new payload")
    elif not isinstance(steps, list) or not steps:
        out.add("/payload", f"must be a non-empty list of ops, not {describe_value(steps)}")
    else:
        for index, item in enumerate(steps):
            op = _parse_op(item, f"/payload/{index}", out)
            if op is not None:
                ops.append(op)
    if out.problems:
        raise MigrationSpecError(out.problems)
    return MigrationSpec(file=file, source=source, target=target, description=str(description), ops=tuple(ops))

"""A ``MigrationSpec``'s ops as step functions: pointers split once, values copied only where they must be.

``compile_steps(ops)`` returns the steps of the three passes in order (the copy and conversion ops
in file order, then every ``default``, then every ``constant``); each step is called with the old
payload and the new payload being built. Reading is ``catalog.documents.pointer_reader`` (the rules of
``resolve_pointer``, the pointer split once) and writing creates intermediate objects, exactly as the
engine always has; a pointer that does not start with '/' (never one from ``parse_spec``) is written
through ``split_pointer`` itself.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from contract_platform.catalog.documents import MISSING, pointer_from_path, pointer_reader
from contract_platform.catalog.pointers import split_pointer
from contract_platform.errors import MessageNotMigratable, clipped
from contract_platform.limits import depth_limit, nesting_beyond
from contract_platform.migration.conversions import decimal_to_minor_units, minor_units_to_decimal, number_to_text
from contract_platform.migration.spec import (
    MAX_EXPONENT,
    Constant,
    Copy,
    DecimalToMinorUnits,
    Default,
    Drop,
    MapEnum,
    MinorUnitsToDecimal,
    Op,
    ToString,
    describe_value,
)

__all__ = ["Step", "compile_steps", "copied"]

_ABSENT: Any = MISSING  # what a reader returns where the pointer finds nothing


# -- copying values -------------------------------------------------------------------------------

# Types that ``copy.deepcopy`` returns as they are: a value of one of them needs no copy.
_ATOMIC = frozenset({str, int, float, bool, type(None), Decimal})


def copied(value: Any, where: str = "/payload") -> Any:
    """``copy.deepcopy(value)``, without its cost for a scalar or a flat object or list of scalars.

    A value nested deeper than ``limits.depth_limit()`` is never copied (a deep copy recurses): it makes
    the message ``MessageNotMigratable`` at ``where``, the part of the envelope it came from.
    """
    kind = type(value)
    if kind in _ATOMIC:
        return value
    if kind is dict and _ATOMIC.issuperset(map(type, value.values())) and _ATOMIC.issuperset(map(type, value)):
        return dict(value)
    if kind is list and _ATOMIC.issuperset(map(type, value)):
        return list(value)
    limit = depth_limit()
    inside = nesting_beyond(value, limit)
    if inside is not None:
        shown = clipped(inside, 120)
        raise MessageNotMigratable(f"a value nests deeper than {limit} levels (at {where}{shown})", where)
    return copy.deepcopy(value)


# -- reading and writing payload fields -----------------------------------------------------------

Reader = Callable[[Any], Any]  # document -> the value at a pointer, or _ABSENT
Writer = Callable[[dict[str, Any], Any], None]  # (new payload, value): a copy of value set at a pointer


def _write(result: dict[str, Any], pointer: str, value: Any) -> None:
    """Set ``pointer`` in ``result``, creating intermediate objects (for any pointer string)."""
    _tokens_writer(pointer, split_pointer(pointer))(result, value)


def _reader(pointer: str) -> Reader:
    """``catalog.documents.pointer_reader``, with a dict lookup first for a top-level field."""
    read = pointer_reader(pointer)
    field = _field(pointer)
    if field is None:
        return read

    def read_field(document: Any) -> Any:
        if type(document) is dict:
            return document.get(field, _ABSENT)
        return read(document)  # a list, or a subclass of dict: resolve_pointer's own tests

    return read_field


def _writer(pointer: str) -> Writer:
    if not pointer.startswith("/"):  # split_pointer refuses it, when a value is there to write
        return lambda result, value: _write(result, pointer, value)
    return _tokens_writer(pointer, split_pointer(pointer))


def _tokens_writer(pointer: str, tokens: list[str]) -> Writer:
    *parents, last = tokens
    if not parents:

        def write_field(result: dict[str, Any], value: Any) -> None:
            result[last] = copied(value)

        return write_field
    walk = [(token, "/" + "/".join(tokens[: depth + 1])) for depth, token in enumerate(parents)]

    def write_path(result: dict[str, Any], value: Any) -> None:
        node = result
        for token, above in walk:
            child = node.setdefault(token, {})
            if not isinstance(child, dict):
                raise MessageNotMigratable(
                    f"cannot write {pointer}: the new payload already holds a non-object at {above}", "/payload"
                )
            node = child
        node[last] = copied(value)

    return write_path


def _field(pointer: str) -> str | None:
    """The key of a pointer to a top-level field (``/invoiceId`` -> ``invoiceId``), else None."""
    if not pointer.startswith("/"):
        return None
    tokens = split_pointer(pointer)
    return tokens[0] if len(tokens) == 1 else None


# -- one step per op: (payload, new payload) -> None ----------------------------------------------

Step = Callable[[Any, dict[str, Any]], None]


def _copy_fields(pairs: tuple[tuple[str, str], ...]) -> Step:
    """Consecutive copies from top-level fields to top-level fields, in file order."""
    readers = [(pointer_reader(pointer_from_path([source])), target) for source, target in pairs]

    def step(payload: Any, result: dict[str, Any]) -> None:
        if isinstance(payload, dict):
            for source, target in pairs:
                if source in payload:
                    value = payload[source]
                    result[target] = value if type(value) in _ATOMIC else copied(value)
            return
        for read, target in readers:  # a Mapping that is not a dict: what resolve_pointer finds in it
            value = read(payload)
            if value is not _ABSENT:
                result[target] = copied(value)

    return step


def _copy(op: Copy) -> Step:
    read, write = _reader(op.source), _writer(op.target)

    def step(payload: Any, result: dict[str, Any]) -> None:
        value = read(payload)
        if value is not _ABSENT:
            write(result, value)

    return step


def _exponent_lookup(op: DecimalToMinorUnits | MinorUnitsToDecimal) -> Callable[[Any], int]:
    if op.exponent is not None:
        fixed = op.exponent
        return lambda payload: fixed
    if isinstance(op, MinorUnitsToDecimal) and op.exponent_source is not None:
        return _exponent_field(op.exponent_source, op.source)
    where = "/payload" + str(op.currency_source)
    read_currency = _reader(str(op.currency_source))

    def exponent_of(payload: Any) -> int:
        currency = read_currency(payload)
        if currency is _ABSENT:
            raise MessageNotMigratable(f"no currency at {where} to choose the exponent of {op.source}", where)
        if not isinstance(currency, str):
            raise MessageNotMigratable(f"the currency at {where} is not a string code", where)
        exponent = op.exponents.get(currency, op.default_exponent)
        if exponent is None:
            raise MessageNotMigratable(
                f"the currency at {where} has no exponent in the spec's exponents and no defaultExponent",
                where,
                value=describe_value(currency),
            )
        return exponent

    return exponent_of


def _exponent_field(pointer: str, amount: str) -> Callable[[Any], int]:
    """The exponent of the amount at ``amount``, read from the integer field at ``pointer`` of the message."""
    where, read = "/payload" + pointer, _reader(pointer)

    def exponent_of(payload: Any) -> int:
        exponent = read(payload)
        if exponent is _ABSENT:
            raise MessageNotMigratable(f"no exponent at {where} to read the amount at {amount}", where)
        if type(exponent) is not int or not 0 <= exponent <= MAX_EXPONENT:
            shown = describe_value(exponent) if not isinstance(exponent, dict | list) else None
            raise MessageNotMigratable(
                f"the exponent at {where} is not an integer 0-{MAX_EXPONENT}", where, value=shown
            )
        return exponent

    return exponent_of


def _decimal_to_minor_units(op: DecimalToMinorUnits) -> Step:
    read, write, exponent_of = _reader(op.source), _writer(op.target), _exponent_lookup(op)
    write_exponent = _writer(op.exponent_target) if op.exponent_target is not None else None

    def step(payload: Any, result: dict[str, Any]) -> None:
        text = read(payload)
        if text is _ABSENT:
            return
        exponent = exponent_of(payload)
        try:
            minor_units = decimal_to_minor_units(text, exponent)
        except ValueError as exc:
            where = "/payload" + op.source
            shown = describe_value(text) if isinstance(text, str) and len(text) <= 40 else None
            raise MessageNotMigratable(f"the amount at {where} {exc}", where, value=shown) from None
        write(result, minor_units)
        if write_exponent is not None:
            write_exponent(result, exponent)

    return step


def _minor_units_to_decimal(op: MinorUnitsToDecimal) -> Step:
    read, write, exponent_of = _reader(op.source), _writer(op.target), _exponent_lookup(op)

    def step(payload: Any, result: dict[str, Any]) -> None:
        minor_units = read(payload)
        if minor_units is _ABSENT:
            return
        if type(minor_units) is not int:
            raise MessageNotMigratable(
                f"the amount at /payload{op.source} is not an integer count of minor units", "/payload" + op.source
            )
        exponent = exponent_of(payload)
        write(result, format(minor_units_to_decimal(minor_units, exponent), "f"))

    return step


def _map_enum(op: MapEnum) -> Step:
    read, write = _reader(op.source), _writer(op.target)

    def step(payload: Any, result: dict[str, Any]) -> None:
        value = read(payload)
        if value is _ABSENT:
            return
        if isinstance(value, str) and value in op.mapping:
            write(result, op.mapping[value])
        elif op.has_default:
            write(result, op.default)
        else:
            where = "/payload" + op.source
            shown = describe_value(value) if isinstance(value, str) and len(value) <= 40 else None
            raise MessageNotMigratable(
                f"the value at {where} has no mapping to {op.target} and the mapEnum op gives no default",
                where,
                value=shown,
            )

    return step


def _to_string(op: ToString) -> Step:
    read, write = _reader(op.source), _writer(op.target)

    def step(payload: Any, result: dict[str, Any]) -> None:
        value = read(payload)
        if value is _ABSENT:
            return
        try:
            text = number_to_text(value)
        except ValueError as exc:
            raise MessageNotMigratable(
                f"the value {exc}, so toString cannot write {op.target}", "/payload" + op.source
            ) from None
        write(result, text)

    return step


def _default(op: Default) -> Step:
    present, write = _reader(op.target), _writer(op.target)

    def step(payload: Any, result: dict[str, Any]) -> None:
        if present(result) is _ABSENT:
            write(result, op.value)

    return step


def _constant(op: Constant) -> Step:
    write = _writer(op.target)
    return lambda payload, result: write(result, op.value)


def _unknown(kind: type[Any]) -> Step:
    """An op of a type the engine does not know: ``KeyError`` when it runs, as the op table lookup raises."""

    def step(payload: Any, result: dict[str, Any]) -> None:
        raise KeyError(kind)

    return step


_STEPS: Mapping[type[Any], Callable[[Any], Step] | None] = {
    Copy: _copy,
    DecimalToMinorUnits: _decimal_to_minor_units,
    MinorUnitsToDecimal: _minor_units_to_decimal,
    MapEnum: _map_enum,
    ToString: _to_string,
    Drop: None,  # the field is left behind
    Default: None,  # in the second pass
    Constant: None,  # in the third pass
}


def _first_pass(ops: tuple[Op, ...]) -> list[Step]:
    steps: list[Step] = []
    fields: list[tuple[str, str]] = []  # a run of top-level copies not yet made a step
    for op in ops:
        if type(op) is Copy and (source := _field(op.source)) is not None and (target := _field(op.target)) is not None:
            fields.append((source, target))
            continue
        if fields:
            steps.append(_copy_fields(tuple(fields)))
            fields = []
        if type(op) not in _STEPS:
            steps.append(_unknown(type(op)))
        elif (make := _STEPS[type(op)]) is not None:
            steps.append(make(op))
    if fields:
        steps.append(_copy_fields(tuple(fields)))
    return steps


def compile_steps(ops: tuple[Op, ...]) -> tuple[Step, ...]:
    """The steps that build a new payload from an old one by ``ops``, in the order they run."""
    return (
        *_first_pass(ops),
        *(_default(op) for op in ops if isinstance(op, Default)),
        *(_constant(op) for op in ops if isinstance(op, Constant)),
    )

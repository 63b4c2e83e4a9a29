"""A ``migration.yaml`` read backwards: how a v<N> message becomes the v<N-1> message it stands for.

The catalogue writes each migration one way, older major to newer. A consumer still written for the older
major that receives the newer one (the bridge's output, or a producer that moved first) reads it through
the inverse, derived here from the same file, op by op:

==========================  ============================================================================
forward op                  read backwards
==========================  ============================================================================
copy a -> b                 copy b -> a
decimalToMinorUnits a -> b  minorUnitsToDecimal b -> a, the exponent fixed as it was, read from the
                            field the forward op wrote it to (``exponentTo``), or looked up again from
                            the currency where a copy carried the currency over
mapEnum a -> b              mapEnum b -> a with the mapping turned round, when no two old values share a
                            new one and no ``default`` folds unknown values into one
default / constant -> b     nothing: the older major has no such field (b is dropped)
drop a                      nothing: a cannot be recovered (where the older major requires it, the
                            inverse is refused by ``check_spec``)
toString a -> b             refused: the text does not say which JSON number it was
==========================  ============================================================================

Fields of the newer major that no op reads (additions the forward file did not need to mention) are
dropped, each with its reason. ``read_backwards`` raises ``MigrationSpecError`` naming every op that cannot
be turned round; the result is a ``MigrationSpec`` like any other, so ``check_spec`` judges it against the
two contracts and their fixtures before any message goes through it.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType

from contract_platform.catalog.model import Contract
from contract_platform.errors import MigrationSpecError, Problem
from contract_platform.migration.checking import unread_fields
from contract_platform.migration.spec import (
    Constant,
    Copy,
    DecimalToMinorUnits,
    Default,
    Drop,
    MapEnum,
    MigrationSpec,
    MinorUnitsToDecimal,
    Op,
    ToString,
    describe_value,
)

__all__ = ["BACKWARDS", "read_backwards"]

BACKWARDS = "read backwards"  # how the derived spec's file is named: '<migration.yaml> (read backwards)'


def read_backwards(spec: MigrationSpec, newer: Contract) -> MigrationSpec:
    """The inverse of ``spec`` (``spec.target`` -> ``spec.source``); ``newer`` is the contract of ``spec.target``.

    Raises ``MigrationSpecError`` with one ``Problem`` per op that cannot be read backwards, at the op."""
    problems: list[Problem] = []
    ops: list[Op] = []
    for op in spec.ops:
        for turned in _turned(spec, op, problems):
            ops.append(turned)
    if problems:
        raise MigrationSpecError(problems)
    inverse = MigrationSpec(
        file=f"{spec.file} ({BACKWARDS})",
        source=spec.target,
        target=spec.source,
        description=f"{spec.target} read as {spec.source}, by {spec.file} turned round",
        ops=tuple(ops),
    )
    left = [
        Drop(at="/payload", source=pointer, reason=f"{spec.source} has no field that {pointer} came from")
        for pointer in unread_fields(inverse, newer)
    ]
    return MigrationSpec(inverse.file, inverse.source, inverse.target, inverse.description, (*ops, *left))


def _turned(spec: MigrationSpec, op: Op, problems: list[Problem]) -> Iterator[Op]:
    if isinstance(op, Copy):
        yield Copy(at=op.at, source=op.target, target=op.source)
    elif isinstance(op, DecimalToMinorUnits):
        turned = _minor_units(spec, op)
        if turned is None:
            problems.append(
                Problem(
                    spec.file,
                    f"{op.at}/currencyFrom",
                    f"the exponent of {op.target} came from the currency at {op.currency_source}, which no op "
                    f"carries into {spec.target}, and no exponentTo keeps it: {op.target} cannot be read back "
                    "as a decimal",
                )
            )
        else:
            yield turned
    elif isinstance(op, MapEnum):
        turned_enum = _map_back(spec, op, problems)
        if turned_enum is not None:
            yield turned_enum
    elif isinstance(op, ToString):
        problems.append(
            Problem(
                spec.file,
                op.at,
                f"toString wrote {op.target} as text; the text does not say which JSON number {op.source} was",
            )
        )
    elif not isinstance(op, Default | Constant | Drop):
        problems.append(Problem(spec.file, op.at, f"{type(op).__name__} cannot be read backwards"))


def _minor_units(spec: MigrationSpec, op: DecimalToMinorUnits) -> MinorUnitsToDecimal | None:
    if op.exponent is not None:
        return MinorUnitsToDecimal(at=op.at, source=op.target, target=op.source, exponent=op.exponent)
    if op.exponent_target is not None:
        return MinorUnitsToDecimal(at=op.at, source=op.target, target=op.source, exponent_source=op.exponent_target)
    carried = next((c.target for c in spec.ops if isinstance(c, Copy) and c.source == op.currency_source), None)
    if carried is None:
        return None
    return MinorUnitsToDecimal(
        at=op.at,
        source=op.target,
        target=op.source,
        currency_source=carried,
        exponents=op.exponents,
        default_exponent=op.default_exponent,
    )


def _map_back(spec: MigrationSpec, op: MapEnum, problems: list[Problem]) -> MapEnum | None:
    if op.has_default:
        problems.append(
            Problem(
                spec.file,
                f"{op.at}/default",
                f"mapEnum folds every unmapped {op.source} value into {describe_value(op.default)}: it cannot be mapped back",
            )
        )
        return None
    back: dict[str, str] = {}
    for old, new in op.mapping.items():
        if not isinstance(new, str):
            problems.append(
                Problem(
                    spec.file,
                    f"{op.at}/mapping",
                    f"{op.source} {describe_value(old)} becomes {describe_value(new)}, not a string to map back",
                )
            )
            return None
        if new in back:
            problems.append(
                Problem(
                    spec.file,
                    f"{op.at}/mapping",
                    f"{describe_value(back[new])} and {describe_value(old)} both become {describe_value(new)}: {op.target} cannot say which it was",
                )
            )
            return None
        back[new] = old
    return MapEnum(at=op.at, source=op.target, target=op.source, mapping=MappingProxyType(back))

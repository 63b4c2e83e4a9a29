"""Conversions of the migration language, pure and reusable (the parity job calls them too).

``decimal_to_minor_units`` turns an amount string into an integer count of minor units and never
rounds; ``minor_units_to_decimal`` is its inverse; ``number_to_text`` is ``toString``'s canonical text.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, localcontext
from typing import Any

__all__ = ["decimal_to_minor_units", "minor_units_to_decimal", "number_to_text"]

_DECIMAL = re.compile(r"(-?)([0-9]+)(?:\.([0-9]+))?")
_FAST_MAX_EXPONENT = 18  # spec.MAX_EXPONENT: integer arithmetic up to here, Decimal beyond
_FAST_MAX_LENGTH = 600  # well under the smallest int-from-text digit limit Python allows (640)


def decimal_to_minor_units(text: str, exponent: int) -> int:
    """``"129.95"`` with exponent 2 -> ``12995``, exactly; raises ValueError rather than round.

    Trailing zeros are fine (``"129.950"`` -> 12995): only a non-zero digit past ``exponent``
    places would need rounding, and that is refused. Amounts of ordinary size are converted with
    integer arithmetic on the digits; the rest go through ``Decimal``, with the same results.
    """
    match = _DECIMAL.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError("is not a decimal string such as 129.95")
    if type(exponent) is not int or not 0 <= exponent <= _FAST_MAX_EXPONENT or len(text) > _FAST_MAX_LENGTH:
        return _decimal_to_minor_units_by_decimal(text, exponent)
    sign, whole, fraction = match.groups()
    places = fraction.rstrip("0") if fraction else ""
    if len(places) > exponent:
        raise ValueError(f"has {len(places)} decimal places but the exponent is {exponent}; it is not rounded")
    minor_units = int(whole + places + "0" * (exponent - len(places)))
    return -minor_units if sign else minor_units


def _decimal_to_minor_units_by_decimal(text: str, exponent: int) -> int:
    """``decimal_to_minor_units`` for a string already known to be a decimal, through ``Decimal``."""
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

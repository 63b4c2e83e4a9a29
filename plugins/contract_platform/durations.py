"""Durations as contracts write them: an integer and a unit (``30s``, ``5m``, ``12h``, ``14d``, ``2w``)."""

from __future__ import annotations

import re
from datetime import timedelta

from contract_platform.errors import clipped

__all__ = ["format_duration", "parse_duration"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PATTERN = re.compile(r"^([0-9]+)([smhdw])$")
_MAX_SECONDS = 36_500 * 86_400  # a century: longer than any retention or window a contract can mean
_LONGEST_NUMBER = 12  # digits read at all
_LONGEST_TEXT = 40


def parse_duration(text: str) -> timedelta:
    """``"14d"`` -> 14 days. Raises ValueError with the accepted form when ``text`` is not a duration."""
    match = _PATTERN.match(text.strip()) if isinstance(text, str) and len(text) <= _LONGEST_TEXT else None
    if match is None:
        shown = clipped(repr(text), _LONGEST_TEXT)
        raise ValueError(f"{shown} is not a duration; write an integer and one of s, m, h, d, w (e.g. 14d)")
    number, unit = match.group(1), match.group(2)
    if len(number) > _LONGEST_NUMBER or int(number) * _UNITS[unit] > _MAX_SECONDS:
        raise ValueError(f"{text.strip()!r} is too long a duration; at most {_MAX_SECONDS // _UNITS['d']}d")
    return timedelta(seconds=int(number) * _UNITS[unit])


def format_duration(value: timedelta) -> str:
    """The shortest exact form: ``timedelta(days=14)`` -> ``"14d"``; used in queue names (``.retry.30s``)."""
    seconds = int(value.total_seconds())
    for unit in ("w", "d", "h", "m"):
        if seconds and seconds % _UNITS[unit] == 0:
            return f"{seconds // _UNITS[unit]}{unit}"
    return f"{seconds}s"

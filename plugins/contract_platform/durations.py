"""Durations as contracts write them: an integer and a unit (``30s``, ``5m``, ``12h``, ``14d``, ``2w``)."""

from __future__ import annotations

import re
from datetime import timedelta

__all__ = ["format_duration", "parse_duration"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PATTERN = re.compile(r"^([0-9]+)([smhdw])$")


def parse_duration(text: str) -> timedelta:
    """``"14d"`` -> 14 days. Raises ValueError with the accepted form when ``text`` is not a duration."""
    match = _PATTERN.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{text!r} is not a duration; write an integer and one of s, m, h, d, w (e.g. 14d)")
    return timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])


def format_duration(value: timedelta) -> str:
    """The shortest exact form: ``timedelta(days=14)`` -> ``"14d"``; used in queue names (``.retry.30s``)."""
    seconds = int(value.total_seconds())
    for unit in ("w", "d", "h", "m"):
        if seconds and seconds % _UNITS[unit] == 0:
            return f"{seconds // _UNITS[unit]}{unit}"
    return f"{seconds}s"

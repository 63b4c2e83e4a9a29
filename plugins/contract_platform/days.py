"""Day ranges as the evidence jobs take them: ``since <= day < until``, either bound left out.

One reading of a ``YYYY-MM-DD`` bound and one range check, used by the Spark jobs' options
(``contract_platform.job_options``), ``contractctl`` and the evidence DAGs' run ranges
(``contract_platform_airflow.intervals``); and one way of naming a set of days in a sentence
(``named_days``).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta

from contract_platform.errors import UsageError, clipped

__all__ = ["check_range", "named_days", "parse_day"]


def parse_day(text: str | None, name: str | None = None) -> date | None:
    """``"2026-07-01"`` -> that date; empty or None -> None (no bound). ``UsageError`` (naming ``name``) otherwise."""
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except (TypeError, ValueError):
        named = f"{name} " if name else ""
        raise UsageError(
            f"{named}{clipped(repr(text), 40)} is not a date; write YYYY-MM-DD (or leave it empty)"
        ) from None


def check_range(since: date | None, until: date | None) -> None:
    """``until`` not after ``since`` is bad input (``UsageError``); a missing bound is no bound."""
    if since is not None and until is not None and until <= since:
        raise UsageError(f"until {until} is not after since {since}: the range is since <= day < until")


def named_days(days: Iterable[date | str]) -> str:
    """Days (dates or ``YYYY-MM-DD`` strings) as a sentence names them: ``2026-07-01, 2026-07-03 to 2026-07-05``.

    Consecutive days are one range (with its length past two days), so a year of days stays one line;
    a string that is not a date is named as it is, after the dates.
    """
    found: set[date] = set()
    other: list[str] = []
    for day in days:
        if isinstance(day, date):
            found.add(day)
            continue
        try:
            found.add(date.fromisoformat(day))
        except (TypeError, ValueError):
            other.append(str(day))
    runs: list[tuple[date, date]] = []
    for day in sorted(found):
        if runs and day - runs[-1][1] == timedelta(days=1):
            runs[-1] = (runs[-1][0], day)
        else:
            runs.append((day, day))
    parts = []
    for first, last in runs:
        count = (last - first).days + 1
        if count == 1:
            parts.append(first.isoformat())
        elif count == 2:
            parts += [first.isoformat(), last.isoformat()]
        else:
            parts.append(f"{first} to {last} ({count} days)")
    return ", ".join(parts + sorted(set(other)))

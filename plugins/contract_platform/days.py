"""Day ranges as the evidence jobs take them: ``since <= day < until``, either bound left out.

One reading of a ``YYYY-MM-DD`` bound and one range check, used by the Spark jobs' options
(``spark_jobs._common``), ``contractctl`` and the evidence DAGs' run ranges
(``contract_platform_airflow.intervals``).
"""

from __future__ import annotations

from datetime import date

from contract_platform.errors import UsageError, clipped

__all__ = ["check_range", "parse_day"]


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

"""Which days an evidence DAG run covers: the scheduled run its data interval, a manual run its params.

Both evidence DAGs (``topic_archive_validation``, ``envelope_quality``) use ``DAILY``: a day-long
data interval (``[midnight, next midnight)`` UTC), not Airflow 3's default cron timetable, whose
intervals are empty. ``run_range`` turns a run into ``(since, until)`` dates (``since <= day <
until``; ``""``: no bound) that the Spark jobs take as ``--since``/``--until``:

* the ``since``/``until`` params when either is given (a manual run or a backfill chooses its range);
* else a scheduled or backfill run's data interval;
* else (a manual run without params) everything: ``("", "")``.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Any

from airflow.sdk import Param
from airflow.timetables.interval import CronDataIntervalTimetable

from contract_platform.days import check_range, parse_day
from contract_platform_airflow.runtime import run_type_of

__all__ = ["DAILY", "INTERVAL_RUN_TYPES", "archive_param", "interval_params", "run_range"]

DAILY = CronDataIntervalTimetable("0 0 * * *", timezone="UTC")
INTERVAL_RUN_TYPES = ("scheduled", "backfill")


def interval_params() -> dict[str, Param]:
    """The trigger form's *since* and *until*, the same in both evidence DAGs (read by ``run_range``)."""
    return {
        "since": Param(
            "",
            type="string",
            title="Since",
            description="YYYY-MM-DD: the first day to cover (the archive's date=YYYY-MM-DD partitions); empty with "
            "until empty: the whole archive (a scheduled run covers its data interval)",
        ),
        "until": Param(
            "", type="string", title="Until", description="YYYY-MM-DD: the first day not covered (exclusive)"
        ),
    }


def archive_param(what: str) -> dict[str, Param]:
    """The trigger form's *archive*: another archive to read than the platform's (``what`` says what it may be)."""
    return {"archive": Param("", type="string", title="Archive", description=f"{what}; empty: the platform's archive")}


def _end_day(moment: datetime) -> date:
    """The first day not in an interval ending at ``moment`` (midnight: that day; later: the next)."""
    return moment.date() if moment.timetz().replace(tzinfo=None) == time(0) else moment.date() + timedelta(days=1)


def run_range(context: dict[str, Any], params: dict[str, Any] | None = None) -> tuple[str, str]:
    """(since, until) for the run in ``context`` (see the module docstring); ``UsageError`` on a bad param."""
    given = dict(params or {})
    since, until = str(given.get("since") or ""), str(given.get("until") or "")
    if since or until:
        first, end = parse_day(since, "since"), parse_day(until, "until")
        check_range(first, end)
        return (first.isoformat() if first else "", end.isoformat() if end else "")
    start, end = context.get("data_interval_start"), context.get("data_interval_end")
    if run_type_of(context) in INTERVAL_RUN_TYPES and start is not None and end is not None and end > start:
        return start.date().isoformat(), _end_day(end).isoformat()
    return "", ""

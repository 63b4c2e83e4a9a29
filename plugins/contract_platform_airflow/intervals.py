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

from airflow.timetables.interval import CronDataIntervalTimetable

from contract_platform.days import check_range, parse_day
from contract_platform_airflow.runtime import run_type_of

__all__ = ["DAILY", "INTERVAL_RUN_TYPES", "run_range"]

DAILY = CronDataIntervalTimetable("0 0 * * *", timezone="UTC")
INTERVAL_RUN_TYPES = ("scheduled", "backfill")


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

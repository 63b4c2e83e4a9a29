"""What an incremental archive validation can know of the days before its interval (docs/archive-validation.md).

The cross-day rules need two things from before ``since``: the first copies of the dedup window's
days (DUPLICATE / CONFLICTING_DUPLICATE) and the highest sequence per ordering key of every earlier
day (OUT_OF_ORDER). Earlier runs keep both in the state; where a day was never run, its archive
partition is read again, but only inside the window. ``plan_lookback`` decides, from folder names
alone (the archive's date partitions, the state's days), which days are read from the state, which
from the archive, and which nobody can see: those make the run's cross-day evidence **incomplete**
(``Incomplete``), naming the days, and never clean.

Pure Python: ``spark_jobs/_archive_state.py`` lists the folders and reads what the plan says.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from contract_platform.days import named_days

__all__ = ["Incomplete", "LookbackPlan", "plan_lookback"]


def _days(days: Iterable[date]) -> tuple[date, ...]:
    return tuple(sorted(set(days)))


@dataclass(frozen=True)
class Incomplete:
    """Days whose archived messages a run's cross-day rules could not compare with (empty: complete).

    ``duplicates``: days of the dedup window with neither first copies in the state nor a readable
    archive partition; ``ordering``: earlier days whose sequences the ordering state lacks.
    """

    duplicates: tuple[date, ...] = ()
    ordering: tuple[date, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.duplicates and not self.ordering

    def merged(self, other: Incomplete) -> Incomplete:
        return Incomplete(_days((*self.duplicates, *other.duplicates)), _days((*self.ordering, *other.ordering)))

    def for_type(self, since: date, window: timedelta, *, ordered: bool) -> Incomplete:
        """What one message type misses: the duplicate days inside its own dedup window, ordering if it has one."""
        first = since - timedelta(days=lookback_days(window))
        return Incomplete(tuple(day for day in self.duplicates if day >= first), self.ordering if ordered else ())

    def to_dict(self) -> dict[str, list[str]]:
        return {
            "duplicates": [day.isoformat() for day in self.duplicates],
            "ordering": [day.isoformat() for day in self.ordering],
        }

    @classmethod
    def from_dict(cls, data: Any) -> Incomplete:
        """Read ``to_dict``'s JSON back; anything else (an older report has none) is complete."""
        if not isinstance(data, dict):
            return cls()

        def read(key: str) -> tuple[date, ...]:
            values = data.get(key)
            found = []
            for value in values if isinstance(values, list) else []:
                try:
                    found.append(date.fromisoformat(value))
                except (TypeError, ValueError):
                    continue
            return _days(found)

        return cls(read("duplicates"), read("ordering"))

    def describe(self) -> str:
        """One sentence, empty when complete: which checks are incomplete and for which days."""
        parts = []
        if self.duplicates:
            parts.append(f"duplicate checks miss the first copies of {named_days(self.duplicates)}")
        if self.ordering:
            parts.append(f"ordering checks miss the sequences of {named_days(self.ordering)}")
        return "; ".join(parts)


def lookback_days(window: timedelta) -> int:
    """Whole days before ``since`` a dedup window reaches into (at least one)."""
    return max(1, math.ceil(window / timedelta(days=1)))


@dataclass(frozen=True)
class LookbackPlan:
    """Where a run for ``[since, ...)`` takes each earlier day's state from.

    ``window``: the lookback days (oldest first); ``seen_from_archive``: window days without first
    copies in the state, read from their archive partitions; ``order_from_archive``: window days
    after the ordering state's day, whose sequences are read from their partitions; ``missing``:
    what nothing can give (``with_unreadable`` adds the partitions that failed to read).
    """

    since: date
    window: tuple[date, ...]
    seen_from_state: tuple[date, ...]
    seen_from_archive: tuple[date, ...]
    order_from_archive: tuple[date, ...]
    missing: Incomplete

    @property
    def from_archive(self) -> tuple[date, ...]:
        """Every day whose archive partitions the run reads before its interval, all inside the window."""
        return _days((*self.seen_from_archive, *self.order_from_archive))

    def with_unreadable(self, unreadable: Iterable[date]) -> Incomplete:
        failed = set(unreadable)
        return self.missing.merged(
            Incomplete(
                _days(day for day in self.seen_from_archive if day in failed),
                _days(day for day in self.order_from_archive if day in failed),
            )
        )


def plan_lookback(
    since: date,
    days_back: int,
    *,
    archived: Iterable[date],
    seen: Iterable[date],
    last_day: date | None,
    last_gaps: Iterable[date] = (),
) -> LookbackPlan:
    """Which earlier days come from the state, which from the archive, and which are missing.

    ``archived``: the days with an archive partition; ``seen``: the days with first copies in the
    state (a day a run found empty counts: it was seen); ``last_day``: the latest day before ``since``
    with an ordering state, which lacks ``last_gaps``. Only days before ``since`` count.

    A day is *unknown* when the archive has no partition for it, no run kept it, and the archive (or
    the state) already held an earlier day: a day without traffic cannot be told from a partition
    that is gone. An unknown day is missing for both rules; an archived day outside the window is
    missing for ordering (it is never read: the window bounds what a run reads, not history).
    """
    archived_days = {day for day in archived if day < since}
    seen_days = {day for day in seen if day < since}
    history = archived_days | seen_days | ({last_day} if last_day is not None else set())
    began = min(history, default=None)
    window = tuple(since - timedelta(days=n) for n in range(max(1, days_back), 0, -1))
    in_window = set(window)

    def unknown(day: date) -> bool:
        return day not in archived_days and day not in seen_days and began is not None and day > began

    seen_from_state = tuple(day for day in window if day in seen_days)
    seen_from_archive = tuple(day for day in window if day not in seen_days and day in archived_days)
    missing_duplicates = [day for day in window if unknown(day)]
    order_from_archive: list[date] = []
    missing_ordering = [day for day in last_gaps if day < since]
    start = last_day + timedelta(days=1) if last_day is not None else began
    day = start
    while day is not None and day < since:
        if day in archived_days:
            (order_from_archive if day in in_window else missing_ordering).append(day)
        elif unknown(day):
            missing_ordering.append(day)
        day += timedelta(days=1)
    return LookbackPlan(
        since=since,
        window=window,
        seen_from_state=seen_from_state,
        seen_from_archive=seen_from_archive,
        order_from_archive=tuple(order_from_archive),
        missing=Incomplete(_days(missing_duplicates), _days(missing_ordering)),
    )

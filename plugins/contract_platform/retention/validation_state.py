"""Incremental validation's state aged out with the archive it describes (docs/archive-validation.md#retention).

The state (``archive_layout.validation_state_dir``: ``seen/date=D/`` and ``last/date=D/``) gains a day per run and
is never read further back than the longest dedup window (``MAX_DEDUP_WINDOW``, 30 days) before a run's interval;
runs are made for days the archive still holds. So, in the same run that deletes partitions:

1. the **horizon** is the archive's oldest partition left (every exchange; today when none is) minus the longest
   dedup window, and no later than today minus ``1 day + the longest retention.archive`` of the catalogue: no run
   of a day the archive still holds reads a day before it;
2. the **base** is the newest ``last/`` day before the horizon (a day with traffic), else the newest state day
   before it: ``last/`` is cumulative and a run starts ordering from the latest such day before its interval,
   so the first days after the horizon still start from it; and the ``seen/`` days from the base on are what
   tell the lookback that the days after the base are no gap (``validation.lookback.plan_lookback``);
3. every state day before the base is removed (``seen/`` and ``last/``, ``_gaps.json`` with it): no run reads
   it, and what it knew of ordering is in the base's cumulative ``last/``.

A run on days nothing later needs gives the same findings with or without those days (the test in
``tests/spark/test_retention_validation.py``). An exchange no contract declares is never deleted: its oldest
partition keeps the horizon back, so its state stays.
"""

from __future__ import annotations

import shutil
from datetime import date, datetime, timedelta
from pathlib import Path

from contract_platform.archive_layout import PARTITION_PREFIX, partition_day
from contract_platform.catalog.model import MAX_DEDUP_WINDOW, Catalog
from contract_platform.errors import ArchiveError

__all__ = ["STATE_KINDS", "prune_validation_state", "state_horizon"]

STATE_KINDS = ("seen", "last")


def state_horizon(catalog: Catalog, root: Path, now: datetime) -> date:
    """The first day whose state a run of a day the archive holds may read (days before it are not read)."""
    oldest = min((day for exchange in _folders(root) for day in _days(exchange)), default=now.date())
    window = max((c.retention.archive for c in catalog), default=timedelta(0))
    return min(oldest - MAX_DEDUP_WINDOW, (now - window - timedelta(days=1)).date() - MAX_DEDUP_WINDOW)


def prune_validation_state(catalog: Catalog, root: Path, state: Path, *, now: datetime) -> tuple[date, ...]:
    """Remove the state days no run can read any more (the module's rule); the days removed, oldest first."""
    horizon = state_horizon(catalog, root, now)
    days = sorted({day for kind in STATE_KINDS for day in _days(state / kind) if day < horizon})
    ordered = [day for day in _days(state / "last") if day < horizon]
    base = max(ordered, default=max(days, default=None))
    removed = tuple(day for day in days if base is not None and day < base)
    for day in removed:
        for kind in STATE_KINDS:
            folder = state / kind / f"{PARTITION_PREFIX}{day.isoformat()}"
            try:
                shutil.rmtree(folder)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise ArchiveError(f"cannot remove {folder} from the validation state: {exc.strerror or exc}") from exc
    return removed


def _folders(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]


def _days(folder: Path) -> list[date]:
    if not folder.is_dir():
        return []
    days = (partition_day(p.name) for p in folder.iterdir() if p.is_dir() and p.name.startswith(PARTITION_PREFIX))
    return [day for day in days if day is not None]

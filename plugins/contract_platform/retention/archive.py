"""Archive retention: delete each archive partition once it is past its contract's ``retention.archive``.

The archive is kept per exchange and day (``archive_layout``: ``<root>/<exchange>/date=D/``), and a partition
holds every version the exchange carries. So, for each partition:

1. its **window** is the longest ``retention.archive`` of the catalogue's contracts on its exchange (retired
   versions included: a retired version's archive goes once its window ends, as any other's). An exchange no
   contract of the catalogue names declares no retention: its partitions are kept (``UNDECLARED``);
2. it is **past** when its whole day is: ``D + 1 day + window <= now``;
3. it is **held** while any contract on its exchange has a hold in force (``retention.holds``): catalogue holds
   and investigation holds alike; the partition is kept and the hold named;
4. otherwise it is **deleted**: renamed into ``<root>/.retention-trash/`` (one atomic rename: every reader sees
   the whole partition or none of it, and a reader's ``<root>/*/date=*`` never lists the trash), measured
   (files, records, bytes; never a record's content), recorded as ``archive_retention`` evidence for every
   contract of the exchange, marked recorded, then removed.

**Twice or at once.** A run holds ``<root>/.retention.lock`` (``flock``) throughout; a run that finds it taken
does nothing and says so (``busy``), never an error, so two workers sharing the archive volume may both start
the daily run. A second run finds nothing past its window any more. A run killed midway leaves its partition in
the trash: the next run measures it, records it unless it was recorded already, and removes it.

What reads the archive afterwards: docs/archive-validation.md#retention (incremental validation keeps its own
state, whose days no run can read any more the same run removes: ``retention.validation_state``; the retention
scan's last-seen of a type stays past its window).
"""

from __future__ import annotations

import fcntl
import gzip
import os
import shutil
import uuid
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any

from contract_platform import settings
from contract_platform.archive_layout import (
    PARTITION_PREFIX,
    is_archive_file,
    is_compressed,
    kept_since,
    partition_day,
    validation_state_dir,
)
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.durations import format_duration
from contract_platform.errors import ArchiveError
from contract_platform.evidence import Registry, Verdict, record
from contract_platform.evidence.figures import ArchiveRetentionFigures
from contract_platform.retention.holds import RetentionHold
from contract_platform.retention.validation_state import prune_validation_state

__all__ = [
    "LOCK_NAME",
    "TRASH_NAME",
    "Action",
    "PartitionDecision",
    "PartitionFigures",
    "RetentionRun",
    "apply_archive_retention",
    "plan_archive_retention",
]

LOCK_NAME = ".retention.lock"
TRASH_NAME = ".retention-trash"
_RECORDED = ".retention-recorded"  # inside a trash entry: its evidence is in the store
_SEPARATOR = "@"  # trash entry: <exchange>@<YYYY-MM-DD>@<token>


class Action(StrEnum):
    DELETE = "delete"
    KEEP = "keep"  # inside its window
    HELD = "held"  # past its window, kept by a hold
    UNDECLARED = "undeclared"  # no contract of the catalogue declares its exchange's retention


@dataclass(frozen=True)
class PartitionDecision:
    exchange: str
    day: date
    action: Action
    window: timedelta | None  # None when undeclared
    deletable_at: datetime | None  # when its whole day is past the window
    held_by: tuple[RetentionHold, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "exchange": self.exchange,
            "day": self.day.isoformat(),
            "action": str(self.action),
            "window": format_duration(self.window) if self.window is not None else None,
            "deletableAt": self.deletable_at.isoformat() if self.deletable_at else None,
            "heldBy": [h.describe() for h in self.held_by],
        }


@dataclass(frozen=True)
class PartitionFigures:
    """What one deleted partition held: counts, never contents."""

    exchange: str
    day: date
    files: int
    records: int
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {"exchange": self.exchange, "day": self.day.isoformat(), "files": self.files,
                "records": self.records, "bytes": self.bytes}  # fmt: skip


@dataclass(frozen=True)
class RetentionRun:
    """One run: every partition's decision, what was deleted (nothing on a dry run), and whether it ran at all."""

    root: Path
    now: datetime
    decisions: tuple[PartitionDecision, ...]
    deleted: tuple[PartitionFigures, ...] = ()
    dry_run: bool = False
    busy: bool = False  # another run held the lock: this one did nothing
    evidence_ids: tuple[int, ...] = field(default=())
    pruned_state: tuple[date, ...] = ()  # validation state days removed (``retention.validation_state``)

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "now": self.now.isoformat(),
            "dryRun": self.dry_run,
            "busy": self.busy,
            "decisions": [d.to_dict() for d in self.decisions],
            "deleted": [d.to_dict() for d in self.deleted],
            "evidence": list(self.evidence_ids),
            "prunedState": [day.isoformat() for day in self.pruned_state],
        }


def plan_archive_retention(
    catalog: Catalog,
    root: Path,
    *,
    now: datetime,
    holds: Mapping[str, tuple[RetentionHold, ...]],
    message_type: str | None = None,
) -> tuple[PartitionDecision, ...]:
    """Every partition under ``root`` (only ``message_type``'s exchange when given) with what retention does to it."""
    exchanges = [catalog.require(message_type).transport.exchange] if message_type else _exchanges(root)
    decisions = []
    for exchange in exchanges:
        contracts = catalog.by_exchange(exchange)
        window = catalog.archive_window(exchange)
        held_by = tuple(h for c in contracts for h in holds.get(c.message_type, ()))
        for day in _days(root / exchange):
            decisions.append(_decide(exchange, day, window, held_by, now))
    return tuple(decisions)


def _decide(
    exchange: str, day: date, window: timedelta | None, held_by: tuple[RetentionHold, ...], now: datetime
) -> PartitionDecision:
    if window is None:
        return PartitionDecision(exchange, day, Action.UNDECLARED, None, None)
    deletable_at = datetime.combine(day + timedelta(days=1), time(0), UTC) + window
    if day >= kept_since(window, now):
        return PartitionDecision(exchange, day, Action.KEEP, window, deletable_at)
    if held_by:
        return PartitionDecision(exchange, day, Action.HELD, window, deletable_at, held_by)
    return PartitionDecision(exchange, day, Action.DELETE, window, deletable_at)


def apply_archive_retention(
    catalog: Catalog,
    root: Path,
    *,
    now: datetime,
    holds: Mapping[str, tuple[RetentionHold, ...]],
    registry: Registry | None,
    message_type: str | None = None,
    dry_run: bool = False,
    run_id: str | None = None,
    validation_state: Path | None = None,
) -> RetentionRun:
    """Delete every partition past its window that no hold keeps, with evidence, then the validation state's days
    no run can read any more; the one function the ``archive_retention`` DAG and ``contractctl retention apply``
    call. ``registry`` may be None on a dry run only. ``validation_state``: the archive's incremental validation
    state (default ``archive_layout.validation_state_dir(root, <data>)``, where the Spark job keeps it)."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    root = Path(root)
    if not root.is_dir():
        return RetentionRun(root, now, (), dry_run=dry_run)  # nothing archived yet: nothing to delete
    if dry_run:
        return RetentionRun(root, now, plan_archive_retention(catalog, root, now=now, holds=holds,
                                                              message_type=message_type), dry_run=True)  # fmt: skip
    if registry is None:
        raise ValueError("deleting archive partitions records evidence: pass the registry")
    with _exclusive(root) as taken:
        if not taken:
            return RetentionRun(root, now, (), busy=True)
        decisions = plan_archive_retention(catalog, root, now=now, holds=holds, message_type=message_type)
        trash = root / TRASH_NAME
        for decision in decisions:
            if decision.action is Action.DELETE:
                _move_to_trash(root, trash, decision)
        deleted, evidence = _empty_trash(catalog, trash, registry, now, run_id)
        state = validation_state or validation_state_dir(root, settings.data_dir())
        pruned = prune_validation_state(catalog, root, state, now=now)
    return RetentionRun(root, now, decisions, deleted, evidence_ids=evidence, pruned_state=pruned)


@contextmanager
def _exclusive(root: Path) -> Iterator[bool]:
    try:
        fd = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ArchiveError(f"{root}: cannot create the retention lock ({exc.strerror or exc})") from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _exchanges(root: Path) -> list[str]:
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def _days(folder: Path) -> list[date]:
    if not folder.is_dir():
        return []
    days = (partition_day(p.name) for p in folder.iterdir() if p.is_dir() and p.name.startswith(PARTITION_PREFIX))
    return sorted(day for day in days if day is not None)


def _move_to_trash(root: Path, trash: Path, decision: PartitionDecision) -> None:
    source = root / decision.exchange / f"{PARTITION_PREFIX}{decision.day.isoformat()}"
    target = trash / _SEPARATOR.join((decision.exchange, decision.day.isoformat(), uuid.uuid4().hex))
    try:
        trash.mkdir(exist_ok=True)
        os.rename(source, target)
    except FileNotFoundError:
        return  # gone since it was listed
    except OSError as exc:
        raise ArchiveError(f"cannot move {source} out of the archive: {exc.strerror or exc}") from exc


def _empty_trash(
    catalog: Catalog, trash: Path, registry: Registry, now: datetime, run_id: str | None
) -> tuple[tuple[PartitionFigures, ...], tuple[int, ...]]:
    """Measure, record and remove every trash entry (this run's and any a killed run left)."""
    entries = sorted(trash.iterdir()) if trash.is_dir() else []
    measured: list[tuple[Path, PartitionFigures]] = []
    for entry in entries:
        exchange, _, day_text = entry.name.rpartition(_SEPARATOR)[0].rpartition(_SEPARATOR)
        try:
            day = date.fromisoformat(day_text)
        except ValueError:
            continue  # not an entry of ours
        measured.append((entry, _measure(entry, exchange, day)))
    by_exchange: dict[str, list[PartitionFigures]] = {}
    for entry, figures in measured:
        if not (entry / _RECORDED).exists():
            by_exchange.setdefault(figures.exchange, []).append(figures)
    evidence = []
    for exchange, partitions in sorted(by_exchange.items()):
        evidence.extend(_record(registry, catalog.by_exchange(exchange), exchange, partitions, now, run_id))
    for entry, _ in measured:
        (entry / _RECORDED).touch()
        _remove(entry)
    return tuple(figures for _, figures in measured), tuple(evidence)


def _record(
    registry: Registry,
    contracts: list[Contract],
    exchange: str,
    partitions: list[PartitionFigures],
    now: datetime,
    run_id: str | None,
) -> list[int]:
    window = max((c.retention.archive for c in contracts), default=None)
    figures = ArchiveRetentionFigures(
        exchange=exchange,
        window=format_duration(window) if window is not None else None,
        before=kept_since(window, now).isoformat() if window is not None else None,
        partitions=tuple(
            {"day": p.day.isoformat(), "files": p.files, "records": p.records, "bytes": p.bytes}
            for p in sorted(partitions, key=lambda p: p.day)
        ),
        files=sum(p.files for p in partitions),
        records=sum(p.records for p in partitions),
        bytes=sum(p.bytes for p in partitions),
    )
    return [
        record(registry, c.message_type, c.version, figures, verdict=Verdict.PASS, run_id=run_id, collected_at=now).id
        for c in contracts
    ]


def _measure(entry: Path, exchange: str, day: date) -> PartitionFigures:
    files = records = size = 0
    for path in entry.rglob("*"):
        if not path.is_file() or path.name == _RECORDED:
            continue
        size += path.stat().st_size
        if is_archive_file(path.name):
            files += 1
            records += _count_lines(path)
    return PartitionFigures(exchange, day, files, records, size)


def _count_lines(path: Path) -> int:
    """Newlines, read in blocks: a count, nothing of what the lines say is kept."""
    opener = gzip.open if is_compressed(path.name) else open
    count = 0
    try:
        with opener(path, "rb") as stream:
            while block := stream.read(1 << 20):
                count += block.count(b"\n")
    except (OSError, EOFError, zlib.error):
        pass  # a damaged gzip member: counted as far as it reads
    return count


def _remove(entry: Path) -> None:
    def ignore_gone(function: Any, path: str, info: Any) -> None:
        if not isinstance(info[1], FileNotFoundError):
            raise ArchiveError(f"cannot remove {path} from the retention trash: {info[1]}")

    shutil.rmtree(entry, onerror=ignore_gone)

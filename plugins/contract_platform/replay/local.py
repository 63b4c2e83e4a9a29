"""Replay's archive engine in this process, for a small window on the local file system (docs/replay.md#engines).

A Spark run pays for its JVM, session and Python workers before it reads a line: 10 s and more on two
cores, most of ``contractctl check --replay`` for a window of a few thousand messages. The work itself is
the same in one process: this engine lists the window's date partitions of the target's exchange as the
Spark job does, cuts them into the same ``Split``s (``validation.reading.plan_splits``) and judges every
line with the same ``judge_for(bundle, plan).replay``, so its tally is the one the Spark job adds up
(``tests/spark/test_replay_engines.py`` holds them equal). Only ``contractctl check`` chooses it
(``choose_engine``); the DAG's job stays on Spark.

What is listed, as Spark's file index lists it for the job (``spark_jobs.validate_archive.list_archive``):

* the partitions ``<exchange>/date=YYYY-MM-DD`` and ``<exchange>/*/date=YYYY-MM-DD`` with
  ``since <= date < until`` (a ``date=`` folder whose name is not a date is no partition);
* under each, at any depth, every file named ``*.jsonl`` or ``*.jsonl.gz`` (case matters): gzipped files
  are read whole as a stream, plain ones by byte range, both by ``validation.reading``;
* a file or folder under a partition whose name starts with ``.``, or with ``_`` and holds no ``=``
  (hidden files, ``_temporary`` folders), is left out with everything under it;
* symbolic links are followed, as Hadoop's local file system follows them: a partition that links
  outside the archive is read; a link that leads nowhere, and anything but a regular file or a folder
  (a FIFO would block the run), is left out. A link back to a folder above it is an ``ArchiveError``
  naming it (Spark would read the same files again, once per turn of the loop).

Only plain paths and ``file:`` URIs are local; an ``s3a://`` or ``hdfs://`` archive is Spark's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from enum import StrEnum
from pathlib import Path
from urllib.parse import unquote, urlsplit

from contract_platform.archive_layout import file_work, is_archive_file, partition_day
from contract_platform.errors import ArchiveError, UsageError
from contract_platform.replay.judge import Tally, judge_for
from contract_platform.replay.run import ReplayResult, ReplayTarget, missing_archive, replay_versions, window_of
from contract_platform.validation.bundle import CatalogBundle
from contract_platform.validation.reading import line_batches, open_file, plan_splits

__all__ = [
    "LOCAL_MAX_BYTES",
    "Engine",
    "EngineChoice",
    "choose_engine",
    "local_root",
    "replay_locally",
    "tally_local",
    "window_files",
]

# Bytes of records (the windows' partitions, summed over the versions replayed) up to which
# ``contractctl check --replay`` judges them in this process. Measured on 2 cores (benchmarks/README.md,
# "In-process against Spark, whole process"): Spark was never the faster up to 261 MB (23 s in-process
# against 121 s); this is where one process is still a short wait; larger windows want both cores.
LOCAL_MAX_BYTES = 256 * 2**20


class Engine(StrEnum):
    """Where the archive's records are judged: ``auto`` chooses (``choose_engine``)."""

    AUTO = "auto"
    LOCAL = "local"
    SPARK = "spark"


@dataclass(frozen=True)
class EngineChoice:
    """The engine a replay runs on, why, and the bytes of the windows' partitions when they were measured."""

    engine: Engine
    why: str
    window_bytes: int | None = None

    def describe(self, versions: int) -> str:
        """One line for the run's output: "replay ran in-process: 3 versions, 2.1 MB"."""
        where = "in-process" if self.engine is Engine.LOCAL else "on Spark"
        size = f", {_megabytes(self.window_bytes)}" if self.window_bytes is not None else ""
        return f"replay ran {where}: {versions} version{'' if versions == 1 else 's'}{size}"


def local_root(archive: str) -> Path | None:
    """The archive root as a local path (a plain path or a ``file:`` URI); None for any other file system."""
    parts = urlsplit(archive)
    if parts.scheme == "file":
        return Path(unquote(parts.path)) if parts.netloc in ("", "localhost") else None
    if parts.scheme and (len(parts.scheme) > 1 or "://" in archive):  # "s3a://", "hdfs://"; "C:" is a drive
        return None
    return Path(archive)


def choose_engine(
    requested: Engine | str,
    archive: str,
    targets: Sequence[ReplayTarget],
    now: datetime | None = None,
    limit: int = LOCAL_MAX_BYTES,
) -> EngineChoice:
    """In-process when every target's window is local and their partitions hold at most ``limit`` bytes of
    records together (gzipped files weighed by ``archive_layout.GZIP_WEIGHT``; ``auto``), or when asked (``local``:
    ``UsageError`` for an archive that is not local)."""
    requested = Engine(requested)
    if requested is Engine.SPARK:
        return EngineChoice(Engine.SPARK, "--engine spark")
    root = local_root(archive)
    if root is None:
        if requested is Engine.LOCAL:
            raise UsageError(
                f"--engine local: {archive} is not on the local file system; give a local ARCHIVE, or use "
                "--engine spark (or auto) to read it on Spark"
            )
        return EngineChoice(Engine.SPARK, f"the archive {archive} is not on the local file system")
    total = work = 0
    for target in targets:
        since, until = window_of(target.contract, now)
        for path, size in window_files(root, target.exchange, since, until):
            total += size
            work += file_work(path, size)
    held = f"the windows' partitions hold {_megabytes(total)}, about {_megabytes(work)} of records"
    if requested is Engine.LOCAL:
        return EngineChoice(Engine.LOCAL, f"--engine local; {held}", total)
    if work <= limit:
        return EngineChoice(Engine.LOCAL, f"{held}, at most {_megabytes(limit)}: no JVM needed", total)
    return EngineChoice(Engine.SPARK, f"{held}, over {_megabytes(limit)}: Spark uses every core", total)


def replay_locally(
    targets: Sequence[ReplayTarget],
    archive: str,
    catalog_dir: str,
    *,
    in_flight: bool = True,
    broker_url: str | None = None,
    now: datetime | None = None,
) -> list[ReplayResult]:
    """``replay.run.replay_versions`` with the archive judged in this process (``tally_local``)."""
    root = local_root(archive)
    if root is None or not root.exists():
        raise missing_archive(archive)
    return replay_versions(
        targets, archive, catalog_dir, tally_local, in_flight=in_flight, broker_url=broker_url, now=now
    )


def tally_local(archive: str, target: ReplayTarget, bundle: CatalogBundle, since: date, until: date) -> Tally:
    """The in-process archive engine (``replay.run.TallyOf``): the window's records judged one by one."""
    root = local_root(archive)
    if root is None:
        raise ArchiveError(f"{archive}: not on the local file system; replay it on Spark (--engine spark)")
    judge = judge_for(bundle, target.plan)
    tally = Tally()
    for split in plan_splits(window_files(root, target.exchange, since, until)):
        try:
            stream = open_file(split.uri)
        except ArchiveError as exc:
            raise ArchiveError(
                f"{split.uri}: cannot open the archive file ({exc.__cause__ or exc}); check that it is readable, "
                "or run again if it was moved away during the run"
            ) from exc
        try:
            for lines in line_batches(split, stream):
                for line in lines:
                    judge.replay(line, tally)
        except OSError as exc:
            raise ArchiveError(
                f"{split.uri}: cannot read the archive file: {exc.strerror or exc}; check that it is readable"
            ) from exc
        finally:
            stream.close()
    return tally


def window_files(root: Path, exchange: str, since: date, until: date) -> list[tuple[str, int]]:
    """(path, size) of every archive file in the date partitions ``since <= date < until`` of ``exchange``."""
    folder = root / exchange
    partitions = set()
    for entry in _entries(folder):
        if _is_dir(entry):
            if _in_window(entry.name, since, until):
                partitions.add(entry.path)
            partitions.update(
                e.path for e in _entries(Path(entry.path)) if _in_window(e.name, since, until) and _is_dir(e)
            )
    files: dict[str, int] = {}
    for partition in sorted(partitions):
        stat = os.stat(partition)
        files.update(_archive_files(Path(partition), frozenset({(stat.st_dev, stat.st_ino)})))
    return sorted(files.items())


def _in_window(name: str, since: date, until: date) -> bool:
    day = partition_day(name)  # as the Spark job reads a partition's name
    return day is not None and since <= day < until


def _archive_files(folder: Path, above: frozenset[tuple[int, int]]) -> Iterator[tuple[str, int]]:
    for entry in _entries(folder):
        name = entry.name
        if name.startswith(".") or (name.startswith("_") and "=" not in name):
            continue
        try:
            if entry.is_dir():
                stat = entry.stat()
                if (stat.st_dev, stat.st_ino) in above:
                    raise ArchiveError(
                        f"{entry.path}: a symbolic link back to a folder above it (a loop); remove it from the archive"
                    )
                yield from _archive_files(Path(entry.path), above | {(stat.st_dev, stat.st_ino)})
            elif entry.is_file() and is_archive_file(name):
                yield entry.path, entry.stat().st_size
        except FileNotFoundError:  # a link that leads nowhere, or a file gone meanwhile: not listed, as Spark
            continue
        except OSError as exc:
            raise ArchiveError(
                f"{entry.path}: cannot read it: {exc.strerror or exc}; check the archive is readable"
            ) from exc


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    """The entries of ``folder`` by name; none when it does not exist or is not a folder."""
    try:
        with os.scandir(folder) as found:
            return sorted(found, key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise ArchiveError(
            f"{folder}: cannot list the archive folder: {exc.strerror or exc}; check it is readable"
        ) from exc


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _megabytes(size: int | None) -> str:
    return f"{(size or 0) / 1e6:.1f} MB"

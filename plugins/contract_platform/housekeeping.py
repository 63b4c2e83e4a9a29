"""Housekeeping: nothing the platform keeps grows without bound (docs/deploy.md#what-the-platform-keeps).

Archive partitions follow their contracts' ``retention.archive`` (``retention.apply_archive_retention``). Everything
else the platform writes on its own account is here: ``RETENTIONS``, one table of each kind with its default and its
setting, and one pruning function per kind. Each function

- takes the folder (or store) it prunes and a ``now``, and touches nothing outside that folder: it walks without
  following links and never leaves it;
- always keeps what a reader needs (each suite's newest Data Docs run, each folder's newest report, the class-data
  archive of this machine's Java and Spark, the latest evidence of each type, kind and version) however old it is;
- returns what it removed (``Pruned``: how many, how many bytes) and is idempotent: a second run removes nothing;
- with ``dry_run`` removes nothing and returns what it would remove (how many, how many bytes; never what is in it);
- is safe at once with another run or a writer: what goes is first renamed into ``<folder>/.housekeeping-trash/``
  (one atomic rename; a file another run took already is skipped), then deleted; a run killed midway leaves its
  trash, which the next run empties. A log still being written is never old (its time is its last write).

``run_task`` is each task of the ``housekeeping`` DAG (``Task``), over the places a deployment configures (``Places``);
``contractctl housekeeping`` runs the same three, in order. ``airflow_clean_command`` is the Airflow metadata's own
``airflow db clean``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from contract_platform import jvm, settings
from contract_platform.durations import format_duration
from contract_platform.errors import HousekeepingError, UsageError

__all__ = [
    "MIN_FREE_RATIO",
    "RETENTIONS",
    "TASK_KINDS",
    "TRASH_NAME",
    "Kind",
    "Places",
    "Pruned",
    "Retention",
    "Task",
    "airflow_clean_command",
    "airflow_installed",
    "airflow_log_folder",
    "clean_airflow_metadata",
    "housekeep",
    "prune_audit_copies",
    "prune_class_archives",
    "prune_data_docs",
    "prune_evidence",
    "prune_logs",
    "prune_quarantine",
    "prune_reports",
    "retention",
    "retentions",
    "run_task",
]

TRASH_NAME = ".housekeeping-trash"
DAY = timedelta(days=1)
# An SQLite registry is compacted (VACUUM, a copy of the file) when at least this share of it is free pages: SQLite
# reuses the pages deleted rows leave, so a store pruned daily stays level; a large prune gives the space back.
MIN_FREE_RATIO = 0.25


class Kind(StrEnum):
    DATA_DOCS = "data_docs"
    LOGS = "logs"
    REPORTS = "reports"
    QUARANTINE = "quarantine"
    AUDIT_COPIES = "audit_copies"
    CLASS_ARCHIVES = "class_archives"
    EVIDENCE = "evidence"
    AIRFLOW_METADATA = "airflow_metadata"


@dataclass(frozen=True)
class Retention:
    """How long one kind is kept: ``$setting`` (a duration), else ``default``; ``always`` is kept at any age."""

    setting: str
    default: timedelta
    what: str
    always: str


RETENTIONS: Mapping[Kind, Retention] = {
    Kind.DATA_DOCS: Retention(
        "CONTRACT_RETENTION_DATA_DOCS", 30 * DAY,
        "Great Expectations results and their Data Docs pages, one set per suite and run "
        "(<data>/gx/uncommitted/validations/, .../data_docs/local_site/validations/)",
        "each suite's newest run",
    ),
    Kind.LOGS: Retention(
        "CONTRACT_RETENTION_LOGS", 30 * DAY,
        "step logs: the main job's, the recorder's, the CLI's Spark logs (<data>/logs/) and Airflow's task logs "
        "(<data>/airflow/logs/, or its base_log_folder)",
        "a log written within the window (one still written is never old)",
    ),
    Kind.REPORTS: Retention(
        "CONTRACT_RETENTION_REPORTS", 90 * DAY,
        "job reports, one per run (<data>/reports/<job>/, <data>/migrations/<type>/parity-*.json)",
        "each folder's newest report",
    ),
    Kind.QUARANTINE: Retention(
        "CONTRACT_RETENTION_QUARANTINE", 30 * DAY,
        "invalid records an archive validation set aside, payloads included (<data>/quarantine/<run>/)",
        "nothing",
    ),
    Kind.AUDIT_COPIES: Retention(
        "CONTRACT_RETENTION_AUDIT_COPIES", 180 * DAY,
        "the retirement audit's timestamped copies (<docs>/retirement/<type>/<stamp>.json, .md)",
        "latest.json, latest.md and the newest stamped pair",
    ),
    Kind.CLASS_ARCHIVES: Retention(
        "CONTRACT_RETENTION_CLASS_ARCHIVES", 30 * DAY,
        "class-data archives of Java/Spark versions ($CONTRACT_JVM_CLASS_CACHE/spark-classes-*.jsa)",
        "the archive of this machine's Java and Spark",
    ),
    Kind.EVIDENCE: Retention(
        "CONTRACT_RETENTION_EVIDENCE", 180 * DAY,
        "evidence rows of the registry store (cp_evidence)",
        "the latest of each type, kind and contract version, and any a status change names",
    ),
    Kind.AIRFLOW_METADATA: Retention(
        "CONTRACT_RETENTION_AIRFLOW_METADATA", 90 * DAY,
        "the Airflow metadata database's history: DAG runs, task instances, XComs, its log table, jobs",
        "each DAG's latest scheduled run (airflow db clean keeps it)",
    ),
}  # fmt: skip


def retention(kind: Kind) -> timedelta:
    """How long ``kind`` is kept here: its setting, else its default (ValueError naming the setting when bad)."""
    entry = RETENTIONS[kind]
    return settings.retention_setting(entry.setting, entry.default)


@dataclass(frozen=True)
class Pruned:
    """What one kind's pruning removed (with ``dry_run``: would remove): ``removed`` files, folders or rows (None: the
    tool does not say), ``bytes`` (evidence: what the store's file shrank by); ``note``: where it ran, what it did
    besides or left alone."""

    kind: Kind
    before: datetime  # what was older than this went (save what is always kept)
    removed: int | None
    bytes: int = 0
    dry_run: bool = False
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": str(self.kind), "before": self.before.isoformat(), "removed": self.removed,
                "bytes": self.bytes, "dryRun": self.dry_run, "note": self.note}  # fmt: skip


# -- files --------------------------------------------------------------------------------------------------------

_GX_RUN = re.compile(r"^(\d{8}T\d{6})(?:\.\d+)?Z$")  # GX's run_time folder: 20261129T064715.233009Z
_AUDIT_COPY = re.compile(r"^(\d{8}T\d{6})Z\.(?:json|md)$")  # retirement.report: <stamp>.json and <stamp>.md


def prune_data_docs(gx_root: Path, *, now: datetime, keep: timedelta, dry_run: bool = False) -> Pruned:
    """Great Expectations' results and Data Docs pages older than ``keep`` (by their run time), except each suite's
    newest run; when any went, the Data Docs index is built again from what is left (``quality.data_docs``), so it
    links to no page removed."""
    cutoff = _cutoff(now, keep)
    uncommitted = Path(gx_root) / "uncommitted"
    victims: list[Path] = []
    for store in (uncommitted / "validations", uncommitted / "data_docs" / "local_site" / "validations"):
        runs: dict[Path, list[tuple[datetime, Path]]] = {}
        for folder in _folders(store):
            at = _stamp(_GX_RUN, folder.name)
            if at is not None:
                runs.setdefault(folder.parent, []).append((at, folder))
        for found in runs.values():
            found.sort()
            victims += [folder for at, folder in found[:-1] if at < cutoff]
    removed, size = _discard(uncommitted, victims, dry_run=dry_run)
    note = ""
    if removed and not dry_run:
        from contract_platform.quality.data_docs import rebuild_index

        index = rebuild_index(Path(gx_root))
        note = "Data Docs index built again from the runs kept" if index is not None else ""
    return Pruned(Kind.DATA_DOCS, cutoff, removed, size, dry_run, note)


def prune_logs(
    data: Path, *, now: datetime, keep: timedelta, airflow_logs: Path | None = None, dry_run: bool = False
) -> Pruned:
    """Log files under ``<data>/logs`` and ``<data>/airflow/logs`` (and ``airflow_logs``, Airflow's own log folder
    when it is elsewhere) last written before ``now - keep``, and the folders they leave empty."""
    cutoff = _cutoff(now, keep)
    removed = size = 0
    roots = [Path(data) / "logs", Path(data) / "airflow" / "logs"]
    if airflow_logs is not None and Path(airflow_logs).resolve() != Path(Path(airflow_logs).resolve().anchor):
        roots.append(Path(airflow_logs))  # never a filesystem's root, whatever the configuration says
    for root in dict.fromkeys(roots):
        count, weight = _discard(root, [p for p in _files(root) if _mtime(p) < cutoff], dry_run=dry_run)
        removed, size = removed + count, size + weight
        if not dry_run:
            _remove_empty_folders(root, cutoff)
    return Pruned(Kind.LOGS, cutoff, removed, size, dry_run)


def prune_reports(data: Path, *, now: datetime, keep: timedelta, dry_run: bool = False) -> Pruned:
    """Per-run reports (``<data>/reports/<job>/``, ``<data>/migrations/<type>/``) older than ``keep``, except each
    folder's newest."""
    cutoff = _cutoff(now, keep)
    removed = size = 0
    for root in (Path(data) / "reports", Path(data) / "migrations"):
        victims = []
        for folder in _children(root, dirs=True):
            files = sorted((_mtime(p), p.name, p) for p in _children(folder, dirs=False))
            victims += [path for at, _, path in files[:-1] if at < cutoff]
        count, weight = _discard(root, victims, dry_run=dry_run)
        removed, size = removed + count, size + weight
    return Pruned(Kind.REPORTS, cutoff, removed, size, dry_run)


def prune_quarantine(data: Path, *, now: datetime, keep: timedelta, dry_run: bool = False) -> Pruned:
    """Quarantine folders (``<data>/quarantine/<run>/``, invalid records with their payloads) older than ``keep``."""
    cutoff = _cutoff(now, keep)
    root = Path(data) / "quarantine"
    victims = [p for p in _children(root, dirs=True) if _mtime(p) < cutoff]
    removed, size = _discard(root, victims, dry_run=dry_run)
    return Pruned(Kind.QUARANTINE, cutoff, removed, size, dry_run)


def prune_audit_copies(docs: Path, *, now: datetime, keep: timedelta, dry_run: bool = False) -> Pruned:
    """The retirement audit's timestamped copies (``<docs>/retirement/<type>/<stamp>.json|.md``) older than ``keep``,
    except the newest stamp of each type; ``latest.*`` is never touched."""
    cutoff = _cutoff(now, keep)
    root = Path(docs) / "retirement"
    victims = []
    for folder in _children(root, dirs=True):
        stamped = [(at, p) for p in _children(folder, dirs=False) if (at := _stamp(_AUDIT_COPY, p.name)) is not None]
        newest = max((at for at, _ in stamped), default=None)
        victims += [p for at, p in stamped if at != newest and at < cutoff]
    removed, size = _discard(root, victims, dry_run=dry_run)
    return Pruned(Kind.AUDIT_COPIES, cutoff, removed, size, dry_run)


def prune_class_archives(
    folder: Path, *, now: datetime, keep: timedelta, current: Path | None, dry_run: bool = False
) -> Pruned:
    """Class-data archives (``spark-classes-*.jsa``, and writers' claims) not written within ``keep``, except
    ``current`` (``jvm.class_archive(write=False)``: this machine's Java and Spark). Another version's archive is
    written again by its first driver if that version comes back."""
    cutoff = _cutoff(now, keep)
    keep_path = Path(current).resolve() if current is not None else None
    victims = [
        p for p in _children(Path(folder), dirs=False)
        if p.name.startswith("spark-classes-") and (p.name.endswith(".jsa") or p.name.endswith(".jsa.writing"))
        and p.resolve() != keep_path and _mtime(p) < cutoff
    ]  # fmt: skip
    removed, size = _discard(Path(folder), victims, dry_run=dry_run)
    return Pruned(Kind.CLASS_ARCHIVES, cutoff, removed, size, dry_run)


# -- the registry store and Airflow's metadata ----------------------------------------------------------------------


class EvidencePruner(Protocol):
    def prune_evidence(self, before: datetime, *, dry_run: bool = False) -> int: ...

    def reclaim_space(self, *, min_free_ratio: float) -> int: ...


def prune_evidence(registry: EvidencePruner, *, now: datetime, keep: timedelta, dry_run: bool = False) -> Pruned:
    """Evidence rows collected before ``now - keep``, except the latest of each (type, kind, contract version) and any
    a status change names (``SqlRegistry.prune_evidence``). Broker activity has its own retention (the recorder prunes it).
    Then an SQLite store at least ``MIN_FREE_RATIO`` free is compacted (``bytes``: what its file shrank by); a
    PostgreSQL store's autovacuum reuses the space."""
    cutoff = _cutoff(now, keep)
    removed = registry.prune_evidence(cutoff, dry_run=dry_run)
    if dry_run:
        return Pruned(Kind.EVIDENCE, cutoff, removed, dry_run=True)
    freed = registry.reclaim_space(min_free_ratio=MIN_FREE_RATIO)
    note = f"store compacted: its file shrank by {freed} bytes" if freed else ""
    return Pruned(Kind.EVIDENCE, cutoff, removed, freed, note=note)


def airflow_clean_command(
    *, now: datetime, keep: timedelta, airflow: str | None = None, dry_run: bool = False
) -> list[str]:
    """``airflow db clean`` for everything older than ``now - keep``: without prompting, without keeping the purged
    rows in archive tables (which would grow instead), failing when a table could not be cleaned; with ``dry_run``,
    Airflow's own ``--dry-run`` (it counts, deletes nothing)."""
    executable = airflow or _airflow_executable()
    command = [executable, "db", "clean", "--clean-before-timestamp", _cutoff(now, keep).isoformat()]
    if dry_run:
        return [*command, "--dry-run"]
    return [*command, "--yes", "--skip-archive", "--error-on-cleanup-failure"]


def clean_airflow_metadata(
    *,
    now: datetime,
    keep: timedelta,
    environ: Mapping[str, str] | None = None,
    timeout: float = 3600,
    dry_run: bool = False,
) -> Pruned:
    """Run ``airflow_clean_command`` against the metadata database the environment configures (``AIRFLOW_HOME``,
    ``AIRFLOW__DATABASE__SQL_ALCHEMY_CONN``; ``$CONTRACT_AIRFLOW_DB_URL`` inside an Airflow task, whose own setting
    Airflow 3 replaces to keep tasks out of its database). ``removed``: the rows Airflow found past the window, table
    by table (its ``Found N rows meeting deletion criteria.``); ``note``: which database, from which host."""
    command = airflow_clean_command(now=now, keep=keep, dry_run=dry_run)
    env = _metadata_environment(environ if environ is not None else os.environ)
    try:
        done = subprocess.run(command, env=env, capture_output=True,
                              text=True, timeout=timeout, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HousekeepingError(
            f"airflow db clean did not run ({exc}); is Airflow installed beside this Python?"
        ) from exc
    if done.returncode != 0:
        tail = settings.redact_url(_error_of(done.stderr or done.stdout or ""))
        raise HousekeepingError(
            f"airflow db clean exited {done.returncode}: {tail or '(no output)'}; run the same command by hand "
            "(see docs/deploy.md#what-the-platform-keeps) with the scheduler's environment to see why"
        )
    found = [int(n) for n in _FOUND.findall(done.stdout or "")]
    database = env.get(_METADATA_URL, "").strip()
    where = settings.redact_url(database) if database else "the database airflow.cfg names"
    note = f"airflow db clean{' --dry-run' if dry_run else ''} on {where}, run on {socket.gethostname()}"
    return Pruned(Kind.AIRFLOW_METADATA, _cutoff(now, keep), sum(found) if found else None, dry_run=dry_run, note=note)


_FOUND = re.compile(r"^Found (\d+) rows meeting deletion criteria\.", re.MULTILINE)  # airflow.utils.db_cleanup


def airflow_log_folder(environ: Mapping[str, str] | None = None, *, timeout: float = 120) -> Path | None:
    """Airflow's ``[logging] base_log_folder`` as ``airflow config get-value`` reads it where this runs (its
    environment, its airflow.cfg), for a process outside Airflow (``contractctl housekeeping``); None when Airflow is
    not installed beside this Python or does not say."""
    if not airflow_installed():
        return None
    executable = _airflow_executable()
    env = dict(environ if environ is not None else os.environ)
    try:
        done = subprocess.run([executable, "config", "get-value", "logging", "base_log_folder"], env=env,
                              capture_output=True, text=True, timeout=timeout, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [line.strip() for line in (done.stdout or "").splitlines() if line.strip()]
    return Path(lines[-1]) if done.returncode == 0 and lines else None


_METADATA_URL = "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"
_METADATA_URL_SETTING = "CONTRACT_AIRFLOW_DB_URL"  # the platform's name for it (contract_platform_airflow.metadata_db)
_BLOCKED = "airflow-db-not-allowed"  # what Airflow 3's task runner puts in a task's environment instead


def _metadata_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` for ``airflow db clean``: the configured metadata URL, or, where Airflow blocked it (inside a task),
    ``$CONTRACT_AIRFLOW_DB_URL``; a blocked URL and no setting raise ``HousekeepingError`` saying what to set."""
    env = dict(environ)
    configured = env.get(_METADATA_URL, "")
    if configured and not configured.startswith(_BLOCKED):
        return env
    named = env.get(_METADATA_URL_SETTING, "").strip()
    if named:
        env[_METADATA_URL] = named
        env.pop("AIRFLOW__CORE__SQL_ALCHEMY_CONN", None)
        return env
    if configured:
        raise HousekeepingError(
            "Airflow keeps its tasks out of its metadata database, so this task cannot clean it: set "
            f"{_METADATA_URL_SETTING} on the workers to the metadata database's URL (the scheduler's {_METADATA_URL}), "
            "or run airflow db clean from the scheduler's host (docs/deploy.md#what-the-platform-keeps)"
        )
    return env  # nothing in the environment: airflow.cfg says


# -- all of it ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Places:
    """Where housekeeping prunes: the data folder, the docs folder, Airflow's task log folder when it is elsewhere,
    the class-data cache (None: switched off) and the archive of this machine's Java and Spark in it."""

    data: Path
    docs: Path
    airflow_logs: Path | None = None
    class_cache: Path | None = None
    current_class_archive: Path | None = None

    @classmethod
    def configured(cls, *, airflow_logs: Path | None = None) -> Places:
        """The places this process's settings name (``settings.data_dir``, ``settings.docs_dir``, ``jvm``'s class
        cache); ``airflow_logs``: Airflow's ``base_log_folder`` (a task reads its configuration, the CLI asks
        ``airflow_log_folder``)."""
        folder = jvm.class_cache_folder()
        current = jvm.class_archive(write=False)
        return cls(settings.data_dir(), settings.docs_dir(), airflow_logs, Path(folder) if folder else None,
                   current.path if current else None)  # fmt: skip


class Task(StrEnum):
    """The ``housekeeping`` DAG's tasks, in the order ``contractctl housekeeping`` runs them."""

    PRUNE_FILES = "prune_files"
    PRUNE_EVIDENCE = "prune_evidence"
    CLEAN_AIRFLOW_METADATA = "clean_airflow_metadata"


TASK_KINDS: Mapping[Task, tuple[Kind, ...]] = {
    Task.PRUNE_FILES: (Kind.DATA_DOCS, Kind.LOGS, Kind.REPORTS, Kind.QUARANTINE, Kind.AUDIT_COPIES,
                       Kind.CLASS_ARCHIVES),
    Task.PRUNE_EVIDENCE: (Kind.EVIDENCE,),
    Task.CLEAN_AIRFLOW_METADATA: (Kind.AIRFLOW_METADATA,),
}  # fmt: skip


def run_task(
    task: Task,
    places: Places,
    *,
    now: datetime,
    registry: EvidencePruner | None = None,
    dry_run: bool = False,
    environ: Mapping[str, str] | None = None,
) -> tuple[Pruned, ...]:
    """One task of the ``housekeeping`` DAG, each kind at its setting (``retention``): the files of ``places``, the
    evidence of ``registry`` (required for ``PRUNE_EVIDENCE``), or the Airflow metadata (``environ``: the process's).
    Settings are read before anything is removed: a bad one stops the task, named (``UsageError``)."""
    windows = {kind: _setting(kind) for kind in TASK_KINDS[Task(task)]}
    if task is Task.PRUNE_FILES:
        return housekeep(places.data, now=now, keep=windows, docs=places.docs, class_cache=places.class_cache,
                         airflow_logs=places.airflow_logs, current_class_archive=places.current_class_archive,
                         dry_run=dry_run)  # fmt: skip
    if task is Task.PRUNE_EVIDENCE:
        if registry is None:
            raise HousekeepingError("pruning evidence needs the registry store; none was given (a bug)")
        return (prune_evidence(registry, now=now, keep=windows[Kind.EVIDENCE], dry_run=dry_run),)
    keep = windows[Kind.AIRFLOW_METADATA]
    return (clean_airflow_metadata(now=now, keep=keep, environ=environ, dry_run=dry_run),)


def retentions() -> dict[Kind, timedelta]:
    """Every kind's retention at its setting, all read at once: a bad one is a ``UsageError`` before anything goes."""
    return {kind: _setting(kind) for kind in Kind}


def airflow_installed() -> bool:
    """Whether the ``airflow`` command is beside this Python or on ``PATH`` (``airflow db clean`` can run here)."""
    executable = _airflow_executable()
    return Path(executable).is_file() or shutil.which(executable) is not None


def _setting(kind: Kind) -> timedelta:
    """``retention(kind)``; a bad setting is a ``UsageError`` naming it, what it takes, and its default."""
    try:
        return retention(kind)
    except ValueError as exc:
        raise UsageError(
            f"{exc}; or unset it for the default, {format_duration(RETENTIONS[kind].default)} "
            "(docs/deploy.md#what-the-platform-keeps)"
        ) from exc


def housekeep(
    data: Path,
    *,
    now: datetime,
    keep: Mapping[Kind, timedelta] | None = None,
    docs: Path | None = None,
    class_cache: Path | None = None,
    airflow_logs: Path | None = None,
    current_class_archive: Path | None = None,
    registry: EvidencePruner | None = None,
    dry_run: bool = False,
) -> tuple[Pruned, ...]:
    """Every kind but the Airflow metadata, pruned in the data folder ``data`` (docs: ``<data>/docs`` unless given;
    Airflow's log folder ``airflow_logs`` too when given; class archives only when ``class_cache`` is given; evidence
    only with a ``registry``). ``keep``: the retentions (default: each kind's setting)."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    used = [*TASK_KINDS[Task.PRUNE_FILES], *([Kind.EVIDENCE] if registry is not None else [])]
    windows = {kind: (keep or {}).get(kind) or retention(kind) for kind in used}
    data = Path(data)
    steps: list[Callable[[], Pruned]] = [
        lambda: prune_data_docs(data / "gx", now=now, keep=windows[Kind.DATA_DOCS], dry_run=dry_run),
        lambda: prune_logs(data, now=now, keep=windows[Kind.LOGS], airflow_logs=airflow_logs, dry_run=dry_run),
        lambda: prune_reports(data, now=now, keep=windows[Kind.REPORTS], dry_run=dry_run),
        lambda: prune_quarantine(data, now=now, keep=windows[Kind.QUARANTINE], dry_run=dry_run),
        lambda: prune_audit_copies(docs or data / "docs", now=now, keep=windows[Kind.AUDIT_COPIES], dry_run=dry_run),
    ]
    if class_cache is not None:
        steps.append(lambda: prune_class_archives(class_cache, now=now, keep=windows[Kind.CLASS_ARCHIVES],
                                                  current=current_class_archive, dry_run=dry_run))  # fmt: skip
    if registry is not None:
        steps.append(lambda: prune_evidence(registry, now=now, keep=windows[Kind.EVIDENCE], dry_run=dry_run))
    return tuple(step() for step in steps)


# -- the mechanics: list without following links, rename aside, delete ---------------------------------------------


def _cutoff(now: datetime, keep: timedelta) -> datetime:
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    if keep <= timedelta(0):
        raise ValueError(f"a retention of {format_duration(keep)} keeps nothing")
    return now.astimezone(UTC) - keep


def _stamp(pattern: re.Pattern[str], name: str) -> datetime | None:
    match = pattern.match(name)
    if match is None:
        return None
    try:
        return datetime.strptime(match.group(1), "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None


def _mtime(path: Path) -> datetime:
    try:
        return datetime.fromtimestamp(path.lstat().st_mtime, UTC)
    except FileNotFoundError:
        return datetime.max.replace(tzinfo=UTC)  # gone meanwhile: not a victim


def _children(folder: Path, *, dirs: bool) -> list[Path]:
    """``folder``'s own entries (folders or plain files; never links, never dot-names), none when it is absent."""
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    wanted = (e for e in entries if not e.name.startswith(".") and not e.is_symlink())
    return sorted(
        Path(e.path) for e in wanted if (e.is_dir(follow_symlinks=False) if dirs else e.is_file(follow_symlinks=False))
    )


def _folders(root: Path) -> Iterator[Path]:
    for here, dirs, _ in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in dirs:
            yield Path(here) / name


def _files(root: Path) -> Iterator[Path]:
    for here, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            path = Path(here) / name
            if not path.is_symlink():
                yield path


def _discard(root: Path, victims: Iterable[Path], *, dry_run: bool = False) -> tuple[int, int]:
    """Rename each of ``victims`` (inside ``root``) into ``root``'s trash, then empty the trash; (how many, bytes).
    A victim already gone (another run took it) is skipped; a trash a killed run left is emptied too. ``dry_run``:
    (how many, bytes) of the victims, nothing moved or removed."""
    trash = root / TRASH_NAME
    removed = size = 0
    for victim in victims:
        if root not in victim.parents:
            raise HousekeepingError(f"{victim} is outside {root}: not removed (a bug; please report it)")
        if dry_run:
            if victim.is_symlink() or victim.exists():
                removed, size = removed + 1, size + _size(victim)
            continue
        target = trash / uuid.uuid4().hex
        try:
            trash.mkdir(exist_ok=True)
            os.rename(victim, target)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise HousekeepingError(f"cannot move {victim} aside to remove it: {exc.strerror or exc}; "
                                    "check the folder's owner and permissions") from exc  # fmt: skip
        removed, size = removed + 1, size + _size(target)
    _empty(trash)
    return removed, size


def _size(path: Path) -> int:
    if not path.is_dir() or path.is_symlink():
        return _lsize(path)
    return sum(_lsize(Path(here) / name) for here, _, files in os.walk(path) for name in files)


def _lsize(path: Path) -> int:
    try:
        return path.lstat().st_size
    except FileNotFoundError:
        return 0


def _empty(trash: Path) -> None:
    for entry in _entries(trash):
        try:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, onerror=_gone_is_fine)
            else:
                entry.unlink(missing_ok=True)
        except FileNotFoundError:
            continue  # another run emptied it
        except OSError as exc:
            raise HousekeepingError(f"cannot remove {entry}: {exc.strerror or exc}; "
                                    "check the folder's owner and permissions") from exc  # fmt: skip
    with contextlib.suppress(OSError):  # absent, or another run is filling it
        trash.rmdir()


def _entries(folder: Path) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(folder)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _gone_is_fine(function: Any, path: str, info: Any) -> None:
    if not isinstance(info[1], FileNotFoundError):
        raise info[1]


def _remove_empty_folders(root: Path, cutoff: datetime) -> None:
    """Folders under ``root`` left empty, deepest first, unless touched since ``cutoff`` (a writer just made it)."""
    for here, dirs, files in os.walk(root, topdown=False, followlinks=False):
        path = Path(here)
        if path == root or any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        if not dirs and not files and _mtime(path) < cutoff:
            try:
                path.rmdir()
            except OSError:
                continue  # written into meanwhile, or gone


_RAISED = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception)\b.*:")  # a traceback's last part: the error raised


def _error_of(output: str) -> str:
    """The error Airflow's output ends with, without its traceback (the last ``SomeError: ...`` line and after)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("(Background on this error")]
    start = max((n for n, line in enumerate(lines) if _RAISED.match(line)), default=max(len(lines) - 1, 0))
    return " ".join(lines[start:])[:500]


def _airflow_executable() -> str:
    beside = Path(sys.executable).with_name("airflow")
    return str(beside) if beside.exists() else (shutil.which("airflow") or "airflow")

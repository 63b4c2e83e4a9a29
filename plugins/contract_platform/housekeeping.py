"""Housekeeping: nothing the platform keeps grows without bound (docs/deploy.md#what-the-platform-keeps).

Archive partitions follow their contracts' ``retention.archive`` (``retention.apply_archive_retention``). Everything
else the platform writes on its own account is here: ``RETENTIONS``, one table of each kind with its default and its
setting, and one pruning function per kind. Each function

- takes the folder (or store) it prunes and a ``now``, and touches nothing outside that folder: it walks without
  following links and never leaves it;
- always keeps what a reader needs (each suite's newest Data Docs run, each folder's newest report, the class-data
  archive of this machine's Java and Spark, the latest evidence of each type, kind and version) however old it is;
- returns what it removed (``Pruned``: how many, how many bytes) and is idempotent: a second run removes nothing;
- is safe at once with another run or a writer: what goes is first renamed into ``<folder>/.housekeeping-trash/``
  (one atomic rename; a file another run took already is skipped), then deleted; a run killed midway leaves its
  trash, which the next run empties. A log still being written is never old (its time is its last write).

The ``housekeeping`` DAG runs them daily; ``airflow_clean_command`` is the Airflow metadata's own ``airflow db clean``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from contract_platform import settings
from contract_platform.durations import format_duration
from contract_platform.errors import HousekeepingError

__all__ = [
    "RETENTIONS",
    "TRASH_NAME",
    "Kind",
    "Pruned",
    "Retention",
    "airflow_clean_command",
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
]

TRASH_NAME = ".housekeeping-trash"
DAY = timedelta(days=1)


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
    """What one kind's pruning removed: ``removed`` files, folders or rows (None: the tool does not say), ``bytes``."""

    kind: Kind
    before: datetime  # what was older than this went (save what is always kept)
    removed: int | None
    bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"kind": str(self.kind), "before": self.before.isoformat(), "removed": self.removed,
                "bytes": self.bytes}  # fmt: skip


# -- files --------------------------------------------------------------------------------------------------------

_GX_RUN = re.compile(r"^(\d{8}T\d{6})(?:\.\d+)?Z$")  # GX's run_time folder: 20261129T064715.233009Z
_AUDIT_COPY = re.compile(r"^(\d{8}T\d{6})Z\.(?:json|md)$")  # retirement.report: <stamp>.json and <stamp>.md


def prune_data_docs(gx_root: Path, *, now: datetime, keep: timedelta) -> Pruned:
    """Great Expectations' results and Data Docs pages older than ``keep`` (by their run time), except each suite's
    newest run. The Data Docs index lists what is kept from the next quality run on (GX rebuilds it then)."""
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
    removed, size = _discard(uncommitted, victims)
    return Pruned(Kind.DATA_DOCS, cutoff, removed, size)


def prune_logs(data: Path, *, now: datetime, keep: timedelta, airflow_logs: Path | None = None) -> Pruned:
    """Log files under ``<data>/logs`` and ``<data>/airflow/logs`` (and ``airflow_logs``, Airflow's own log folder
    when it is elsewhere) last written before ``now - keep``, and the folders they leave empty."""
    cutoff = _cutoff(now, keep)
    removed = size = 0
    roots = [Path(data) / "logs", Path(data) / "airflow" / "logs"]
    if airflow_logs is not None and Path(airflow_logs).resolve() != Path(Path(airflow_logs).resolve().anchor):
        roots.append(Path(airflow_logs))  # never a filesystem's root, whatever the configuration says
    for root in dict.fromkeys(roots):
        count, weight = _discard(root, [p for p in _files(root) if _mtime(p) < cutoff])
        removed, size = removed + count, size + weight
        _remove_empty_folders(root, cutoff)
    return Pruned(Kind.LOGS, cutoff, removed, size)


def prune_reports(data: Path, *, now: datetime, keep: timedelta) -> Pruned:
    """Per-run reports (``<data>/reports/<job>/``, ``<data>/migrations/<type>/``) older than ``keep``, except each
    folder's newest."""
    cutoff = _cutoff(now, keep)
    removed = size = 0
    for root in (Path(data) / "reports", Path(data) / "migrations"):
        victims = []
        for folder in _children(root, dirs=True):
            files = sorted((_mtime(p), p.name, p) for p in _children(folder, dirs=False))
            victims += [path for at, _, path in files[:-1] if at < cutoff]
        count, weight = _discard(root, victims)
        removed, size = removed + count, size + weight
    return Pruned(Kind.REPORTS, cutoff, removed, size)


def prune_quarantine(data: Path, *, now: datetime, keep: timedelta) -> Pruned:
    """Quarantine folders (``<data>/quarantine/<run>/``, invalid records with their payloads) older than ``keep``."""
    cutoff = _cutoff(now, keep)
    root = Path(data) / "quarantine"
    removed, size = _discard(root, [p for p in _children(root, dirs=True) if _mtime(p) < cutoff])
    return Pruned(Kind.QUARANTINE, cutoff, removed, size)


def prune_audit_copies(docs: Path, *, now: datetime, keep: timedelta) -> Pruned:
    """The retirement audit's timestamped copies (``<docs>/retirement/<type>/<stamp>.json|.md``) older than ``keep``,
    except the newest stamp of each type; ``latest.*`` is never touched."""
    cutoff = _cutoff(now, keep)
    root = Path(docs) / "retirement"
    victims = []
    for folder in _children(root, dirs=True):
        stamped = [(at, p) for p in _children(folder, dirs=False) if (at := _stamp(_AUDIT_COPY, p.name)) is not None]
        newest = max((at for at, _ in stamped), default=None)
        victims += [p for at, p in stamped if at != newest and at < cutoff]
    removed, size = _discard(root, victims)
    return Pruned(Kind.AUDIT_COPIES, cutoff, removed, size)


def prune_class_archives(folder: Path, *, now: datetime, keep: timedelta, current: Path | None) -> Pruned:
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
    removed, size = _discard(Path(folder), victims)
    return Pruned(Kind.CLASS_ARCHIVES, cutoff, removed, size)


# -- the registry store and Airflow's metadata ----------------------------------------------------------------------


class EvidencePruner(Protocol):
    def prune_evidence(self, before: datetime) -> int: ...


def prune_evidence(registry: EvidencePruner, *, now: datetime, keep: timedelta) -> Pruned:
    """Evidence rows collected before ``now - keep``, except the latest of each (type, kind, contract version) and any
    a status change names (``SqlRegistry.prune_evidence``). Broker activity has its own retention (the recorder prunes it)."""
    cutoff = _cutoff(now, keep)
    return Pruned(Kind.EVIDENCE, cutoff, registry.prune_evidence(cutoff))


def airflow_clean_command(*, now: datetime, keep: timedelta, airflow: str | None = None) -> list[str]:
    """``airflow db clean`` for everything older than ``now - keep``: without prompting, without keeping the purged
    rows in archive tables (which would grow instead), failing when a table could not be cleaned."""
    executable = airflow or _airflow_executable()
    return [executable, "db", "clean", "--clean-before-timestamp", _cutoff(now, keep).isoformat(),
            "--yes", "--skip-archive", "--error-on-cleanup-failure"]  # fmt: skip


def clean_airflow_metadata(
    *, now: datetime, keep: timedelta, environ: Mapping[str, str] | None = None, timeout: float = 3600
) -> Pruned:
    """Run ``airflow_clean_command`` against the metadata database the environment configures (``AIRFLOW_HOME``,
    ``AIRFLOW__DATABASE__SQL_ALCHEMY_CONN``; ``$CONTRACT_AIRFLOW_DB_URL`` inside an Airflow task, whose own setting
    Airflow 3 replaces to keep tasks out of its database). Airflow does not say how many rows it removed (``removed``
    is None)."""
    command = airflow_clean_command(now=now, keep=keep)
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
    return Pruned(Kind.AIRFLOW_METADATA, _cutoff(now, keep), None)


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
) -> tuple[Pruned, ...]:
    """Every kind but the Airflow metadata, pruned in the data folder ``data`` (docs: ``<data>/docs`` unless given;
    Airflow's log folder ``airflow_logs`` too when given; class archives only when ``class_cache`` is given; evidence
    only with a ``registry``). ``keep``: the retentions
    (default: each kind's setting)."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    windows = {kind: (keep or {}).get(kind) or retention(kind) for kind in Kind}
    data = Path(data)
    steps: list[Callable[[], Pruned]] = [
        lambda: prune_data_docs(data / "gx", now=now, keep=windows[Kind.DATA_DOCS]),
        lambda: prune_logs(data, now=now, keep=windows[Kind.LOGS], airflow_logs=airflow_logs),
        lambda: prune_reports(data, now=now, keep=windows[Kind.REPORTS]),
        lambda: prune_quarantine(data, now=now, keep=windows[Kind.QUARANTINE]),
        lambda: prune_audit_copies(docs or data / "docs", now=now, keep=windows[Kind.AUDIT_COPIES]),
    ]
    if class_cache is not None:
        steps.append(lambda: prune_class_archives(class_cache, now=now, keep=windows[Kind.CLASS_ARCHIVES],
                                                  current=current_class_archive))  # fmt: skip
    if registry is not None:
        steps.append(lambda: prune_evidence(registry, now=now, keep=windows[Kind.EVIDENCE]))
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


def _discard(root: Path, victims: Iterable[Path]) -> tuple[int, int]:
    """Rename each of ``victims`` (inside ``root``) into ``root``'s trash, then empty the trash; (how many, bytes).
    A victim already gone (another run took it) is skipped; a trash a killed run left is emptied too."""
    trash = root / TRASH_NAME
    removed = size = 0
    for victim in victims:
        if root not in victim.parents:
            raise HousekeepingError(f"{victim} is outside {root}: not removed (a bug; please report it)")
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

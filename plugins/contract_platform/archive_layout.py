"""Where the topic archive keeps its records: one rule for the archiver that writes and every reader.

::

    <archive root>/<exchange>/date=YYYY-MM-DD/<file>.jsonl[.gz]      (docs/design.md#archive-record)

- a **partition** is a folder named ``date=`` and an ISO day (``partition_name``, ``partition_day``); a
  ``date=`` folder whose name is not a day is no partition;
- an **archive file** ends in ``.jsonl`` or ``.jsonl.gz`` (case matters); other files are not read;
- the **validation state** of an archive (what incremental validation keeps between runs, docs/archive-validation.md)
  is ``<data>/state/archive-validation/<digest of the archive path>`` (``validation_state_dir``), Parquet under
  ``seen/date=D/`` and ``last/date=D/``: the Spark job writes it, archive retention ages it out;
- **retention**: a partition is past a retention window once its whole day is (``D + 1 day + window <= now``),
  so the archive keeps the days from ``kept_since(window, now)`` on; archive retention deletes the others
  (``contract_platform.retention``) and what reads a window of days says which of them are gone;
- **work**: a gzipped byte costs about ``GZIP_WEIGHT`` plain ones to read and check (it holds several times
  its size in records: 15 times for ``benchmarks/generate_archive.py``'s traffic). The Spark job spreads
  files over its cores by it and ``check --replay`` chooses its engine by it.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

__all__ = [
    "FILE_GLOB",
    "FILE_SUFFIXES",
    "GZIP_WEIGHT",
    "PARTITION_PREFIX",
    "file_work",
    "is_archive_file",
    "is_compressed",
    "kept_since",
    "partition_day",
    "partition_name",
    "validation_state_dir",
]

PARTITION_PREFIX = "date="
FILE_SUFFIXES = (".jsonl", ".jsonl.gz")
FILE_GLOB = "*.{jsonl,jsonl.gz}"  # the same, as a Hadoop glob
GZIP_WEIGHT = 8


def partition_name(day: date) -> str:
    """``date=2026-07-01``: the folder of ``day``'s records under an exchange's folder."""
    return f"{PARTITION_PREFIX}{day.isoformat()}"


def partition_day(name: str) -> date | None:
    """The day of a partition folder named ``name`` (the last component of a path or URI), or None."""
    name = name.rstrip("/").rsplit("/", 1)[-1]
    if not name.startswith(PARTITION_PREFIX):
        return None
    try:
        return date.fromisoformat(name.removeprefix(PARTITION_PREFIX))
    except ValueError:
        return None


def kept_since(window: timedelta, now: datetime) -> date:
    """The oldest day whose partition a retention ``window`` keeps at ``now`` (aware): every earlier day is past it."""
    return (now - window).astimezone(UTC).date()


def is_archive_file(name: str) -> bool:
    return name.endswith(FILE_SUFFIXES)


def is_compressed(name: str) -> bool:
    return name.endswith(".gz")


def file_work(name: str, size: int) -> int:
    """The work of reading and checking a file of ``size`` bytes, in plain bytes (``GZIP_WEIGHT``)."""
    return size * GZIP_WEIGHT if is_compressed(name) else size


def validation_state_dir(archive: str | Path, data: Path) -> Path:
    """``<data>/state/archive-validation/<digest of the archive path>``: one validation state per archive."""
    digest = hashlib.sha256(str(archive).rstrip("/").encode("utf-8")).hexdigest()[:16]
    return data / "state" / "archive-validation" / digest

"""The archive's files: one writer per partition (exclusive names, ``flock``, rotation by size and date, fsync
before an ack), and the repair of a partial last line a killed process left.
"""

from __future__ import annotations

import fcntl
import itertools
import logging
import os
import re
import socket
from datetime import UTC, date, datetime
from pathlib import Path
from typing import IO

from contract_platform.archive_layout import partition_name
from contract_platform.errors import ArchiveError

__all__ = ["PartitionWriter", "MIB", "WRITE_BUFFER", "repair_partial_files"]

log = logging.getLogger(__name__)

MIB = 1024 * 1024
WRITE_BUFFER = 64 * 1024  # whole lines reach the file in chunks of this size, and at every commit
_HOST = re.sub(r"[^A-Za-z0-9.-]", "_", socket.gethostname()) or "host"
_PROCESS_START = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
_SEQUENCE = itertools.count(1)


def repair_partial_files(root: Path) -> list[Path]:
    """Truncate every ``*.jsonl`` under ``root`` that ends in a partial line back to its last newline.

    A partial line is what a process killed mid-write leaves; its delivery was never acknowledged, so
    the broker delivers it again. Files a live archiver holds (``flock``) are left alone.
    """
    repaired: list[Path] = []
    if not Path(root).is_dir():
        return repaired
    for path in sorted(Path(root).rglob("*.jsonl")):
        try:
            if path.is_file() and _truncate_partial_line(path):
                repaired.append(path)
        except OSError as exc:
            raise ArchiveError(f"cannot repair {path}: {exc.strerror or exc}") from exc
    return repaired


def _truncate_partial_line(path: Path) -> bool:
    fd = os.open(path, os.O_RDWR)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a live archiver is writing it
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return False
        keep, end = 0, size
        while end > 0:
            start = max(0, end - MIB)
            chunk = os.pread(fd, end - start, start)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                keep = start + newline + 1
                break
            end = start
        os.ftruncate(fd, keep)
        os.fsync(fd)
    finally:
        os.close(fd)
    log.warning(
        "repaired %s: removed a partial last line of %d bytes left by a process that stopped mid-write "
        "(its delivery was never acknowledged, so the broker delivers it again)",
        path,
        size - keep,
    )
    return True


def _fsync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class PartitionWriter:
    """The files of one exchange under ``<root>/<exchange>``: one open at a time, rotated by size and date."""

    def __init__(self, directory: Path, max_file_bytes: int) -> None:
        self.directory = directory
        self.max_file_bytes = max_file_bytes
        self.files: list[Path] = []
        self.bytes = 0
        self._file: IO[bytes] | None = None
        self._day: date | None = None
        self._size = 0
        self._dirty = False

    def write(self, line: bytes, day: date) -> None:
        """Append one whole line; a line never straddles two files."""
        if self._file is not None and (day != self._day or self._size + len(line) > self.max_file_bytes):
            self.close()
        file = self._file or self._open(day)
        try:
            file.write(line)
        except OSError as exc:
            raise _file_error("cannot write to", self.files[-1], exc) from exc
        self._size += len(line)
        self.bytes += len(line)
        self._dirty = True

    def sync(self) -> None:
        """Flush and fsync the open file: after this, every line written so far is durable."""
        if self._file is None or not self._dirty:
            return
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as exc:
            raise _file_error("cannot flush", self.files[-1], exc) from exc
        self._dirty = False

    def close(self) -> None:
        if self._file is None:
            return
        self.sync()
        try:
            self._file.close()  # releases the flock
        except OSError as exc:
            raise _file_error("cannot close", self.files[-1], exc) from exc
        self._file = None

    def _open(self, day: date) -> IO[bytes]:
        partition = self.directory / partition_name(day)
        try:
            partition.mkdir(parents=True, exist_ok=True)
            while True:
                path = partition / f"{_HOST}-{os.getpid()}-{_PROCESS_START}-{next(_SEQUENCE):06d}.jsonl"
                try:
                    file = open(path, "xb", buffering=WRITE_BUFFER)  # noqa: SIM115 - held open across batches
                    break
                except FileExistsError:
                    continue
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            for directory in (partition, self.directory, self.directory.parent):
                _fsync_directory(directory)  # the new name (and any new folder) survives a power cut
        except OSError as exc:
            raise _file_error("cannot create a file in", partition, exc) from exc
        log.info("writing %s", path)
        self._file, self._day, self._size, self._dirty = file, day, 0, False
        self.files.append(path)
        return file


def _file_error(what: str, path: Path, exc: OSError) -> ArchiveError:
    return ArchiveError(f"{what} {path}: {exc.strerror or exc}; nothing that was not durably written was acknowledged")

"""Topic archiver: drains ``archive.<exchange>`` queues into JSON Lines files (docs/design.md#archive-record).

::

    <root>/<exchange>/date=YYYY-MM-DD/<host>-<pid>-<process start>-<sequence>.jsonl   one record per delivery

- **Ack after fsync.** A batch closes at ``batch_size`` deliveries or ``batch_ms`` after its first one;
  then the file holding it is flushed and ``os.fsync``-ed (its directories were fsynced when it was
  created) and only then is the batch acknowledged with ``basic_ack(last, multiple=True)``. Each queue
  has its own channel, so ``multiple`` never reaches another queue's deliveries.
- **At least once.** Whatever was written but not acknowledged when a process died is delivered again,
  marked ``redelivered: true``, and written again: duplicates are counted by validation, never removed
  here. A process killed mid-write can leave a partial last line: ``repair_partial_files`` (run at
  start) truncates it back to the last newline.
- **No shared files.** Names carry host, pid, process start and a sequence and are created exclusively,
  so a restart never appends to a file a crashed process was writing; each open file is ``flock``-ed,
  so a repair never touches a file a live archiver holds. Files rotate by size and by date.
- **JSON-safe headers.** bytes -> UTF-8 text, or ``{"$base64": ...}`` when not UTF-8; datetime -> ISO 8601
  UTC with ``Z``; Decimal -> string; non-finite float -> string; tables and arrays recursively.
- **No delivery stops it.** A delivery whose properties cannot be written as JSON (headers nested deeper
  than ``limits.depth_limit()``, values JSON cannot hold, anything ``to_record`` or the encoder refuses)
  is archived as a *fallback record* (``archive_record.fallback_record``): its headers are left out of ``properties``,
  the AMQP property bytes are kept in ``propertiesBase64``, ``archiveError`` says why, and the body is
  kept as in any record. It is acknowledged after fsync like any other, so the deliveries behind it flow.

Modes: ``drain`` stops once every queue has been empty for ``idle_timeout`` seconds; ``follow`` runs
until SIGTERM/SIGINT (or ``stop()``) and reconnects with backoff when it opened its own connection.
Both finish and acknowledge the current batch when stopped. ``contractctl archive``
(``contract_platform.cli.archive``) runs one archiver and prints its report.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import logging
import math
import os
import re
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import IO, Any

import orjson
import pika.exceptions as px

from contract_platform.amqp.connection import broker_errors, close_quietly, describe_broker, open_connection
from contract_platform.amqp.inspection import passive_queue
from contract_platform.amqp.topology import archive_queue_name
from contract_platform.amqp.types import BrokerConnection
from contract_platform.archive_layout import partition_name
from contract_platform.archive_record import fallback_record, to_record
from contract_platform.errors import ArchiveError, BrokerUnavailable, QueueMissing, UsageError, clipped
from contract_platform.limits import depth_limit, nesting_beyond
from contract_platform.signals import stop_on_signals

__all__ = [
    "MODES",
    "ArchiveRunReport",
    "Archiver",
    "ArchiverConfig",
    "encode_record",
    "repair_partial_files",
]

log = logging.getLogger(__name__)

MODES = ("drain", "follow")
MIB = 1024 * 1024
WRITE_BUFFER = 64 * 1024  # whole lines reach the file in chunks of this size, and at every commit
_EXCHANGE_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,247}")  # AMQP's characters, 255 - len("archive."), a safe dir name
_HOST = re.sub(r"[^A-Za-z0-9.-]", "_", socket.gethostname()) or "host"
_PROCESS_START = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
_SEQUENCE = itertools.count(1)
_MAX_TICK = 0.1  # seconds between checks of batch deadlines, idleness and stop requests
_BACKOFF = (0.5, 30.0)  # follow mode: first and longest wait before reconnecting
ORJSON_MAX_DEPTH = 254  # orjson refuses to write anything nested deeper


# --- records ------------------------------------------------------------------------------------


def encode_record(method: Any, properties: Any, body: bytes, received_at: datetime) -> tuple[bytes, bool]:
    """(the JSON line of one delivery, whether it is a fallback record): never raises for a delivery's content."""
    try:
        reason = _unencodable_headers(getattr(properties, "headers", None))
        if reason is None:
            return orjson.dumps(to_record(method, properties, body, received_at)) + b"\n", False
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:  # orjson.JSONEncodeError is a TypeError
        reason = f"its properties cannot be written as JSON ({type(exc).__name__}: {clipped(str(exc), 200)})"
    return orjson.dumps(fallback_record(method, properties, body, received_at, reason)) + b"\n", True


def _unencodable_headers(headers: Any) -> str | None:
    # the record holds headers two levels down (record -> properties -> headers); orjson writes 254 levels at most
    limit = min(depth_limit(), ORJSON_MAX_DEPTH) - 2
    pointer = nesting_beyond(headers, limit) if isinstance(headers, dict) else None
    if pointer is None:
        return None
    return f"its headers nest deeper than {limit} levels (at {clipped(pointer, 200)})"


# --- files --------------------------------------------------------------------------------------


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


class _PartitionWriter:
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


# --- configuration and report -------------------------------------------------------------------


@dataclass(frozen=True)
class ArchiverConfig:
    """What to archive where, and how: prefetch, batch size, batch time, file size, idle time (drain mode)."""

    root: Path
    exchanges: tuple[str, ...]
    prefetch: int = 500
    batch_size: int = 200
    batch_ms: int = 500
    max_file_bytes: int = 64 * MIB
    idle_timeout: float = 2.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))
        names = (self.exchanges,) if isinstance(self.exchanges, str) else tuple(self.exchanges)
        object.__setattr__(self, "exchanges", tuple(dict.fromkeys(names)))
        if not self.exchanges:
            raise UsageError("no exchange to archive: name at least one")
        for name in self.exchanges:
            if not isinstance(name, str) or not _EXCHANGE_NAME.fullmatch(name) or not name.strip("."):
                raise UsageError(
                    f"exchange {name!r} cannot be archived: use 1-247 letters, digits, '.', '_', ':' or '-'"
                )
        for option, value, high, why in (
            ("prefetch", self.prefetch, 65535, ""),
            ("batch_size", self.batch_size, self.prefetch, " (prefetch: the broker stops delivering at that many)"),
            ("batch_ms", self.batch_ms, 3_600_000, ""),
            ("max_file_bytes", self.max_file_bytes, 2**50, ""),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
                raise UsageError(f"{option} must be an integer from 1 to {high}{why}, not {value!r}")
        if not isinstance(self.idle_timeout, int | float) or not 0 <= self.idle_timeout < math.inf:
            raise UsageError(f"idle_timeout must be a number of seconds >= 0, not {self.idle_timeout!r}")


@dataclass(frozen=True)
class ArchiveRunReport:
    """What one run wrote. ``records`` counts lines written per exchange (all acknowledged unless
    ``unacknowledged`` says how many were written before the connection was lost: those come again)."""

    mode: str
    root: Path
    records: Mapping[str, int]
    redelivered: int
    unacknowledged: int
    files: tuple[Path, ...]
    bytes: int
    repaired: tuple[Path, ...]
    elapsed: float
    busy: float  # seconds from the first delivery to the last acknowledgement
    reconnects: int
    stopped_by: str  # "idle" (drain) or "signal" (SIGTERM, SIGINT, stop())
    fallbacks: int = 0  # records written as fallback records (``archiveError`` says why), counted in ``records``

    @property
    def total(self) -> int:
        return sum(self.records.values())

    @property
    def rate(self) -> float:
        """Records per second while there was something to archive."""
        return self.total / self.busy if self.busy > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "root": str(self.root),
            "records": dict(self.records),
            "total": self.total,
            "redelivered": self.redelivered,
            "unacknowledged": self.unacknowledged,
            "files": [str(path) for path in self.files],
            "bytes": self.bytes,
            "repaired": [str(path) for path in self.repaired],
            "elapsedSeconds": round(self.elapsed, 3),
            "busySeconds": round(self.busy, 3),
            "recordsPerSecond": round(self.rate, 1),
            "reconnects": self.reconnects,
            "stoppedBy": self.stopped_by,
            "fallbacks": self.fallbacks,
        }


# --- consuming ----------------------------------------------------------------------------------


class _Sink:
    """One archive queue: its channel, its current batch, its writer."""

    def __init__(self, exchange: str, config: ArchiverConfig) -> None:
        self.exchange = exchange
        self.queue = archive_queue_name(exchange)
        self.writer = _PartitionWriter(config.root / exchange, config.max_file_bytes)
        self.batch_size = config.batch_size
        self.batch_seconds = config.batch_ms / 1000
        self.channel: Any = None
        self.consumer_tag: str | None = None
        self.cancelled = False
        self.records = self.redelivered = self.unacknowledged = self.fallbacks = 0
        self.first_at: float | None = None
        self.acked_at: float | None = None
        self.last_delivery = time.monotonic()
        self._pending = self._last_tag = 0
        self._opened_at = 0.0

    def attach(self, channel: Any, prefetch: int) -> None:
        self.channel, self.cancelled, self._pending = channel, False, 0
        channel.basic_qos(prefetch_count=prefetch)
        channel.add_on_cancel_callback(self._on_cancelled)
        self.consumer_tag = channel.basic_consume(self.queue, self.on_message)

    def on_message(self, channel: Any, method: Any, properties: Any, body: bytes) -> None:
        received = datetime.now(UTC)
        line, fallback = encode_record(method, properties, body, received)
        if fallback:
            self.fallbacks += 1
            log.warning(
                "%s: delivery %s (messageId %r) archived as a fallback record: %s",
                self.queue,
                method.delivery_tag,
                clipped(str(getattr(properties, "message_id", None)), 80),
                orjson.loads(line)["archiveError"],
            )
        self.writer.write(line, received.date())
        now = time.monotonic()
        if not self._pending:
            self._opened_at = now
        if self.first_at is None:
            self.first_at = now
        self._pending += 1
        self._last_tag = method.delivery_tag
        self.last_delivery = now
        self.records += 1
        self.redelivered += bool(method.redelivered)
        if self._pending >= self.batch_size:
            self.commit()

    @property
    def deadline(self) -> float | None:
        return self._opened_at + self.batch_seconds if self._pending else None

    def commit(self) -> None:
        """Make the batch durable, then acknowledge all of it at once."""
        if not self._pending:
            return
        self.writer.sync()
        self.channel.basic_ack(delivery_tag=self._last_tag, multiple=True)
        log.debug("%s: acknowledged %d up to delivery tag %d", self.queue, self._pending, self._last_tag)
        self._pending = 0
        self.acked_at = time.monotonic()

    def detach(self) -> None:
        """Close the channel; whatever it delivered and nobody acknowledged goes back to the queue."""
        if self.channel is not None and self.channel.is_open:
            with contextlib.suppress(px.AMQPError, OSError):  # a channel whose connection is gone
                self.channel.close()
        self.unacknowledged += self._pending
        self._pending = 0
        self.channel = self.consumer_tag = None

    def _on_cancelled(self, frame: Any) -> None:
        self.cancelled = True


class Archiver:
    """Drains the archive queues of ``config.exchanges`` through one connection (given, or opened from a URL).

    A given connection is used as it is and left open; one opened from a URL is closed at the end and,
    in follow mode, reopened with backoff when the broker goes away.
    """

    def __init__(self, connection_or_url: BrokerConnection | str, config: ArchiverConfig) -> None:
        self.config = config
        self._url = connection_or_url if isinstance(connection_or_url, str) else None
        self._connection: BrokerConnection | None = None if isinstance(connection_or_url, str) else connection_or_url
        self._stop = False
        self._reconnects = 0
        self._attached = False

    def stop(self) -> None:
        """Ask a running ``run()`` to finish its current batch and return (safe from signal handlers, threads)."""
        self._stop = True

    def run(self, mode: str = "drain") -> ArchiveRunReport:
        if mode not in MODES:
            raise UsageError(f"mode must be one of {MODES}, not {mode!r}")
        started = time.monotonic()
        self._stop, self._reconnects = False, 0
        config = self.config
        repaired = [path for name in config.exchanges for path in repair_partial_files(config.root / name)]
        sinks = [_Sink(name, config) for name in config.exchanges]
        try:
            with stop_on_signals(self.stop):
                stopped_by = self._run(mode, sinks)
        finally:
            for sink in sinks:
                sink.writer.close()
        firsts = [s.first_at for s in sinks if s.first_at is not None]
        lasts = [s.acked_at for s in sinks if s.acked_at is not None]
        return ArchiveRunReport(
            mode=mode,
            root=config.root,
            records={s.exchange: s.records for s in sinks},
            redelivered=sum(s.redelivered for s in sinks),
            unacknowledged=sum(s.unacknowledged for s in sinks),
            files=tuple(path for s in sinks for path in s.writer.files),
            bytes=sum(s.writer.bytes for s in sinks),
            repaired=tuple(repaired),
            elapsed=time.monotonic() - started,
            busy=max(lasts) - min(firsts) if firsts and lasts else 0.0,
            reconnects=self._reconnects,
            stopped_by=stopped_by,
            fallbacks=sum(s.fallbacks for s in sinks),
        )

    def _run(self, mode: str, sinks: list[_Sink]) -> str:
        delay = _BACKOFF[0]
        while True:
            self._attached = False
            try:
                return self._session(mode, sinks)
            except BrokerUnavailable as exc:
                if mode != "follow" or self._url is None:
                    raise
                delay = _BACKOFF[0] if self._attached else min(delay * 2, _BACKOFF[1])
                log.warning("%s; reconnecting in %.1f s", exc, delay)
            deadline = time.monotonic() + delay
            while not self._stop and time.monotonic() < deadline:
                time.sleep(max(0.0, min(_MAX_TICK, deadline - time.monotonic())))
            if self._stop:
                return "signal"
            self._reconnects += 1

    def _session(self, mode: str, sinks: list[_Sink]) -> str:
        connection = self._connection if self._connection is not None else open_connection(self._url)
        broker = describe_broker(connection)
        try:
            with broker_errors(broker):
                for sink in sinks:
                    if passive_queue(connection, sink.queue) is None:
                        raise QueueMissing(
                            f"archive queue {sink.queue} does not exist on {broker}: nothing collects exchange "
                            f"{sink.exchange} for the archive; provision the topology of a contract on it first"
                        )
                    sink.attach(connection.channel(), self.config.prefetch)
                self._attached = True
                log.info("archiving %s from %s (%s mode)", ", ".join(s.queue for s in sinks), broker, mode)
                stopped_by = self._consume(connection, broker, mode, sinks)
                for sink in sinks:  # graceful: no new deliveries; undispatched ones go back; the batch is kept
                    sink.channel.basic_cancel(sink.consumer_tag)
                for sink in sinks:
                    sink.commit()
                return stopped_by
        finally:
            for sink in sinks:
                sink.detach()
            if self._url is not None:
                close_quietly(connection)

    def _consume(self, connection: BrokerConnection, broker: str, mode: str, sinks: list[_Sink]) -> str:
        while not self._stop:
            deadlines = [d for d in (s.deadline for s in sinks) if d is not None]
            now = time.monotonic()
            connection.process_data_events(time_limit=max(0.0, min([now + _MAX_TICK, *deadlines]) - now))
            now = time.monotonic()
            for sink in sinks:
                if sink.deadline is not None and sink.deadline <= now:
                    sink.commit()
            gone = [s.queue for s in sinks if s.cancelled]
            if gone:
                for sink in sinks:
                    if not sink.cancelled:
                        sink.commit()
                raise QueueMissing(f"{broker} cancelled the archiver's consumer of {', '.join(gone)}: was it deleted?")
            if mode == "drain" and self._drained(connection, sinks, now):
                return "idle"
        log.info("stop requested: finishing the current batch")
        return "signal"

    def _drained(self, connection: BrokerConnection, sinks: list[_Sink], now: float) -> bool:
        """Every queue empty for ``idle_timeout``: nothing delivered, nothing pending, nothing ready."""
        if any(s.deadline is not None for s in sinks):
            return False
        if now - max(s.last_delivery for s in sinks) < self.config.idle_timeout:
            return False
        ready = [counts[0] if counts else 0 for counts in (passive_queue(connection, s.queue) for s in sinks)]
        if any(ready):
            for sink in sinks:
                sink.last_delivery = now
            return False
        return True

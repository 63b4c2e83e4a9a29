"""The archiver service: one channel per ``archive.<exchange>`` queue, batches written and fsynced before they are
acknowledged, ``drain`` and ``follow`` modes.
"""

from __future__ import annotations

import contextlib
import logging
import time
from datetime import UTC, datetime
from typing import Any

import orjson
import pika.exceptions as px

from contract_platform.amqp.connection import broker_errors, close_quietly, describe_broker, open_connection
from contract_platform.amqp.inspection import passive_queue
from contract_platform.amqp.topology import archive_queue_name
from contract_platform.amqp.types import BrokerConnection
from contract_platform.archiver.config import MODES, ArchiverConfig, ArchiveRunReport
from contract_platform.archiver.files import PartitionWriter, repair_partial_files
from contract_platform.archiver.records import encode_record
from contract_platform.errors import BrokerUnavailable, QueueMissing, UsageError, clipped
from contract_platform.signals import stop_on_signals

__all__ = ["Archiver", "log"]


log = logging.getLogger(__name__)

_MAX_TICK = 0.1  # seconds between checks of batch deadlines, idleness and stop requests
_BACKOFF = (0.5, 30.0)  # follow mode: first and longest wait before reconnecting


class _Sink:
    """One archive queue: its channel, its current batch, its writer."""

    def __init__(self, exchange: str, config: ArchiverConfig) -> None:
        self.exchange = exchange
        self.queue = archive_queue_name(exchange)
        self.writer = PartitionWriter(config.root / exchange, config.max_file_bytes)
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

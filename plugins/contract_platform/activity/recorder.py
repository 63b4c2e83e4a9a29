"""The broker activity recorder: every reader of every queue, stored as it happens (docs/retirement-audit.md).

A long-running service like the archiver. It binds one durable queue to RabbitMQ's event exchange
(``amq.rabbitmq.event``) and stores each event in the registry store, in batches, acking a batch only
after the store committed it (at least once; storing twice changes nothing, ``BrokerEvent.key``).

**Coverage.** The recorder proves what it has seen with a marker: every ``heartbeat`` it publishes a
message of its own into its queue (through the default exchange) and, when the marker comes back, every
event the broker queued before it has been stored. It then extends its coverage segment to the marker's
send time less ``MARGIN`` (the broker emits an event a moment after the action). One connection is one
segment; a new connection (the recorder restarted, the broker restarted, the network dropped) starts a
new segment, and the interval between two segments is a gap: nothing is known of it, so no retirement
rests on it. Messages in the queue that are neither the broker's events nor this segment's markers
(another client can publish to any queue through the default exchange) are dropped and counted.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import pika
import pika.exceptions as px

from contract_platform.activity.events import ROUTING_KEYS, parse_event
from contract_platform.amqp.connection import broker_errors, close_quietly, describe_broker, open_connection
from contract_platform.amqp.management import EVENT_EXCHANGE, event_exchange_problem
from contract_platform.amqp.types import BrokerConnection
from contract_platform.errors import BrokerError, BrokerUnavailable, EventExchangeUnavailable, StoreError
from contract_platform.evidence.records import BrokerEvent
from contract_platform.evidence.registry import ActivityLog
from contract_platform.signals import stop_on_signals

__all__ = [
    "DEFAULT_QUEUE",
    "MARGIN",
    "ActivityRecorder",
    "RecorderConfig",
    "RecorderReport",
    "queue_for",
]

log = logging.getLogger(__name__)

DEFAULT_QUEUE = "contract-platform.broker-activity"
QUEUE_EXPIRES_MS = 7 * 24 * 3600 * 1000  # a queue no recorder has used for a week is deleted by the broker
MARGIN = timedelta(milliseconds=500)  # an event reaches the queue this long after its action, at most
_MARKER_HEADER = "x-contract-platform-marker"
_BACKOFF = (0.5, 15.0)
_TICK = 0.1


@dataclass(frozen=True)
class RecorderConfig:
    queue: str = DEFAULT_QUEUE
    heartbeat: float = 5.0  # seconds between markers
    batch_size: int = 500
    batch_delay: float = 0.2  # a partial batch is stored after this many seconds
    prefetch: int = 2000
    event_vhost: str = "/"  # where the plugin declares amq.rabbitmq.event
    retention: timedelta = timedelta(days=90)

    def __post_init__(self) -> None:
        if self.heartbeat <= 0 or self.batch_size < 1 or self.batch_delay < 0 or self.prefetch < 1:
            raise ValueError("heartbeat and batch_delay must be positive, batch_size and prefetch at least 1")


@dataclass
class RecorderReport:
    events: int = 0  # stored for the first time
    duplicates: int = 0  # already stored (redelivered)
    ignored: int = 0  # other routing keys, foreign messages in the queue
    markers: int = 0
    segments: int = 0
    covered_since: datetime | None = None  # where the current segment's coverage starts
    covered_until: datetime | None = None
    lag: float | None = None  # seconds between the newest stored event and its storing
    gaps: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "duplicates": self.duplicates,
            "ignored": self.ignored,
            "markers": self.markers,
            "segments": self.segments,
            "coveredUntil": self.covered_until.isoformat() if self.covered_until else None,
            "gaps": list(self.gaps),
        }


def queue_for(registry_url: str) -> str:
    """The recorder queue of one registry: each registry on a broker gets every event, through its own queue."""
    digest = hashlib.sha256(registry_url.encode("utf-8")).hexdigest()[:10]
    return f"{DEFAULT_QUEUE}.{digest}"


def _event_url(url: str, vhost: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + quote(vhost, safe=""), parts.query, parts.fragment))


def _now() -> datetime:
    return datetime.now(UTC)


class ActivityRecorder:
    """Stores the broker's events into ``store`` until ``stop()`` (or a signal, from the CLI)."""

    def __init__(self, url: str, store: ActivityLog, config: RecorderConfig | None = None) -> None:
        self.config = config or RecorderConfig()
        self._url = _event_url(url, self.config.event_vhost)
        self._store = store
        self._stop = False
        self.report = RecorderReport()
        self._last_prune = 0.0

    def stop(self) -> None:
        """Finish the current batch, confirm coverage once more and return (safe from signal handlers)."""
        self._stop = True

    def run(self, *, until: Callable[[], bool] | None = None) -> RecorderReport:
        """Record until ``stop()`` or ``until()`` is true (or SIGTERM/SIGINT in the main thread); reconnects with
        backoff when the broker or the store goes away."""
        with stop_on_signals(self.stop):
            return self._run(until)

    def _run(self, until: Callable[[], bool] | None) -> RecorderReport:
        delay = _BACKOFF[0]
        while not self._stopping(until):
            try:
                self._segment(until)
                delay = _BACKOFF[0]
            except EventExchangeUnavailable:
                raise
            except (BrokerUnavailable, StoreError) as exc:
                log.warning("%s; reconnecting in %.1f s (the time until then is a gap in the evidence)", exc, delay)
                deadline = time.monotonic() + delay
                while not self._stopping(until) and time.monotonic() < deadline:
                    time.sleep(_TICK)
                delay = min(delay * 2, _BACKOFF[1])
        return self.report

    def _stopping(self, until: Callable[[], bool] | None) -> bool:
        return self._stop or (until is not None and until())

    def _segment(self, until: Callable[[], bool] | None) -> None:
        connection = open_connection(self._url)
        broker = describe_broker(connection)
        segment = _Segment(self, connection, broker)
        try:
            with broker_errors(broker):
                segment.start()
                segment.consume(until)
                segment.finish("the recorder was stopped")
        except (BrokerUnavailable, StoreError) as exc:
            segment.abandon(f"the recorder lost its connection or store ({exc})")
            raise
        finally:
            close_quietly(connection)


class _Segment:
    """One connection's coverage: bind, consume, batch, mark, extend."""

    def __init__(self, recorder: ActivityRecorder, connection: BrokerConnection, broker: str) -> None:
        self.recorder, self.connection, self.broker = recorder, connection, broker
        self.config, self.store, self.report = recorder.config, recorder._store, recorder.report
        self.id = uuid.uuid4().hex
        self.nonce = uuid.uuid4().hex
        self.covered_from: datetime | None = None
        self.batch: list[BrokerEvent] = []
        self.last_tag: int | None = None
        self.batch_started = 0.0
        self.marker_sent: datetime | None = None  # the newest marker not yet back
        self.marker_sent_clock = 0.0
        self.opened = False

    def start(self) -> None:
        channel = self.connection.channel()
        try:
            channel.exchange_declare(EVENT_EXCHANGE, passive=True)
        except px.ChannelClosedByBroker as exc:
            if exc.reply_code == 404:
                raise EventExchangeUnavailable(event_exchange_problem(self.config.event_vhost)) from exc
            raise
        channel.queue_declare(self.config.queue, durable=True, arguments={"x-expires": QUEUE_EXPIRES_MS})
        for key in ROUTING_KEYS:
            channel.queue_bind(self.config.queue, EVENT_EXCHANGE, routing_key=key)
        # From here every event is queued for us: this segment knows everything after this moment.
        self.covered_from = _now()
        self.report.covered_since = self.covered_from
        self.store.open_coverage_segment(self.id, started_at=self.covered_from, host=socket.gethostname())
        self.opened = True
        self.report.segments += 1
        channel.basic_qos(prefetch_count=self.config.prefetch)
        try:  # exclusive: a second recorder on the same queue would take half the events and the other's markers
            channel.basic_consume(self.config.queue, self._on_message, auto_ack=False, exclusive=True)
        except px.ChannelClosedByBroker as exc:
            if exc.reply_code == 403:
                raise BrokerError(
                    f"another recorder already consumes {self.config.queue} on {self.broker}: run one recorder per "
                    "registry store, or give this one a queue of its own (--queue)"
                ) from exc
            raise
        self.channel = channel
        self.publisher = self.connection.channel()
        self.publisher.confirm_delivery()
        log.info("recording broker activity from %s into %s (segment %s)", self.broker, self.store.url, self.id[:8])
        self._send_marker()

    def consume(self, until: Callable[[], bool] | None) -> None:
        heartbeat = self.config.heartbeat
        while not self.recorder._stopping(until):
            self.connection.process_data_events(time_limit=_TICK)
            clock = time.monotonic()
            if self.batch and clock - self.batch_started >= self.config.batch_delay:
                self._flush()
            waited = clock - self.marker_sent_clock
            if (self.marker_sent is None and waited >= heartbeat) or waited >= 3 * heartbeat:
                self._send_marker()  # the second case: the last one did not come back in time; try again
            self._prune(clock)
        # a final round trip: what happened up to the stop is covered
        final = self._send_marker()
        deadline = time.monotonic() + max(5.0, 2 * heartbeat)
        while time.monotonic() < deadline and not self._confirmed(final):
            self.connection.process_data_events(time_limit=_TICK)
        self._flush()

    def _confirmed(self, sent: datetime) -> bool:
        covered = self.report.covered_until
        return covered is not None and covered >= sent - MARGIN

    def finish(self, reason: str) -> None:
        self.store.end_coverage_segment(self.id, at=_now(), reason=reason)

    def abandon(self, reason: str) -> None:
        if not self.opened:
            return
        with contextlib.suppress(StoreError):  # the next segment records the gap from the last coverage anyway
            self.store.end_coverage_segment(self.id, at=_now(), reason=reason)

    # -- messages ------------------------------------------------------------------------------------

    def _on_message(self, channel: Any, method: Any, properties: Any, body: bytes) -> None:
        if method.exchange == EVENT_EXCHANGE:
            event = parse_event(method.routing_key, properties, _now())
            if event is not None:
                if not self.batch:
                    self.batch_started = time.monotonic()
                self.batch.append(event)
            else:
                self.report.ignored += 1
            self.last_tag = method.delivery_tag
            if len(self.batch) >= self.config.batch_size:
                self._flush()
            return
        headers = getattr(properties, "headers", None)
        marker = headers.get(_MARKER_HEADER) if isinstance(headers, dict) else None
        if isinstance(marker, bytes):
            marker = marker.decode("utf-8", "replace")
        self.last_tag = method.delivery_tag
        prefix = f"{self.id}:{self.nonce}:"
        if method.exchange == "" and isinstance(marker, str) and marker.startswith(prefix):
            try:
                sent = datetime.fromisoformat(marker[len(prefix) :])
            except ValueError:
                sent = None
            if sent is not None and sent.tzinfo is not None:
                self._flush()
                self._covered(sent)
                if self.marker_sent is not None and sent >= self.marker_sent:
                    self.marker_sent = None
                return
        # an earlier segment's marker, or a message some client published into the queue: not an event
        self.report.ignored += 1

    def _flush(self) -> None:
        if self.last_tag is None:
            return
        if self.batch:
            try:
                fresh = self.store.store_broker_events(self.batch)
            except StoreError as exc:
                fresh = self._one_by_one(exc)
            self.report.events += fresh
            self.report.duplicates += len(self.batch) - fresh
            self.report.lag = (_now() - self.batch[-1].at).total_seconds()
        self.channel.basic_ack(delivery_tag=self.last_tag, multiple=True)
        self.batch, self.last_tag = [], None

    def _one_by_one(self, failure: StoreError) -> int:
        """A batch the store refused: store its events one at a time. When every one fails the store is down
        (``failure`` is raised: reconnect); one that fails alone is recorded as a gap at its moment, so the
        recorder does not stall on it and no check takes the moment as clean."""
        fresh, refused = 0, 0
        for event in self.batch:
            try:
                fresh += self.store.store_broker_events([event])
            except StoreError as exc:
                refused += 1
                if refused == len(self.batch):
                    raise failure from exc
                reason = f"a {event.kind} event of the broker could not be stored ({exc})"
                self.store.record_gap(event.at, event.at, reason[:2000])
                log.warning("gap in the broker activity evidence at %s: %s", event.at.isoformat(), reason)
        return fresh

    def _send_marker(self) -> datetime:
        sent = _now()
        marker = f"{self.id}:{self.nonce}:{sent.isoformat()}"
        properties = pika.BasicProperties(headers={_MARKER_HEADER: marker}, delivery_mode=1)
        try:
            self.publisher.basic_publish("", self.config.queue, b"", properties, mandatory=True)
        except (px.UnroutableError, px.NackError) as exc:
            raise BrokerError(f"{self.broker} refused the recorder's marker into {self.config.queue}: {exc}") from exc
        self.marker_sent, self.marker_sent_clock = sent, time.monotonic()
        self.report.markers += 1
        return sent

    def _covered(self, sent: datetime) -> None:
        assert self.covered_from is not None
        until = max(self.covered_from, sent - MARGIN)
        gap = self.store.extend_coverage(self.id, covered_from=self.covered_from, until=until)
        if gap is not None:
            text = f"{gap.start.isoformat()} to {gap.end.isoformat()}: {gap.reason}"
            self.report.gaps.append(text)
            log.warning("gap in the broker activity evidence from %s", text)
        self.report.covered_until = until

    def _prune(self, clock: float) -> None:
        if clock - self.recorder._last_prune < 3600:
            return
        self.recorder._last_prune = clock
        removed = self.store.prune_broker_activity(_now() - self.config.retention)
        if removed:
            log.info("forgot %d broker activity rows older than %s", removed, self.config.retention)

"""The broker activity recorder: every reader of every queue, stored as it happens (docs/retirement-audit.md).

A long-running service like the archiver. It binds one durable queue to RabbitMQ's event exchange
(``amq.rabbitmq.event``) and stores each event in the registry store, in batches, acking a batch only
after the store committed it (at least once; storing twice changes nothing, ``BrokerEvent.key``).

**Coverage.** The recorder proves what it has seen with a marker: every ``heartbeat`` it publishes a
message of its own into its queue (through the default exchange) and, when the marker comes back, every
event the broker queued before it has been stored. It then extends its coverage segment to the marker's
send time less ``MARGIN`` (the broker emits an event a moment after the action). Messages in the queue
that are neither the broker's events nor this segment's markers (another client can publish to any queue
through the default exchange) are dropped and counted.

**Restarts, standby, the bounded buffer** (docs/retirement-audit.md#restarts-standby-and-the-buffer).
Any number of recorders may read one registry's queue: it is declared with RabbitMQ's single active
consumer, so one reads and the others wait, each taking over when the active one goes away. While none
reads, the queue keeps the broker's events, up to its limits (``x-max-length``, ``x-max-length-bytes``);
beyond them the broker drops the oldest into ``<queue>.dropped``. A recorder that becomes active decides,
with ``continuity.decide``, whether it continues the coverage from the last confirmed moment (same
queue, no broker restart, nothing dropped) or records the gap, naming what failed. A drop while it
records is a gap too, from the confirmed moment before the dropped event to that event.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import math
import os
import socket
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pika
import pika.exceptions as px

from contract_platform.activity.continuity import (
    INCARNATION,
    MARGIN,
    MARKER_HEADER,
    Decision,
    Drop,
    Found,
    Sentinel,
    decide,
    drop_reason,
    dropped,
    moment,
)
from contract_platform.activity.events import ROUTING_KEYS, parse_event
from contract_platform.activity.parking import PARKED_MAX, Refused, gap_reasons, parked_headers, refusal
from contract_platform.activity.queues import (
    DEFAULT_QUEUE,
    management_for,
    parked_queue,
    queue_for,
    queue_state,
    recorder_queues,
)
from contract_platform.activity.trace_reader import TraceReader
from contract_platform.amqp.connection import broker_errors, close_quietly, describe_broker, open_connection
from contract_platform.amqp.http import ManagementClient
from contract_platform.amqp.inspection import exchange_exists, passive_queue
from contract_platform.amqp.management import EVENT_EXCHANGE, event_exchange_problem
from contract_platform.amqp.tracing import trace_queues
from contract_platform.amqp.types import BrokerConnection
from contract_platform.amqp.urls import with_vhost
from contract_platform.errors import (
    BrokerError,
    BrokerUnavailable,
    EventExchangeUnavailable,
    RecorderQueueInUse,
    StoreError,
)
from contract_platform.evidence.records import BrokerEvent
from contract_platform.evidence.registry import ActivityLog
from contract_platform.settings import DEFAULT_RECORDER_MAX_BYTES, DEFAULT_RECORDER_MAX_EVENTS
from contract_platform.signals import stop_on_signals

__all__ = [
    "DEFAULT_QUEUE",
    "INCARNATION",
    "MARGIN",
    "ActivityRecorder",
    "RecorderConfig",
    "RecorderReport",
    "queue_arguments",
    "queue_for",
    "queue_state",
    "recorder_queues",
    "refuse_if_in_use",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

QUEUE_EXPIRES_MS = 7 * 24 * 3600 * 1000  # a queue no recorder has used for a week is deleted by the broker
_MARKER_HEADER = MARKER_HEADER
_BACKOFF = (0.5, 15.0)
_TICK = 0.1
_PROBE_EVERY = 3  # heartbeats between a waiting recorder's probes of the queue
_CONFIRMATIONS_KEPT = 10_000
_MANAGEMENT_WAIT = 60.0  # seconds a recorder that becomes active waits for the management API to answer
_TOUCH_EVERY = 3600.0  # seconds: the companion queues are used (declared) at least this often, so none expires


@dataclass(frozen=True)
class RecorderConfig:
    queue: str = DEFAULT_QUEUE
    heartbeat: float = 5.0  # seconds between markers
    batch_size: int = 500
    batch_delay: float = 0.2  # a partial batch is stored after this many seconds
    prefetch: int = 2000
    event_vhost: str = "/"  # where the plugin declares amq.rabbitmq.event
    retention: timedelta = timedelta(days=90)
    max_events: int = DEFAULT_RECORDER_MAX_EVENTS  # the queue's x-max-length
    max_bytes: int = DEFAULT_RECORDER_MAX_BYTES  # the queue's x-max-length-bytes
    management_url: str | None = None  # default: the AMQP host, or CONTRACT_RABBITMQ_MANAGEMENT_URL

    def __post_init__(self) -> None:
        if self.heartbeat <= 0 or self.batch_size < 1 or self.batch_delay < 0 or self.prefetch < 1:
            raise ValueError("heartbeat and batch_delay must be positive, batch_size and prefetch at least 1")
        if self.max_events < 1 or self.max_bytes < 1:
            raise ValueError("max_events and max_bytes must be at least 1")

    @property
    def limits(self) -> tuple[int, int]:
        return self.max_events, self.max_bytes


@dataclass
class RecorderReport:
    events: int = 0  # stored for the first time
    duplicates: int = 0  # already stored (redelivered)
    ignored: int = 0  # other routing keys, foreign messages in the queue
    markers: int = 0
    segments: int = 0
    continued: int = 0  # segments that continued the coverage from the last confirmed moment
    drops: int = 0  # messages the broker dropped from the queue at its limit, seen while recording
    parked: int = 0  # events the store refused for themselves, parked in <queue>.parked (each a gap)
    active_since: datetime | None = None  # when this recorder last became the active one
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
            "continued": self.continued,
            "drops": self.drops,
            "parked": self.parked,
            "coveredUntil": self.covered_until.isoformat() if self.covered_until else None,
            "gaps": list(self.gaps),
        }


def queue_arguments(config: RecorderConfig, incarnation: str) -> dict[str, Any]:
    """The recorder queue's arguments: bounded, dropping its oldest into ``<queue>.dropped``, one active consumer."""
    return {
        "x-max-length": config.max_events,
        "x-max-length-bytes": config.max_bytes,
        "x-overflow": "drop-head",
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": recorder_queues(config.queue)[1],
        "x-single-active-consumer": True,
        "x-expires": QUEUE_EXPIRES_MS,
        INCARNATION: incarnation,
    }


_COMPANION_ARGUMENTS: dict[str, Any] = {"x-max-length": 1, "x-overflow": "drop-head", "x-expires": QUEUE_EXPIRES_MS}
_PARKED_ARGUMENTS: dict[str, Any] = {  # the newest events the store refused
    "x-max-length": PARKED_MAX,
    "x-overflow": "drop-head",
    "x-expires": QUEUE_EXPIRES_MS,
}


def _now() -> datetime:
    return datetime.now(UTC)


def refuse_if_in_use(url: str, config: RecorderConfig) -> None:
    """``RecorderQueueInUse`` when the recorder's queue exists with other arguments and another recorder reads it.

    Asked before the recorder opens its store, so that a start that is refused changes nothing: no queue is
    declared and the store's schema is not upgraded (docs/upgrading.md: the previous release's recorder still
    runs, and its release must still open the store). A broker that cannot be reached is left to the recorder,
    which waits for it; a queue nobody reads is left to it too, which replaces it (one gap)."""
    target = with_vhost(url, config.event_vhost)
    try:
        connection = open_connection(target, name="contract-platform recorder start check")
    except BrokerUnavailable:
        return
    broker = describe_broker(connection)
    try:
        with broker_errors(broker):
            found = passive_queue(connection, config.queue)
            if found is None or found[1] == 0:
                return
            arguments = queue_arguments(config, uuid.uuid4().hex)
            channel = connection.channel()
            try:  # the same arguments are no change (RabbitMQ compares only its own); other ones are refused
                channel.queue_declare(config.queue, durable=True, arguments=arguments)
            except px.ChannelClosedByBroker as exc:
                if exc.reply_code != 406:
                    raise
                queue = management_for(target, config.management_url, config.event_vhost).queue(config.queue)
                old = queue.get("arguments") if isinstance(queue, dict) else None
                raise _in_use(config.queue, broker, old if isinstance(old, dict) else None, arguments) from exc
            _close_channel(channel)
    finally:
        close_quietly(connection)


def _in_use(name: str, broker: str, old: dict[str, Any] | None, arguments: dict[str, Any]) -> RecorderQueueInUse:
    return RecorderQueueInUse(
        f"{name} on {broker} has other arguments ({_shown(old)}) than this recorder's "
        f"({_shown(arguments)}) and another recorder reads it: stop that recorder (an older version, or one "
        "with other CONTRACT_RECORDER_MAX_EVENTS or CONTRACT_RECORDER_MAX_BYTES) and start this one again; "
        "it then replaces the queue, which is a gap in the reader evidence"
    )


def _shown(arguments: dict[str, Any] | None) -> str:
    if arguments is None:
        return "unknown"
    kept = {key: value for key, value in sorted(arguments.items()) if key != INCARNATION}
    return ", ".join(f"{key}={value}" for key, value in kept.items()) or "none"


class ActivityRecorder:
    """Stores the broker's events into ``store`` until ``stop()`` (or a signal, from the CLI)."""

    def __init__(self, url: str, store: ActivityLog, config: RecorderConfig | None = None) -> None:
        self.config = config or RecorderConfig()
        self._url = with_vhost(url, self.config.event_vhost)
        self._store = store
        self._stop = False
        self.report = RecorderReport()
        self._last_prune = 0.0
        self._broken: str | None = None  # seen by this process: the next segment cannot continue across it
        self.identity = f"{socket.gethostname()}:{os.getpid()}"

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
                log.warning("%s; reconnecting in %.1f s", exc, delay)
                deadline = time.monotonic() + delay
                while not self._stopping(until) and time.monotonic() < deadline:
                    time.sleep(_TICK)
                delay = min(delay * 2, _BACKOFF[1])
        return self.report

    def _stopping(self, until: Callable[[], bool] | None) -> bool:
        return self._stop or (until is not None and until())

    def management(self) -> ManagementClient:
        """A fresh client of the management API (a client that failed once stops asking)."""
        return management_for(self._url, self.config.management_url, self.config.event_vhost)

    def _segment(self, until: Callable[[], bool] | None) -> None:
        # the broker notices a recorder whose machine vanished after two missed AMQP heartbeats; a standby then
        # takes over
        heartbeat = max(5, math.ceil(self.config.heartbeat))
        connection = open_connection(self._url, heartbeat=heartbeat, name=f"contract-platform recorder {self.identity}")
        broker = describe_broker(connection)
        segment = _Segment(self, connection, broker)
        try:
            with broker_errors(broker):
                segment.attach()
                if not segment.wait_for_turn(until):
                    return
                segment.activate()
                segment.consume(until)
                segment.finish("the recorder was stopped")
        except (BrokerUnavailable, StoreError) as exc:
            segment.abandon(f"the recorder lost its connection or store ({exc})")
            raise
        finally:
            segment.close_traces()
            close_quietly(connection)


class _Segment:
    """One connection: attach to the queue, wait for its turn, decide where coverage starts, consume, confirm."""

    def __init__(self, recorder: ActivityRecorder, connection: BrokerConnection, broker: str) -> None:
        self.recorder, self.connection, self.broker = recorder, connection, broker
        self.config, self.store, self.report = recorder.config, recorder._store, recorder.report
        self.queue, self.dropped_queue, self.sentinel_queue = recorder_queues(self.config.queue)
        self.id = uuid.uuid4().hex
        self.nonce = uuid.uuid4().hex
        self.tag = f"contract-platform-recorder.{recorder.identity}.{self.id[:8]}"
        self.covered_from: datetime | None = None
        self.batch: list[BrokerEvent] = []
        self.last_tag: int | None = None
        self.batch_started = 0.0
        self.marker_sent: datetime | None = None  # the newest marker not yet back
        self.marker_sent_clock = 0.0
        self.opened = False
        self.inbox: deque[tuple[bool, Any, Any, bytes]] = deque()  # (from the drop queue, method, properties, body)
        self.cancelled: str | None = None
        self.existed: dict[str, bool] = {}
        self.problems: list[str] = []
        self.incarnation: str | None = None
        self.confirmations: list[datetime] = []  # moments this segment confirmed, oldest first
        self.drops: list[tuple[Drop, int]] = []  # dropped while recording, not yet recorded: (what, delivery tag)
        self.last_touch = time.monotonic()
        self.probed = 0.0
        self.parked_declared = False  # <queue>.parked, declared by this connection when it parks the first event
        self.tracers: dict[str, TraceReader] = {}  # watched virtual host -> its delivery trace (activity.trace_reader)
        self.tracer_retry: dict[str, float] = {}  # virtual host -> when a trace that could not open is tried again

    # -- attaching: the queue and its companions, as they are or replaced ----------------------------

    def attach(self) -> None:
        if not exchange_exists(self.connection, EVENT_EXCHANGE):
            raise EventExchangeUnavailable(event_exchange_problem(self.config.event_vhost))
        for name in (self.queue, self.dropped_queue, self.sentinel_queue):  # before anything declares them
            self.existed[name] = passive_queue(self.connection, name) is not None
        self._declare(self.dropped_queue, _COMPANION_ARGUMENTS)
        self._declare(self.sentinel_queue, _COMPANION_ARGUMENTS)
        self._declare(self.queue, queue_arguments(self.config, uuid.uuid4().hex))
        channel = self.connection.channel()
        for key in ROUTING_KEYS:
            channel.queue_bind(self.queue, EVENT_EXCHANGE, routing_key=key)
        self.incarnation = self._incarnation()
        channel.basic_qos(prefetch_count=self.config.prefetch)
        channel.add_on_cancel_callback(self._on_cancel)
        channel.basic_consume(self.queue, self._on_message, auto_ack=False, consumer_tag=self.tag)
        self.channel = channel
        self.publisher = self.connection.channel()
        self.publisher.confirm_delivery()
        self._probe()

    def _declare(self, name: str, arguments: dict[str, Any]) -> None:
        channel = self.connection.channel()
        try:
            channel.queue_declare(name, durable=True, arguments=arguments)
        except px.ChannelClosedByBroker as exc:
            if exc.reply_code != 406:  # PRECONDITION_FAILED: it exists with other arguments
                raise
        else:
            _close_channel(channel)
            return
        self._replace(name, arguments)

    def _replace(self, name: str, arguments: dict[str, Any]) -> None:
        """An existing queue with other arguments (an older recorder's, other limits): replaced when nobody
        reads it, which loses what it held (a gap); refused while another recorder reads it."""
        found = self.recorder.management().queue(name)
        old = found.get("arguments") if isinstance(found, dict) else None
        old = old if isinstance(old, dict) else None
        channel = self.connection.channel()
        try:
            channel.queue_delete(name, if_unused=True)
        except px.ChannelClosedByBroker as exc:
            if exc.reply_code != 406:
                raise
            raise _in_use(name, self.broker, old, arguments) from exc
        self.connection.channel().queue_declare(name, durable=True, arguments=arguments)
        what = f"{name} had other arguments ({_shown(old)}) and was replaced: the events it held were not read"
        self.problems.append(what)
        log.warning("%s", what)

    def _incarnation(self) -> str | None:
        """The queue's identity, as the broker keeps it (the first declaration's): "" when it has none, None when
        the API did not say."""
        client = self.recorder.management()
        deadline = time.monotonic() + 5.0
        while True:
            found = client.queue(self.queue)
            if found is not None or time.monotonic() > deadline:
                arguments = found.get("arguments") if isinstance(found, dict) else None
                value = arguments.get(INCARNATION, "") if isinstance(arguments, dict) else None
                return value if isinstance(value, str) else None
            time.sleep(_TICK)

    def _probe(self) -> None:
        """A message into the queue: whoever is the active recorder gets it (and ignores another's)."""
        probe = f"{self.id}:probe:{_now().isoformat()}"
        properties = pika.BasicProperties(headers={_MARKER_HEADER: probe}, delivery_mode=1)
        self._publish(self.queue, b"", properties)
        self.probed = time.monotonic()

    # -- standing by -------------------------------------------------------------------------------

    def wait_for_turn(self, until: Callable[[], bool] | None) -> bool:
        """Until the broker hands this recorder a message (it is the active one); False when stopped first."""
        said = False
        while not self.recorder._stopping(until):
            self.connection.process_data_events(time_limit=_TICK)
            self._check_cancelled()
            if self.inbox:
                return True
            clock = time.monotonic()
            if not said and clock - self.probed > self.config.heartbeat:
                log.info("standing by: another recorder reads %s; this one takes over when it stops", self.queue)
                said = True
            if clock - self.probed >= _PROBE_EVERY * self.config.heartbeat:
                self._probe()
        return False

    # -- becoming the active recorder ----------------------------------------------------------------

    def activate(self) -> None:
        start = _now()
        last = self.store.last_confirmation()
        sentinel = self._read_sentinel()
        drop, drop_tags = self._take_drops(start)
        if not self.existed.get(self.dropped_queue, False):
            self.problems.append(
                f"its drop record {self.dropped_queue} was not on the broker, so drops cannot be ruled out"
            )
        if self.recorder._broken is not None:
            self.problems.append(self.recorder._broken)
        node_starts = self._from_management(self._node_starts)
        if self.incarnation is None:
            self.incarnation = self._from_management(self._incarnation)
        found = Found(
            queue=self.queue,
            limits=self.config.limits,
            existed=self.existed.get(self.queue, False),
            incarnation=self.incarnation,
            sentinel=sentinel,
            node_starts=node_starts,
            drop=drop,
            problems=tuple(self.problems),
        )
        decision = decide(last.id if last else None, last.covered_until if last else None, found, start)
        self._open(start, decision)
        self.recorder._broken = None
        if drop_tags:
            self.drop_channel.basic_ack(delivery_tag=max(drop_tags), multiple=True)
        self.drop_channel.basic_consume(self.dropped_queue, self._on_drop, auto_ack=False)
        self._send_marker()

    def _open(self, start: datetime, decision: Decision) -> None:
        gap = self.store.open_coverage_segment(
            self.id,
            started_at=start,
            host=self.recorder.identity,
            covered_from=decision.covered_from,
            gap_reason=decision.gap_reason,
        )
        self.opened = True
        self.covered_from = decision.covered_from
        self.confirmations = [decision.covered_from]
        self.report.segments += 1
        self.report.active_since = start
        self.report.covered_since = decision.covered_from
        if decision.continued:
            self.report.continued += 1
        if gap is not None:
            text = f"{moment(gap.start)} to {moment(gap.end)}: {gap.reason}"
            self.report.gaps.append(text)
            log.warning("gap in the broker activity evidence from %s", text)
        how = "continuing from" if decision.continued else "covering from"
        log.info(
            "recording broker activity from %s into %s (segment %s, %s %s)",
            self.broker,
            self.store.url,
            self.id[:8],
            how,
            moment(decision.covered_from),
        )

    def _read_sentinel(self) -> Sentinel | None:
        channel = self.connection.channel()
        method, _properties, body = channel.basic_get(self.sentinel_queue, auto_ack=False)
        if method is None or method.delivery_tag is None or body is None:
            return None
        channel.basic_nack(delivery_tag=method.delivery_tag, requeue=True)  # left for the next recorder
        return Sentinel.decode(body)

    def _take_drops(self, now: datetime) -> tuple[Drop | None, list[int]]:
        """The latest message the broker dropped while nobody read the queue (acked once its gap is stored)."""
        self.drop_channel = self.connection.channel()
        self.drop_channel.basic_qos(prefetch_count=100)
        self.drop_channel.add_on_cancel_callback(self._on_cancel)
        latest: Drop | None = None
        tags: list[int] = []
        while True:
            method, properties, _body = self.drop_channel.basic_get(self.dropped_queue, auto_ack=False)
            if method is None or method.delivery_tag is None:
                return latest, tags
            found = dropped(properties, now)
            latest = found if latest is None or found.at > latest.at else latest
            tags.append(method.delivery_tag)

    def _from_management(self, read: Callable[[], T | None]) -> T | None:
        """What the management API says; it starts a moment after AMQP when the broker starts, so it is asked
        again for up to ``_MANAGEMENT_WAIT`` seconds (None: it never answered, and continuity cannot be proven)."""
        deadline = time.monotonic() + _MANAGEMENT_WAIT
        while True:
            found = read()
            if found is not None or time.monotonic() >= deadline:
                return found
            self.connection.process_data_events(time_limit=0.5)

    def _node_starts(self) -> dict[str, datetime] | None:
        nodes = self.recorder.management().get("nodes?columns=name,uptime,running")
        if not isinstance(nodes, list):
            return None
        now = _now()
        starts: dict[str, datetime] = {}
        for node in nodes:
            if not isinstance(node, dict) or node.get("running") is False:
                continue
            uptime = node.get("uptime")
            if not isinstance(uptime, int) or isinstance(uptime, bool):
                return None
            starts[str(node.get("name"))[:255]] = now - timedelta(milliseconds=uptime)
        return starts or None

    # -- recording -----------------------------------------------------------------------------------

    def consume(self, until: Callable[[], bool] | None) -> None:
        heartbeat = self.config.heartbeat
        while not self.recorder._stopping(until):
            self.connection.process_data_events(time_limit=_TICK)
            self._poll_traces()
            self._handle_inbox()
            self._check_cancelled()
            clock = time.monotonic()
            if self.batch and clock - self.batch_started >= self.config.batch_delay:
                self._flush()
            waited = clock - self.marker_sent_clock
            if (self.marker_sent is None and waited >= heartbeat) or waited >= 3 * heartbeat:
                self._send_marker()  # the second case: the last one did not come back in time; try again
            self._housekeeping(clock)
        # a final round trip: what happened up to the stop is covered
        final = self._send_marker()
        deadline = time.monotonic() + max(5.0, 2 * heartbeat)
        while time.monotonic() < deadline and (
            not self._confirmed(final) or any(tracer.waiting() for tracer in self.tracers.values())
        ):
            self.connection.process_data_events(time_limit=_TICK)
            self._poll_traces()
            self._handle_inbox()
        self._flush()

    def _confirmed(self, sent: datetime) -> bool:
        covered = self.report.covered_until
        return covered is not None and covered >= sent - MARGIN

    def finish(self, reason: str) -> None:
        if self.opened:
            self.store.end_coverage_segment(self.id, at=_now(), reason=reason)

    def abandon(self, reason: str) -> None:
        if not self.opened:
            return
        with contextlib.suppress(StoreError):  # the next segment decides what follows anyway
            self.store.end_coverage_segment(self.id, at=_now(), reason=reason)

    def _on_cancel(self, frame: Any) -> None:
        self.cancelled = (
            f"the broker cancelled the recorder's consumer of {self.queue} or {self.dropped_queue} (deleted, or its "
            "process restarted, which loses messages)"
        )

    def _check_cancelled(self) -> None:
        if self.cancelled is not None:
            self.recorder._broken = self.cancelled
            raise BrokerUnavailable(self.cancelled)

    # -- messages ------------------------------------------------------------------------------------

    def _on_message(self, channel: Any, method: Any, properties: Any, body: bytes) -> None:
        self.inbox.append((False, method, properties, body))

    def _on_drop(self, channel: Any, method: Any, properties: Any, body: bytes) -> None:
        self.inbox.append((True, method, properties, body))

    def _handle_inbox(self) -> None:
        while self.inbox:
            from_drops, method, properties, body = self.inbox.popleft()
            if from_drops:
                self.drops.append((dropped(properties, _now()), method.delivery_tag))
            else:
                self._handle(method, properties)

    def _handle(self, method: Any, properties: Any) -> None:
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
                self._confirm(sent)
                if self.marker_sent is not None and sent >= self.marker_sent:
                    self.marker_sent = None
                return
        if method.exchange == "" and isinstance(marker, str) and ":probe:" in marker:
            return  # a recorder asking whether it is the active one
        # an earlier segment's marker, or a message some client published into the queue: not an event
        self.report.ignored += 1

    def _flush(self) -> None:
        if self.last_tag is None:
            return
        if self.batch:
            try:
                fresh = self.store.store_broker_events(self.batch)
            except Exception as exc:  # whatever refused it: a driver's ValueError on a NUL once stopped the recorder
                log.warning("storing %d broker events failed (%s); one by one", len(self.batch), refusal(exc))
                fresh = self._one_by_one()
            self.report.events += fresh
            self.report.duplicates += len(self.batch) - fresh
            self.report.lag = (_now() - self.batch[-1].at).total_seconds()
        self.channel.basic_ack(delivery_tag=self.last_tag, multiple=True)
        self.batch, self.last_tag = [], None

    def _one_by_one(self) -> int:
        """A batch the store refused: its events one at a time, so one event never stops the recorder.

        When every one fails, a trivial read tells a store that is down (the read fails too, and its error is
        raised: the recorder reconnects, and the broker hands the unacked batch to the next connection) from
        events refused for themselves (the read answers: each is tried once more). What fails again is parked
        (``_park``) and acked with the rest."""
        fresh, refused = self._each(self.batch)
        if len(refused) == len(self.batch):
            self.store.last_confirmation()  # raises when the store is down
            fresh, refused = self._each([event for event, _why in refused])
        if refused:
            self._park(refused)
        return fresh

    def _each(self, events: list[BrokerEvent]) -> tuple[int, list[Refused]]:
        fresh, refused = 0, []
        for event in events:
            try:
                fresh += self.store.store_broker_events([event])
            except Exception as exc:  # this event's refusal, whatever raised it
                refused.append((event, refusal(exc)))
        return fresh, refused

    def _park(self, refused: list[Refused]) -> None:
        """Events the store refused: a gap at each one's moment naming it, why and where it went, then the event
        itself (headers, no body) into ``<queue>.parked`` (``activity.parking``). The gap comes first: when it
        cannot be stored either, nothing is acked and the recorder reconnects."""
        parked = parked_queue(self.config.queue)
        for at, reason in gap_reasons(refused, parked).items():
            self.store.record_gap(at, at, reason)
            self.report.gaps.append(f"{moment(at)} to {moment(at)}: {reason}")
            log.warning("gap in the broker activity evidence at %s: %s", moment(at), reason)
        if not self.parked_declared:
            self._declare(parked, _PARKED_ARGUMENTS)
            self.parked_declared = True
        for event, why in refused:
            self._publish(parked, b"", pika.BasicProperties(headers=parked_headers(event, why), delivery_mode=2))
        self.report.parked += len(refused)

    def _publish(self, queue: str, body: bytes, properties: pika.BasicProperties) -> None:
        try:
            self.publisher.basic_publish("", queue, body, properties, mandatory=True)
        except px.UnroutableError as exc:  # deleted under the recorder: declared again when it reconnects
            self.recorder._broken = f"{queue} was deleted while the recorder read {self.queue}"
            raise BrokerUnavailable(f"{self.broker} has no queue {queue} any more: {exc}") from exc
        except px.NackError as exc:
            raise BrokerError(f"{self.broker} refused the recorder's message into {queue}: {exc}") from exc

    def _send_marker(self) -> datetime:
        sent = _now()
        marker = f"{self.id}:{self.nonce}:{sent.isoformat()}"
        self._publish(self.queue, b"", pika.BasicProperties(headers={_MARKER_HEADER: marker}, delivery_mode=1))
        self.marker_sent, self.marker_sent_clock = sent, time.monotonic()
        self.report.markers += 1
        self._trace_round()
        return sent

    # -- delivery traces (amqp.tracing, activity.trace_reader): the queues of versions under retirement --------

    def _trace_round(self) -> None:
        """Every heartbeat: the watches the recording audits asked for, each virtual host's trace open and
        bound, and a canary through each."""
        wanted: dict[str, set[str]] = {}
        since: dict[str, datetime] = {}
        for watch in self.store.delivery_watches():
            wanted.setdefault(watch.vhost, set()).add(watch.queue)
            known = watch.confirmed_until or watch.traced_from
            if known is not None and (watch.vhost not in since or known < since[watch.vhost]):
                since[watch.vhost] = known
        for vhost in [vhost for vhost in self.tracers if vhost not in wanted]:
            self.tracers.pop(vhost).close()
        clock = time.monotonic()
        for vhost, queues in wanted.items():
            tracer = self.tracers.get(vhost)
            if tracer is None:
                if clock < self.tracer_retry.get(vhost, 0.0):
                    continue
                tracer = self._open_trace(vhost, queues, since.get(vhost))
                if tracer is None:
                    continue
            try:
                tracer.bind(queues)
                tracer.send_canary()
            except (BrokerError, px.AMQPError, OSError) as exc:
                self._trace_failed(vhost, exc)

    def _open_trace(self, vhost: str, queues: set[str], since: datetime | None) -> TraceReader | None:
        tracer = TraceReader(
            self.recorder._url,
            vhost,
            trace_queues(self.store.url),
            self.store,
            identity=self.recorder.identity,
            heartbeat=self.config.heartbeat,
            management=self.recorder.management,
        )
        try:
            tracer.open(queues, since)
        except BrokerUnavailable:
            tracer.close()
            raise
        except (BrokerError, px.AMQPError, OSError) as exc:  # a vhost gone or refused: said, tried again later
            tracer.close()
            self._trace_failed(vhost, exc)
            return None
        self.tracers[vhost] = tracer
        return tracer

    def _trace_failed(self, vhost: str, exc: BaseException) -> None:
        """A trace that failed is closed and tried again a few heartbeats later; the events go on. What it had
        read and not stored goes back to its queue unacked, so nothing is lost unless the queue is (then the
        trace starts anew, ``TraceReader.open``)."""
        tracer = self.tracers.pop(vhost, None)
        if tracer is not None:
            tracer.close()
        self.tracer_retry[vhost] = time.monotonic() + _PROBE_EVERY * self.config.heartbeat
        problem = f"the recorder cannot read the delivery trace of virtual host {vhost!r}: {exc}"
        log.warning("%s", problem)
        self.store.confirm_delivery_watches(vhost, until=None, problem=problem[:2000])

    def _poll_traces(self) -> None:
        for vhost, tracer in list(self.tracers.items()):
            try:
                tracer.poll()
            except (BrokerError, px.AMQPError, OSError) as exc:
                self._trace_failed(vhost, exc)

    def close_traces(self) -> None:
        for tracer in self.tracers.values():
            tracer.close()
        self.tracers = {}

    def _confirm(self, sent: datetime) -> None:
        """A marker came back: every event queued before it is stored, or was dropped (then a gap), so the
        coverage extends to its send time less the margin, and the sentinel says so."""
        assert self.covered_from is not None
        self._flush()
        self.connection.process_data_events(time_limit=0)  # a drop reaches its queue a moment after it happens
        kept = deque(item for item in self.inbox if not item[0])
        for from_drops, method, properties, _body in self.inbox:
            if from_drops:
                self.drops.append((dropped(properties, _now()), method.delivery_tag))
        self.inbox = kept
        self._record_drops()
        until = max(self.covered_from, sent - MARGIN)
        self.store.extend_coverage(self.id, covered_from=self.covered_from, until=until)
        self.confirmations.append(until)
        del self.confirmations[:-_CONFIRMATIONS_KEPT]
        self.report.covered_until = until
        sentinel = Sentinel(self.id, self.incarnation or "unknown", until)
        self._publish(self.sentinel_queue, sentinel.encode(), pika.BasicProperties(delivery_mode=1))

    def _record_drops(self) -> None:
        """Messages the broker dropped at the queue's limit while this recorder read it: the events from the last
        moment confirmed before the oldest of them to the latest of them are lost."""
        if not self.drops:
            return
        oldest = min(drop.at for drop, _tag in self.drops)
        latest = max((drop for drop, _tag in self.drops), key=lambda drop: drop.at)
        before = bisect.bisect_right(self.confirmations, oldest)
        start = self.confirmations[before - 1] if before else min(self.confirmations[0], oldest)
        end = max(start, latest.at + MARGIN)
        reason = drop_reason(self.queue, self.config.limits, latest, running=True)
        self.store.record_gap(start, end, reason, close_sessions=True)
        self.drop_channel.basic_ack(delivery_tag=max(tag for _drop, tag in self.drops), multiple=True)
        self.report.drops += len(self.drops)
        self.drops = []
        text = f"{moment(start)} to {moment(end)}: {reason}"
        self.report.gaps.append(text)
        log.warning("gap in the broker activity evidence from %s", text)

    def _housekeeping(self, clock: float) -> None:
        if clock - self.last_touch >= _TOUCH_EVERY:  # a declare counts as use: the companions never expire
            self.last_touch = clock
            for name in (self.dropped_queue, self.sentinel_queue):
                passive_queue(self.connection, name)
        if clock - self.recorder._last_prune < 3600:
            return
        self.recorder._last_prune = clock
        removed = self.store.prune_broker_activity(_now() - self.config.retention)
        if removed:
            log.info("forgot %d broker activity rows older than %s", removed, self.config.retention)


def _close_channel(channel: Any) -> None:
    """Close a channel that served one declaration (a channel the broker closed already is fine)."""
    with contextlib.suppress(px.AMQPError):
        channel.close()

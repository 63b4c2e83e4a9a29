"""The active recorder's reading of one traced virtual host's delivery trace (``amqp.tracing``).

The broker stamps no time on a trace message, so each delivery is timed by the recorder's canaries around it:
every heartbeat the recorder publishes a canary into ``<trace>.canary`` (at ``sent``) and takes it with
``basic.get`` (done at ``got``). Its delivery trace queues up behind every delivery traced before it. So when the
canary's trace comes back, each delivery read since the previous canary happened after that canary's ``sent``
and before this one's ``got``: stored as a reader session over that interval, with its count, and the watch is
confirmed up to ``sent``. A canary that does not come back within three heartbeats means the trace is not
working (tracing switched off, the binding removed): the watch says so and the readers check is unknown.

Deliveries are acked only once stored. More than ``_FLUSH_AT`` between two canaries are stored at once, timed up
to the moment they were read, so a busy queue never holds the trace behind its prefetch.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pika
import pika.exceptions as px

from contract_platform.activity.continuity import dropped, moment
from contract_platform.activity.events import text_value
from contract_platform.amqp.connection import close_quietly, open_connection
from contract_platform.amqp.http import ManagementClient
from contract_platform.amqp.inspection import passive_queue
from contract_platform.amqp.tracing import (
    CANARY_HEADER,
    DELIVER,
    TRACE_EXCHANGE,
    TRACE_MAX_BYTES,
    TRACE_MAX_MESSAGES,
    binding_key,
    companion_arguments,
    switch_tracing_on,
    trace_arguments,
    untraceable,
)
from contract_platform.amqp.urls import with_vhost
from contract_platform.evidence.records import Delivery
from contract_platform.evidence.registry import ActivityLog

__all__ = ["TraceReader", "Traced", "parse_trace"]

log = logging.getLogger(__name__)

_PREFETCH = 500
_FLUSH_AT = 400  # buffered deliveries stored before the prefetch would hold the trace back
_STALE_HEARTBEATS = 3


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Traced:
    """One trace message: a delivery from ``queue`` (or the recorder's canary, ``canary`` set)."""

    vhost: str
    queue: str
    connection: str | None
    channel: str
    user: str | None
    canary: str | None = None


def parse_trace(routing_key: str, properties: Any, home_vhost: str) -> Traced | None:
    """The delivery a trace message reports (None: not a delivery trace). Every value is bounded text."""
    if not isinstance(routing_key, str) or not routing_key.startswith(DELIVER):
        return None
    headers = getattr(properties, "headers", None)
    headers = headers if isinstance(headers, Mapping) else {}
    original = headers.get("properties")
    inner = original.get("headers") if isinstance(original, Mapping) else None
    canary = text_value(inner.get(CANARY_HEADER)) if isinstance(inner, Mapping) else None
    return Traced(
        vhost=text_value(headers.get("vhost")) or home_vhost,
        queue=routing_key[len(DELIVER) :],
        connection=text_value(headers.get("connection"), 65_536),
        channel=text_value(headers.get("channel")) or "",
        user=text_value(headers.get("user")),
        canary=canary,
    )


class TraceReader:
    """One virtual host's trace: opened by the active recorder's segment, polled every tick, a canary per
    heartbeat. Broker errors leave as ``BrokerError``/``BrokerUnavailable`` (the segment decides)."""

    def __init__(
        self,
        url: str,
        vhost: str,
        names: tuple[str, str, str],
        store: ActivityLog,
        *,
        identity: str,
        heartbeat: float,
        management: Callable[[], ManagementClient],
    ) -> None:
        self.vhost, self.store, self.heartbeat, self.management = vhost, store, heartbeat, management
        self.trace, self.dropped_queue, self.canary_queue = names
        self._url = with_vhost(url, vhost)
        self._identity = identity
        self.nonce = uuid.uuid4().hex
        self.queues: set[str] = set()
        self.connection: Any = None
        self.after: datetime | None = None  # every delivery read since happened after this moment
        self.buffer: dict[tuple[str, str | None, str, str | None], int] = {}
        self.last_tag: int | None = None
        self.pending: dict[str, tuple[datetime, datetime, float]] = {}  # canary -> (sent, got, clock)
        self.problem: str | None = None
        self.stored = 0

    # -- opening -------------------------------------------------------------------------------------------

    def open(self, queues: set[str], since: datetime | None) -> None:
        """Connect, declare the trace (a lost one restarts the vhost's watches), bind ``queues``, consume."""
        self.connection = open_connection(self._url, name=f"contract-platform recorder {self._identity} trace")
        existed = passive_queue(self.connection, self.trace) is not None
        channel = self.connection.channel()
        channel.queue_declare(self.dropped_queue, durable=True, arguments=companion_arguments())
        channel.queue_declare(self.canary_queue, durable=True, arguments=companion_arguments())
        channel.queue_declare(self.trace, durable=True, arguments=trace_arguments(self.dropped_queue))
        channel.queue_bind(self.trace, TRACE_EXCHANGE, routing_key=binding_key(self.canary_queue))
        now = _now()
        if not existed:
            reason = (
                f"the delivery trace queue {self.trace} was not on the broker (deleted, or expired unread for a week)"
            )
            self.store.restart_delivery_watches(self.vhost, traced_from=now, reason=reason)
            since = now
        self.after = since or now
        self.channel = channel
        self.bind(queues)
        channel.basic_qos(prefetch_count=_PREFETCH)
        channel.basic_consume(self.trace, self._on_trace, auto_ack=False)
        channel.basic_consume(self.dropped_queue, self._on_drop, auto_ack=False)
        self.publisher = self.connection.channel()
        problem = switch_tracing_on(self.management(), self.vhost)
        if problem is not None:
            self._say(problem)

    def bind(self, queues: set[str]) -> None:
        for queue in sorted(queues - self.queues):
            if untraceable(queue) is None:  # a binding that could route a trace too long to deliver, never
                self.channel.queue_bind(self.trace, TRACE_EXCHANGE, routing_key=binding_key(queue))
        self.queues |= queues

    def close(self) -> None:
        if self.connection is not None:
            close_quietly(self.connection)
            self.connection = None

    # -- reading -------------------------------------------------------------------------------------------

    def poll(self) -> None:
        self.connection.process_data_events(time_limit=0)

    def _on_trace(self, _channel: Any, method: Any, properties: Any, _body: bytes) -> None:
        # the body is the traced message itself: never kept, never logged
        self.last_tag = method.delivery_tag
        traced = parse_trace(method.routing_key, properties, self.vhost)
        if traced is None:
            return
        if traced.canary is not None:
            if traced.queue == self.canary_queue and traced.canary in self.pending:
                self._confirm(traced.canary)
            return
        if traced.queue not in self.queues:  # a wildcard in a watched name bound more than its own deliveries
            return
        key = (traced.queue, traced.connection, traced.channel, traced.user)
        self.buffer[key] = self.buffer.get(key, 0) + 1
        if sum(self.buffer.values()) >= _FLUSH_AT:
            self._store(_now())

    def _on_drop(self, channel: Any, method: Any, properties: Any, _body: bytes) -> None:
        found = dropped(properties, _now())
        start = self.after or found.at
        reason = (
            f"the delivery trace {self.trace} in virtual host {self.vhost!r} reached its limit ({TRACE_MAX_MESSAGES:,} "
            f"messages or {TRACE_MAX_BYTES:,} bytes): the broker dropped traced deliveries, the latest at "
            f"{moment(found.at)}"
        )
        self.store.record_gap(start, max(start, found.at), reason)
        channel.basic_ack(delivery_tag=method.delivery_tag)
        log.warning("gap in the delivery trace: %s", reason)

    def _store(self, before: datetime) -> None:
        """Store what was read, timed between ``self.after`` and ``before``, and ack it."""
        after = self.after or before
        if self.buffer:
            deliveries = [
                Delivery(self.vhost, queue, connection, channel, user, after, before, count)
                for (queue, connection, channel, user), count in self.buffer.items()
            ]
            self.store.store_deliveries(deliveries)
            self.stored += sum(self.buffer.values())
            self.buffer = {}
        if self.last_tag is not None:
            self.channel.basic_ack(delivery_tag=self.last_tag, multiple=True)
            self.last_tag = None

    def _confirm(self, canary: str) -> None:
        sent, got, _clock = self.pending.pop(canary)
        self._store(got)
        self.after = sent
        for older in [name for name, (when, _got, _c) in self.pending.items() if when <= sent]:
            del self.pending[older]
        self.problem = None
        self.store.confirm_delivery_watches(self.vhost, until=sent, problem=None)

    # -- the canary ----------------------------------------------------------------------------------------

    def send_canary(self) -> None:
        """Publish a canary and take it: its delivery trace comes back behind every delivery traced before."""
        self._check_stale()
        sent = _now()
        name = f"{self.nonce}:{sent.isoformat()}"
        properties = pika.BasicProperties(headers={CANARY_HEADER: name}, delivery_mode=1)
        self.publisher.basic_publish("", self.canary_queue, b"", properties)
        while True:  # take every canary waiting (the queue keeps one; an older recorder's may be there)
            method, _props, _body = self.publisher.basic_get(self.canary_queue, auto_ack=True)
            if method is None:
                break
        self.pending[name] = (sent, _now(), time.monotonic())

    def _check_stale(self) -> None:
        if not self.pending:
            return
        oldest = min(clock for _sent, _got, clock in self.pending.values())
        if time.monotonic() - oldest < _STALE_HEARTBEATS * self.heartbeat:
            return
        problem = switch_tracing_on(self.management(), self.vhost)
        said = problem or (
            f"the recorder's canary did not come back through the delivery trace of virtual host {self.vhost!r} "
            f"within {_STALE_HEARTBEATS} heartbeats (tracing was off, or the trace binding was removed; the recorder "
            "switched tracing on and goes on)"
        )
        self._say(said)
        now = _now()  # what was delivered meanwhile may not have been traced: never a clean stretch
        self.store.record_gap(self.after or now, now, said)
        self.after = now
        with contextlib.suppress(px.AMQPError):
            self.channel.queue_bind(self.trace, TRACE_EXCHANGE, routing_key=binding_key(self.canary_queue))
            for queue in sorted(self.queues):
                if untraceable(queue) is None:
                    self.channel.queue_bind(self.trace, TRACE_EXCHANGE, routing_key=binding_key(queue))
        self.pending.clear()

    def _say(self, problem: str) -> None:
        if problem != self.problem:
            self.problem = problem
            log.warning("%s", problem)
            self.store.confirm_delivery_watches(self.vhost, until=None, problem=problem)

    def waiting(self) -> bool:
        """A canary is still on its way."""
        return bool(self.pending)

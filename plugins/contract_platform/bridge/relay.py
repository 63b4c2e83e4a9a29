"""Consume a queue, republish every delivery with confirms, acknowledge only what was confirmed (asynchronous).

pika's ``BlockingConnection`` waits for each confirm inside ``basic_publish`` (one round trip per message);
this keeps up to ``prefetch`` publishes in flight on one ``SelectConnection`` channel instead:

::

    basic.deliver (tag d) -> translate -> basic.publish (seq s, mandatory) -> in flight
    basic.ack (seq <= s, multiple) from the broker -> ConfirmTracker -> basic.ack(highest contiguous d, multiple)
    basic.return / basic.nack for s -> basic.nack(d, requeue) and stop with PublishRefused

A delivery is acknowledged only after its republication was confirmed, so a crash at any moment leaves
every message either acknowledged (and republished) or back in the queue: at least once, never lost.

``Relay.run()`` is one connection's life. It stops when asked (``request_stop``, safe from another thread
or a signal handler), after ``max_messages`` deliveries, at ``deadline``, or once the queue has been idle for
``idle_timeout`` seconds; stopping cancels the consumer, waits up to ``stop_timeout`` for outstanding
confirms, sends the last acknowledgements and closes. Deliveries that arrive after the cancel are left
unacknowledged: the broker requeues them when the channel closes. Errors are raised as platform errors
(``BrokerUnavailable`` when the connection is lost: the caller may reconnect).

A ``Translate`` has two halves: ``prepare(body)`` (pure and CPU-heavy) and ``finish(prepared, properties, body)``
(cheap). With ``offload`` the first half runs in a helper process (``offload.OffloadWorker``), one batch
at a time and in delivery order, so the AMQP work and the translation use two cores.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

import pika
import pika.exceptions as px
from pika.spec import Basic

from contract_platform.amqp.asynchronous import async_parameters
from contract_platform.amqp.confirms import ConfirmTracker, SettleKind
from contract_platform.amqp.connection import map_error
from contract_platform.amqp.encoded import DeferredPropertiesConnection
from contract_platform.bridge.offload import OffloadWorker
from contract_platform.errors import BrokerError, BrokerUnavailable, PublishRefused, QueueMissing
from contract_platform.settings import redact_url

__all__ = ["Outgoing", "Relay", "RelaySettings", "RelayStats", "StopReason"]

log = logging.getLogger(__name__)

NOT_FOUND = 404
TICK_SECONDS = 0.1  # how often idle, deadline and stop requests are looked at


class StopReason(StrEnum):
    IDLE = "idle"  # drain: nothing delivered for idle_timeout seconds and nothing left in flight
    MAX_MESSAGES = "max-messages"
    MAX_SECONDS = "max-seconds"
    REQUESTED = "requested"  # request_stop(): SIGTERM/SIGINT or the caller
    ERROR = "error"


@dataclass(frozen=True)
class Outgoing:
    """What one delivery becomes: a publish, and a label to count it under once confirmed."""

    exchange: str
    routing_key: str
    body: bytes
    properties: Any  # pika.BasicProperties
    message_id: str | None
    label: str


class Translate(Protocol):
    """What a delivery becomes, in two halves so that the first can run in another process."""

    def prepare(self, body: bytes) -> Any:
        """The heavy, pure half: a picklable result from the body alone."""

    def finish(self, prepared: Any, properties: Any, body: bytes) -> Outgoing:
        """The cheap half, in the relay's process: the publish, given the delivery's properties and body."""

    # Optional: ``failed(properties, body, error) -> Outgoing``, what to publish instead when ``finish`` or the
    # publication of its result raised for this message (the bridge parks it); without it the relay stops.


@dataclass(frozen=True)
class RelaySettings:
    url: str
    queue: str
    prefetch: int = 1000
    idle_timeout: float | None = None  # None: follow, never stop for idleness
    max_messages: int | None = None  # counted over every connection sharing the same RelayStats
    deadline: float | None = None  # time.monotonic() value
    stop_timeout: float = 30.0
    connection_name: str = "contract-platform-relay"
    offload: bool = False  # run Translate.prepare in a helper process
    batch_limit: int = 500  # most deliveries handed to the helper at once


@dataclass
class RelayStats:
    """Counters shared by the successive connections of one run."""

    consumed: int = 0
    redelivered: int = 0
    confirmed: Counter[str] = field(default_factory=Counter)  # label -> republications confirmed and acked
    requeued: int = 0  # deliveries nacked back to the queue (their republication was refused)
    first_delivery: float | None = None  # time.monotonic()
    last_settled: float | None = None


class Relay:
    """One connection: consume ``settings.queue``, publish ``translate(delivery)``, settle on confirms."""

    def __init__(self, settings: RelaySettings, translate: Translate, stats: RelayStats | None = None) -> None:
        self.settings = settings
        self.translate = translate
        self.stats = stats if stats is not None else RelayStats()
        self.broker = redact_url(settings.url)
        self._tracker = ConfirmTracker()
        self._connection: Any = None
        self._channel: Any = None
        self._consumer_tag: str | None = None
        self._sequence = 0
        self._stop_requested: StopReason | None = None
        self._stopping = False
        self._closing = False
        self._reason: StopReason | None = None
        self._error: BaseException | None = None
        self._last_activity = time.monotonic()
        self._worker: OffloadWorker | None = None
        self._waiting: list[tuple[int, Any, bytes]] = []  # (delivery tag, properties, body) not yet translated
        self._at_worker: list[tuple[int, Any, bytes]] = []  # the batch the helper is translating
        self._dispatch_scheduled = False

    # -- public -----------------------------------------------------------------------------------

    def run(self) -> StopReason:
        """Connect, relay until a stop condition, close; raises the platform error that stopped it."""
        params = async_parameters(self.settings.url, self.settings.connection_name)
        if self.settings.offload:
            self._worker = OffloadWorker(self.translate.prepare)
            self._worker.start()  # forked before the connection exists: the helper holds no broker socket
        try:
            # deliveries' properties stay encoded until read: a migrated message never reads them (only a parked
            # copy does), and its own properties come already encoded from the translator (amqp/encoded.py)
            self._connection = DeferredPropertiesConnection(
                params,
                on_open_callback=self._on_connection_open,
                on_open_error_callback=self._on_connection_open_error,
                on_close_callback=self._on_connection_closed,
            )
            ioloop = self._connection.ioloop
            if self._worker is not None:
                ioloop.add_handler(self._worker.fileno(), self._on_worker_readable, ioloop.READ)
            ioloop.start()
        finally:
            self._merge_counts()
            if self._worker is not None:
                self._worker.close()
            if self._connection is not None:
                with contextlib.suppress(Exception):  # release the loop's sockets; it is not used again
                    self._connection.ioloop.close()
        if self._error is not None:
            raise self._error
        return self._reason or StopReason.REQUESTED

    def request_stop(self, reason: StopReason = StopReason.REQUESTED, *, wake: bool = True) -> None:
        """Stop gracefully; safe from any thread. From a signal handler pass ``wake=False``: only a flag is set
        (waking the loop takes a lock), and the loop sees it within ``TICK_SECONDS``."""
        self._stop_requested = self._stop_requested or reason
        connection = self._connection
        if wake and connection is not None:
            # A loop that is already closed raises: the flag is then enough.
            with contextlib.suppress(RuntimeError, OSError, AttributeError):
                connection.ioloop.add_callback_threadsafe(functools.partial(self._begin_stop, reason))

    @property
    def in_flight(self) -> int:
        return self._tracker.in_flight

    # -- connection and channel -------------------------------------------------------------------

    def _on_connection_open(self, connection: pika.SelectConnection) -> None:
        connection.channel(on_open_callback=self._on_channel_open)

    def _on_connection_open_error(self, connection: pika.SelectConnection, error: BaseException | str) -> None:
        if isinstance(error, BaseException):
            self._fail(self._mapped(error))
        else:
            self._fail(BrokerUnavailable(f"RabbitMQ at {self.broker}: cannot connect ({error}); retry later"))
        connection.ioloop.stop()

    def _on_connection_closed(self, connection: pika.SelectConnection, reason: BaseException) -> None:
        self._channel = None
        if not self._closing:
            self._fail(self._mapped(reason))
        connection.ioloop.stop()

    def _on_channel_open(self, channel: Any) -> None:
        self._channel = channel
        channel.add_on_close_callback(self._on_channel_closed)
        channel.add_on_return_callback(self._on_return)
        channel.add_on_cancel_callback(self._on_consumer_cancelled)
        channel.confirm_delivery(self._on_confirm, callback=self._on_confirm_select_ok)

    def _on_confirm_select_ok(self, _frame: Any) -> None:
        self._channel.basic_qos(prefetch_count=self.settings.prefetch, callback=self._on_qos_ok)

    def _on_qos_ok(self, _frame: Any) -> None:
        if self._stop_requested is not None:
            self._begin_stop(self._stop_requested)
            return
        self._consumer_tag = self._channel.basic_consume(
            self.settings.queue, self._on_message, callback=self._on_consume_ok
        )

    def _on_consume_ok(self, _frame: Any) -> None:
        self._last_activity = time.monotonic()
        self._connection.ioloop.call_later(TICK_SECONDS, self._tick)

    def _on_channel_closed(self, channel: Any, reason: BaseException) -> None:
        self._channel = None
        self._consumer_tag = None
        if not self._closing:
            if isinstance(reason, px.ChannelClosedByBroker) and reason.reply_code == NOT_FOUND:
                self._fail(
                    PublishRefused(
                        f"RabbitMQ at {self.broker} closed the relay's channel: {reason.reply_text}; provision the "
                        "topology first (nothing unconfirmed was acknowledged: those messages are back in "
                        f"{self.settings.queue})"
                    )
                )
            else:
                self._fail(self._mapped(reason))
        self._close()

    def _on_consumer_cancelled(self, _frame: Any) -> None:
        self._consumer_tag = None
        self._fail(
            QueueMissing(f"RabbitMQ at {self.broker} cancelled the consumer of {self.settings.queue}: was it deleted?")
        )

    # -- the hot path -----------------------------------------------------------------------------

    def _on_message(self, channel: Any, method: Any, properties: Any, body: bytes) -> None:
        if self._stopping:
            return  # not republished, not acknowledged: requeued by the broker when the channel closes
        stats = self.stats
        now = time.monotonic()
        self._last_activity = now
        if stats.first_delivery is None:
            stats.first_delivery = now
        stats.consumed += 1
        if method.redelivered:
            stats.redelivered += 1
        if self._worker is not None:
            self._waiting.append((method.delivery_tag, properties, body))
            if not self._dispatch_scheduled:  # after this turn of the loop: one batch for all it delivered
                self._dispatch_scheduled = True
                self._connection.ioloop.call_later(0, self._dispatch)
        else:
            try:
                prepared = self.translate.prepare(body)
            except Exception as exc:  # a bug, not a bad message: stop (re-raised by run); this delivery goes back
                log.exception("translating delivery %s failed", method.delivery_tag)
                self._fail(exc)
                return
            self._publish_one(method.delivery_tag, prepared, properties, body)
        if self.settings.max_messages is not None and stats.consumed >= self.settings.max_messages:
            self._begin_stop(StopReason.MAX_MESSAGES)

    def _publish_one(self, delivery_tag: int, prepared: Any, properties: Any, body: bytes) -> None:
        """Finish and publish one delivery. When that raises for the message itself (not the broker), the
        translator's ``failed`` copy goes out instead, so one message never stops the relay."""
        try:
            self._publish(delivery_tag, self.translate.finish(prepared, properties, body))
            return
        except px.AMQPError:
            raise
        except Exception as exc:
            failed = getattr(self.translate, "failed", None)
            if failed is None:
                raise
            # the exception's type only: pika's encoding errors quote header values
            log.warning(
                "delivery %s could not be published as translated (%s); parking it", delivery_tag, type(exc).__name__
            )
            self._publish(delivery_tag, failed(properties, body, exc))

    def _publish(self, delivery_tag: int, outgoing: Outgoing) -> None:
        self._channel.basic_publish(outgoing.exchange, outgoing.routing_key, outgoing.body, outgoing.properties, True)
        self._sequence += 1
        self._tracker.published(self._sequence, delivery_tag, outgoing.message_id, outgoing.label)

    def _dispatch(self) -> None:
        """Hand the helper the next batch, if it is idle (one batch in flight: no side waits on a full pipe)."""
        self._dispatch_scheduled = False
        if self._at_worker or not self._waiting or self._closing or self._worker is None:
            return
        batch = self._waiting[: self.settings.batch_limit]
        del self._waiting[: len(batch)]
        self._at_worker = batch
        try:
            self._worker.send([body for _, _, body in batch])
        except Exception as exc:
            self._fail(exc)

    def _on_worker_readable(self, _fd: int, _events: int) -> None:
        assert self._worker is not None
        try:
            results = self._worker.receive()
        except Exception as exc:  # the helper died: stop; every delivery not confirmed goes back
            self._connection.ioloop.remove_handler(self._worker.fileno())
            self._at_worker = []
            self._fail(exc)
            return
        batch, self._at_worker = self._at_worker, []
        self._dispatch()  # the helper starts on the next batch while this one is published
        channel = self._channel
        if channel is None or not channel.is_open or self._closing or self._error is not None:
            self._finish_if_done()
            return
        try:
            for (tag, properties, body), prepared in zip(batch, results, strict=True):
                self._publish_one(tag, prepared, properties, body)
        except Exception as exc:
            log.exception("finishing a translated batch failed")
            self._fail(exc)
        self._finish_if_done()

    def _on_confirm(self, frame: Any) -> None:
        method = frame.method
        ok = isinstance(method, Basic.Ack)
        self._tracker.answered(method.delivery_tag, multiple=method.multiple, ok=ok)
        if not ok:
            self._fail(
                PublishRefused(
                    f"RabbitMQ at {self.broker} nacked a republication from {self.settings.queue} (a queue may be "
                    "full or unavailable); its delivery was requeued, not acknowledged: check the broker and rerun"
                )
            )
        self._settle()
        self._finish_if_done()

    def _on_return(self, _channel: Any, method: Any, properties: Any, _body: bytes) -> None:
        message_id = getattr(properties, "message_id", None)
        self._tracker.returned(message_id)
        if method.exchange:
            where = f"no queue is bound to exchange {method.exchange} with routing key {method.routing_key}"
        else:  # published to a queue by name: the parking lot
            where = f"queue {method.routing_key} does not exist"
        self._fail(
            PublishRefused(
                f"{where} on {self.broker} ({method.reply_code} {method.reply_text}): the target topology is "
                f"missing; provision it and run again. Message {message_id} was not delivered; its delivery was "
                f"requeued to {self.settings.queue}, not acknowledged"
            )
        )

    def _settle(self) -> None:
        channel = self._channel
        if channel is None or not channel.is_open:
            return
        frames = self._tracker.settle()
        for frame in frames:
            if frame.kind is SettleKind.ACK:
                channel.basic_ack(frame.delivery_tag, multiple=True)
            else:
                channel.basic_nack(frame.delivery_tag, multiple=False, requeue=True)
                self.stats.requeued += 1
        if frames:
            self.stats.last_settled = time.monotonic()

    # -- stopping ---------------------------------------------------------------------------------

    def _tick(self) -> None:
        if self._closing:
            return
        now = time.monotonic()
        settings = self.settings
        if self._stop_requested is not None:
            self._begin_stop(self._stop_requested)
        elif settings.deadline is not None and now >= settings.deadline:
            self._begin_stop(StopReason.MAX_SECONDS)
        elif (
            settings.idle_timeout is not None
            and self._tracker.unsettled == 0
            and not self._waiting
            and not self._at_worker
            and now - self._last_activity >= settings.idle_timeout
        ):
            self._begin_stop(StopReason.IDLE)
        if not self._stopping:
            self._connection.ioloop.call_later(TICK_SECONDS, self._tick)

    def _fail(self, error: BaseException) -> None:
        if self._error is None:
            self._error = error
        self._waiting.clear()  # not translated yet: left unacknowledged, so the broker requeues them
        self._begin_stop(StopReason.ERROR)

    def _begin_stop(self, reason: StopReason) -> None:
        if self._stopping or self._connection is None:
            return
        self._stopping = True
        self._reason = reason
        channel = self._channel
        if channel is not None and channel.is_open and self._consumer_tag is not None:
            channel.basic_cancel(self._consumer_tag, callback=self._on_cancel_ok)
        else:
            self._consumer_tag = None
        self._connection.ioloop.call_later(self.settings.stop_timeout, self._on_stop_timeout)
        self._finish_if_done()

    def _on_cancel_ok(self, _frame: Any) -> None:
        self._consumer_tag = None
        self._finish_if_done()

    def _finish_if_done(self) -> None:
        if not self._stopping or self._closing or self._consumer_tag is not None:
            return
        channel_open = self._channel is not None and self._channel.is_open
        if (self._tracker.in_flight or self._at_worker or self._waiting) and channel_open:
            return  # wait for what was consumed before the stop to be translated, published and confirmed
        self._close()

    def _on_stop_timeout(self) -> None:
        if not self._closing:
            log.warning(
                "%d republications from %s still unconfirmed after %.0f s; closing: their deliveries go back to the "
                "queue and will be republished (same messageId)",
                self._tracker.in_flight,
                self.settings.queue,
                self.settings.stop_timeout,
            )
            self._close()

    def _close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._settle()
        connection = self._connection
        try:
            if connection.is_open:
                connection.close()  # closes the channel first; the acknowledgements above go out before it
                return
        except (px.AMQPError, OSError) as exc:  # closing what is already gone is not an error
            log.debug("ignored while closing: %r", exc)
        if not connection.is_closing:
            connection.ioloop.stop()

    # -- helpers ----------------------------------------------------------------------------------

    def _mapped(self, error: BaseException) -> BrokerError:
        try:
            return map_error(error, self.broker)
        except TypeError:  # not a pika or socket error
            return BrokerUnavailable(f"RabbitMQ at {self.broker}: the connection failed ({error!r})")

    def _merge_counts(self) -> None:
        self.stats.confirmed.update(self._tracker.confirmed)
        self._tracker.confirmed.clear()

"""Consume a queue, republish every delivery with confirms, acknowledge only what was confirmed (asynchronous).

pika's ``BlockingConnection`` waits for each confirm inside ``basic_publish`` (one round trip per message);
this keeps up to ``prefetch`` publishes in flight on one ``SelectConnection`` channel instead:

::

    basic.deliver (tag d) -> translate -> basic.publish (seq s, mandatory) -> in flight
    basic.ack (seq <= s, multiple) from the broker -> ConfirmTracker -> basic.ack(highest contiguous d, multiple)
    basic.return / basic.nack for s -> basic.nack(d, requeue) and stop with PublishRefused

A delivery is acknowledged only after its republication was confirmed, so a crash at any moment leaves
every message either acknowledged (and republished) or back in the queue: at least once, never lost.

``Relay.run()`` is one connection's life, which ``amqp.asynchronous.ConsumingChannel`` runs for the relay and the
service client's consumer alike: it stops when asked (``request_stop``), after ``max_messages`` deliveries, at
``deadline``, or once the queue has been idle for ``idle_timeout`` seconds, waiting up to ``stop_timeout`` for
outstanding confirms. Errors are raised as platform errors (``BrokerUnavailable`` when the connection is lost:
the caller may reconnect).

A ``Translate`` has two halves: ``prepare(body)`` (pure and CPU-heavy) and ``finish(prepared, properties, body)``
(cheap). With ``offload`` the first half runs in a helper process (``offload.OffloadWorker``), one batch
at a time and in delivery order, so the AMQP work and the translation use two cores.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import pika.exceptions as px

from contract_platform.amqp.asynchronous import ConsumingChannel, StopReason
from contract_platform.amqp.confirms import Settle
from contract_platform.amqp.encoded import DeferredPropertiesConnection
from contract_platform.bridge.offload import OffloadWorker
from contract_platform.errors import BrokerError, PublishRefused

__all__ = ["Outgoing", "Relay", "RelaySettings", "RelayStats", "StopReason"]

log = logging.getLogger(__name__)


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


class Relay(ConsumingChannel):
    """One connection: consume ``settings.queue``, publish ``translate(delivery)``, settle on confirms."""

    _connection_class = DeferredPropertiesConnection  # deliveries' properties stay encoded until read (amqp/encoded.py)

    def __init__(self, settings: RelaySettings, translate: Translate, stats: RelayStats | None = None) -> None:
        self.settings = settings
        self.translate = translate
        self.stats = stats if stats is not None else RelayStats()
        self._worker: OffloadWorker | None = None
        self._waiting: list[tuple[int, Any, bytes]] = []  # (delivery tag, properties, body) not yet translated
        self._at_worker: list[tuple[int, Any, bytes]] = []  # the batch the helper is translating
        self._dispatch_scheduled = False
        super().__init__(
            settings.url,
            settings.connection_name,
            (settings.queue,),
            prefetch=settings.prefetch,
            stop_timeout=settings.stop_timeout,
        )

    # -- public -----------------------------------------------------------------------------------

    def run(self) -> StopReason:
        """Connect, relay until a stop condition, close; raises the platform error that stopped it."""
        settings = self.settings
        if settings.offload:
            self._worker = OffloadWorker(self.translate.prepare)
            self._worker.start()  # forked before the connection exists: the helper holds no broker socket
        try:
            return self._consume(settings.idle_timeout, settings.max_messages, settings.deadline)
        finally:
            self.stats.confirmed.update(self._tracker.confirmed)
            self._tracker.confirmed.clear()
            if self._worker is not None:
                self._worker.close()

    @property
    def in_flight(self) -> int:
        return self._tracker.in_flight

    # -- what differs from the base: the helper, the 404, the refusals ----------------------------

    def _on_connection_open(self, connection: Any) -> None:
        if self._worker is not None:
            connection.ioloop.add_handler(self._worker.fileno(), self._on_worker_readable, connection.ioloop.READ)
        super()._on_connection_open(connection)

    def _not_found(self, reply_text: str) -> BrokerError:
        return PublishRefused(
            f"RabbitMQ at {self.broker} closed the relay's channel: {reply_text}; provision the topology first "
            f"(nothing unconfirmed was acknowledged: those messages are back in {self.settings.queue})"
        )

    def _pending(self) -> bool:
        return bool(self._waiting or self._at_worker)

    def _fail(self, error: BaseException) -> None:
        self._waiting.clear()  # not translated yet: left unacknowledged, so the broker requeues them
        super()._fail(error)

    # -- the hot path -----------------------------------------------------------------------------

    def _deliveries(self, _queue: str) -> Callable[[Any, Any, Any, bytes], None]:
        return self._on_message  # one queue: no partial on the hot path

    def _on_message(self, _channel: Any, method: Any, properties: Any, body: bytes) -> None:
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
        if self._max_messages is not None and stats.consumed >= self._max_messages:
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

    def _nacked(self) -> None:
        self._fail(
            PublishRefused(
                f"RabbitMQ at {self.broker} nacked a republication from {self.settings.queue} (a queue may be "
                "full or unavailable); its delivery was requeued, not acknowledged: check the broker and rerun"
            )
        )

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

    def _refused(self, channel: Any, delivery_tag: int) -> None:
        channel.basic_nack(delivery_tag, multiple=False, requeue=True)
        self.stats.requeued += 1

    def _settled(self, frames: list[Settle]) -> None:
        if frames:
            self.stats.last_settled = time.monotonic()

"""pika's asynchronous connection as the platform runs it: one confirm-mode channel, many publishes in flight.

pika's ``BlockingConnection`` waits for each confirm inside ``basic_publish`` (one round trip per message);
the bridge's relay (``bridge.relay``) and the service client's publisher and consumer
(``contract_platform.client``) run a ``SelectConnection`` instead and track confirms with
``amqp.confirms.ConfirmTracker``. Their connection's life is defined once, here:

- ``ConfirmChannel``: open the connection (``async_parameters``: the platform's timeouts and a connection name;
  ``JoinedWritesConnection``: the frames of one loop turn in one write), one channel in confirm mode, every
  pika and socket error mapped to the platform's (``amqp.connection.map_error``), closing. The guarded
  publisher is one, run in its I/O thread.
- ``ConsumingChannel``: a ``ConfirmChannel`` that consumes queues (``prefetch``) and acknowledges a delivery
  only once what it published for it is confirmed. It stops when asked (``request_stop``, safe from another
  thread or a signal handler), after ``max_messages`` deliveries (counted by the subclass), at ``deadline``,
  or once idle for ``idle_timeout`` seconds; stopping cancels the consumers, waits up to ``stop_timeout`` for
  outstanding confirms, sends the last acknowledgements and closes. Deliveries that arrive after the cancel
  are left unacknowledged: the broker requeues them when the channel closes. The relay and the guarded
  consumer are ones.

::

    class Relay(ConsumingChannel):                  # run(): self._consume(idle_timeout, max_messages, deadline)
        def _deliveries(self, queue): ...           # pika's on_message_callback for that queue
        def _refused(self, channel, tag): ...       # its republication was refused: basic.nack(requeue) here

A subclass keeps only what differs: what it does with a delivery (``_deliveries``), a returned publish
(``_on_return``), a refused republication (``_refused``), and what a 404 closing its channel means
(``_not_found``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import Any, ClassVar

import pika
import pika.exceptions as px
from pika.spec import Basic

from contract_platform.amqp.confirms import ConfirmTracker, Settle, SettleKind
from contract_platform.amqp.connection import (
    DEFAULT_BLOCKED_TIMEOUT,
    DEFAULT_HEARTBEAT,
    DEFAULT_SOCKET_TIMEOUT,
    _url_parameters,
    map_error,
)
from contract_platform.errors import BrokerError, BrokerUnavailable, QueueMissing
from contract_platform.settings import redact_url

__all__ = ["ConfirmChannel", "ConsumingChannel", "JoinedWritesConnection", "StopReason", "async_parameters"]

log = logging.getLogger(__name__)

NOT_FOUND = 404
TICK_SECONDS = 0.1  # how often idle, deadline and stop requests are looked at


def async_parameters(url: str, connection_name: str) -> Any:
    """``pika.URLParameters`` of ``url`` with the platform's defaults, named ``connection_name`` on the broker."""
    params = _url_parameters(url, DEFAULT_HEARTBEAT, DEFAULT_SOCKET_TIMEOUT, DEFAULT_BLOCKED_TIMEOUT)
    params.client_properties = {"connection_name": connection_name}
    return params


class JoinedWritesConnection(pika.SelectConnection):
    """pika sends every frame with its own ``send()`` (three per publish); this joins what one turn of the
    loop produced into one write, which is what makes thousands of publishes per second affordable."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._pending: list[bytes] = []
        self._flush_scheduled = False
        super().__init__(*args, **kwargs)

    def _adapter_emit_data(self, data: bytes) -> None:
        self._pending.append(data)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.ioloop.call_later(0, self._flush_writes)

    def _flush_writes(self) -> None:
        self._flush_scheduled = False
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            # pika's private transport and its write hook: neither is in pika's stubs
            if self._transport is not None:  # type: ignore[attr-defined]  # the stream may have gone since: then so has the data
                super()._adapter_emit_data(data)  # type: ignore[misc]


class StopReason(StrEnum):
    IDLE = "idle"  # drain: nothing delivered for idle_timeout seconds and nothing left in flight
    MAX_MESSAGES = "max-messages"
    MAX_SECONDS = "max-seconds"
    REQUESTED = "requested"  # request_stop(): SIGTERM/SIGINT or the caller
    ERROR = "error"


class ConfirmChannel:
    """One ``SelectConnection`` with one confirm-mode channel, its loop run by ``_run_loop`` in the calling thread.

    A subclass defines ``_on_confirm(frame)`` and ``_on_return(channel, method, properties, body)``, and may
    extend ``_fail`` (the first error is kept in ``_error``), ``_on_confirm_ok`` (the channel is ready) and
    ``_not_found`` (the broker closed the channel with 404)."""

    _connection_class: ClassVar[type[pika.SelectConnection]] = JoinedWritesConnection

    def __init__(self, url: str, connection_name: str) -> None:
        self.url = url
        self.broker = redact_url(url)
        self.connection_name = connection_name
        self._reset()

    def _reset(self) -> None:
        """What one connection's life starts from."""
        self._connection: Any = None
        self._tracker = ConfirmTracker()
        self._sequence = 0  # publishes on the channel: the broker's confirms name them
        self._channel: Any = None
        self._closing = False
        self._error: BaseException | None = None

    def _run_loop(self) -> None:
        """Open the connection and run its loop until it stops; the loop's sockets are released after."""
        try:
            self._connection = self._connection_class(
                async_parameters(self.url, self.connection_name),
                on_open_callback=self._on_connection_open,
                on_open_error_callback=self._on_open_error,
                on_close_callback=self._on_connection_closed,
            )
            self._connection.ioloop.start()
        finally:
            if self._connection is not None:
                with contextlib.suppress(Exception):  # it is not used again
                    self._connection.ioloop.close()

    def _on_connection_open(self, connection: Any) -> None:
        connection.channel(on_open_callback=self._on_channel_open)

    def _on_open_error(self, connection: Any, error: BaseException | str) -> None:
        self._fail(
            self._mapped(error)
            if isinstance(error, BaseException)
            else BrokerUnavailable(f"RabbitMQ at {self.broker}: cannot connect ({error}); retry later")
        )
        connection.ioloop.stop()

    def _on_connection_closed(self, connection: Any, reason: BaseException) -> None:
        self._channel = None
        if not self._closing:
            self._fail(self._mapped(reason))
        connection.ioloop.stop()

    def _on_channel_open(self, channel: Any) -> None:
        self._channel = channel
        channel.add_on_close_callback(self._on_channel_closed)
        channel.add_on_return_callback(self._on_return)
        channel.confirm_delivery(self._on_confirm, callback=self._on_confirm_ok)

    def _on_confirm_ok(self, _frame: Any) -> None:
        """The channel is in confirm mode."""

    def _on_channel_closed(self, _channel: Any, reason: BaseException) -> None:
        self._channel = None
        if not self._closing:
            if isinstance(reason, px.ChannelClosedByBroker) and reason.reply_code == NOT_FOUND:
                self._fail(self._not_found(reason.reply_text))
            else:
                self._fail(self._mapped(reason))
        self._close()

    def _not_found(self, reply_text: str) -> BrokerError:
        return QueueMissing(f"RabbitMQ at {self.broker}: {reply_text}; provision the topology first")

    def _on_confirm(self, frame: Any) -> None:
        raise NotImplementedError

    def _on_return(self, channel: Any, method: Any, properties: Any, body: bytes) -> None:
        raise NotImplementedError

    def _fail(self, error: BaseException) -> None:
        if self._error is None:
            self._error = error

    def _close(self) -> None:
        """Close the connection (its channel first); one that is already gone just stops the loop."""
        if self._closing:
            return
        self._closing = True
        connection = self._connection
        try:
            if connection.is_open:
                connection.close()
                return
        except (px.AMQPError, OSError) as exc:  # closing what is already gone is not an error
            log.debug("ignored while closing: %r", exc)
        if not connection.is_closing:
            connection.ioloop.stop()

    def _mapped(self, error: BaseException) -> BrokerError:
        try:
            return map_error(error, self.broker)
        except TypeError:  # not a pika or socket error
            return BrokerUnavailable(f"RabbitMQ at {self.broker}: the connection failed ({type(error).__name__})")


class ConsumingChannel(ConfirmChannel):
    """A ``ConfirmChannel`` consuming ``queues``: deliveries settled on confirms, stopped as the module says.

    A subclass defines ``_deliveries(queue)``, the callback of a queue's deliveries, which tells ``_tracker`` what
    became of each delivery and calls ``_begin_stop(StopReason.MAX_MESSAGES)`` at its ``_max_messages``, and
    ``_refused(channel, delivery_tag)``, what a delivery whose republication was refused becomes."""

    def __init__(self, url: str, connection_name: str, queues: Iterable[str], *, prefetch: int, stop_timeout: float):
        self.queues = tuple(queues)
        self.prefetch = prefetch
        self.stop_timeout = stop_timeout
        self._idle_timeout: float | None = None
        self._max_messages: int | None = None
        self._deadline: float | None = None
        super().__init__(url, connection_name)

    def _reset(self) -> None:
        super()._reset()
        self._consumer_tags: set[str] = set()
        self._stop_requested = False
        self._stopping = False
        self._reason: StopReason | None = None
        self._last_activity = time.monotonic()

    def request_stop(self, *, wake: bool = True) -> None:
        """Stop gracefully; safe from any thread. From a signal handler pass ``wake=False``: only a flag is set
        (waking the loop takes a lock), and the loop sees it within ``TICK_SECONDS``."""
        self._stop_requested = True
        connection = self._connection
        if wake and connection is not None:
            with contextlib.suppress(RuntimeError, OSError, AttributeError):  # a closed loop: the flag is enough
                connection.ioloop.add_callback_threadsafe(functools.partial(self._begin_stop, StopReason.REQUESTED))

    def _consume(self, idle_timeout: float | None, max_messages: int | None, deadline: float | None) -> StopReason:
        """Connect, consume until a stop condition, close; raises the platform error that stopped it."""
        self._idle_timeout, self._max_messages, self._deadline = idle_timeout, max_messages, deadline
        self._run_loop()
        if self._error is not None:
            raise self._error
        return self._reason or StopReason.REQUESTED

    def _pending(self) -> bool:
        """Deliveries taken but not yet published (a subclass that holds some says so)."""
        return False

    # -- the channel --------------------------------------------------------------------------------------

    def _on_confirm_ok(self, _frame: Any) -> None:
        self._channel.add_on_cancel_callback(self._on_cancelled)
        self._channel.basic_qos(prefetch_count=self.prefetch, callback=self._on_qos_ok)

    def _on_qos_ok(self, _frame: Any) -> None:
        if self._stop_requested:
            self._begin_stop(StopReason.REQUESTED)
            return
        for queue in self.queues:
            self._consumer_tags.add(self._channel.basic_consume(queue, self._deliveries(queue)))
        self._last_activity = time.monotonic()
        self._connection.ioloop.call_later(TICK_SECONDS, self._tick)

    def _deliveries(self, queue: str) -> Callable[[Any, Any, Any, bytes], None]:
        """pika's ``on_message_callback`` for ``queue``: ``(channel, method, properties, body)``."""
        raise NotImplementedError

    def _on_channel_closed(self, channel: Any, reason: BaseException) -> None:
        self._consumer_tags.clear()
        super()._on_channel_closed(channel, reason)

    def _on_cancelled(self, frame: Any) -> None:
        self._consumer_tags.discard(getattr(frame.method, "consumer_tag", ""))
        self._fail(
            QueueMissing(
                f"RabbitMQ at {self.broker} cancelled the consumer of {', '.join(self.queues)}: was it deleted?"
            )
        )

    # -- confirms and acknowledgements ---------------------------------------------------------------------

    def _on_confirm(self, frame: Any) -> None:
        method = frame.method
        ok = isinstance(method, Basic.Ack)
        self._tracker.answered(method.delivery_tag, multiple=method.multiple, ok=ok)
        if not ok:
            self._nacked()
        self._settle()
        self._finish_if_done()

    def _nacked(self) -> None:
        """The broker nacked a publish (its delivery is settled by ``_refused`` when its turn comes)."""

    def _settle(self) -> None:
        """Send the acknowledgements the tracker allows now, in order."""
        channel = self._channel
        if channel is None or not channel.is_open:
            return
        frames = self._tracker.settle()
        for frame in frames:
            if frame.kind is SettleKind.ACK:
                channel.basic_ack(frame.delivery_tag, multiple=True)
            else:
                self._refused(channel, frame.delivery_tag)
        self._settled(frames)

    def _refused(self, channel: Any, delivery_tag: int) -> None:
        raise NotImplementedError

    def _settled(self, frames: list[Settle]) -> None:
        """After each ``_settle`` on an open channel (a subclass counts here)."""

    # -- stopping ----------------------------------------------------------------------------------------

    def _tick(self) -> None:
        if self._closing:
            return
        now = time.monotonic()
        if self._stop_requested:
            self._begin_stop(StopReason.REQUESTED)
        elif self._deadline is not None and now >= self._deadline:
            self._begin_stop(StopReason.MAX_SECONDS)
        elif (
            self._idle_timeout is not None
            and self._tracker.unsettled == 0
            and not self._pending()
            and now - self._last_activity >= self._idle_timeout
        ):
            self._begin_stop(StopReason.IDLE)
        if not self._stopping:
            self._connection.ioloop.call_later(TICK_SECONDS, self._tick)

    def _fail(self, error: BaseException) -> None:
        super()._fail(error)
        self._begin_stop(StopReason.ERROR)

    def _begin_stop(self, reason: StopReason) -> None:
        if self._stopping or self._connection is None:
            return
        self._stopping = True
        self._reason = reason
        channel = self._channel
        if channel is not None and channel.is_open:
            for tag in list(self._consumer_tags):
                channel.basic_cancel(tag, callback=functools.partial(self._on_cancel_ok, tag))
        else:
            self._consumer_tags.clear()
        self._connection.ioloop.call_later(self.stop_timeout, self._on_stop_timeout)
        self._finish_if_done()

    def _on_cancel_ok(self, tag: str, _frame: Any) -> None:
        self._consumer_tags.discard(tag)
        self._finish_if_done()

    def _finish_if_done(self) -> None:
        if not self._stopping or self._closing or self._consumer_tags:
            return
        if (self._tracker.in_flight or self._pending()) and self._channel is not None and self._channel.is_open:
            return  # what was consumed before the stop is published and confirmed first
        self._close()

    def _on_stop_timeout(self) -> None:
        if not self._closing:
            log.warning(
                "%d publishes for deliveries from %s still unconfirmed after %.0f s; closing: those deliveries go "
                "back to the queue and will be delivered again (same messageId)",
                self._tracker.in_flight,
                ", ".join(self.queues),
                self.stop_timeout,
            )
            self._close()

    def _close(self) -> None:
        if not self._closing:
            self._settle()  # the last acknowledgements go out before the connection closes the channel
        super()._close()

"""Consuming behind the guard: plain callbacks over pika, invalid messages dead-lettered with their reason.

::

    consumer = GuardedConsumer(bundle, url, queues=["accounting-service.billing.invoice-issued.v2"])
    consumer.on("billing.invoice-issued.v2", book_invoice, decode=Invoice.from_envelope)   # the type registry
    consumer.on(InvoiceIssuedV2, book_invoice)   # or a generated type (contractctl export models): no decode
    consumer.run()                      # until request_stop(), SIGTERM handling is the service's

``Dispatcher`` is the part without a broker (the test kit drives it alone): the guard (``client.guard``), then
the handler registered for the type, which gets a ``Message`` (the envelope in the version it registered,
migrated on read when another major arrived; ``body`` is ``decode(envelope)``, the service's own type). What
becomes of each delivery:

=============================================  ===========================================================
outcome                                        the delivery
=============================================  ===========================================================
the handler returned                           acknowledged
the guard rejected it (the contract)           dead-lettered with ``x-reject-origin: contract``
the handler raised ``Reject(reason)``          dead-lettered with ``x-reject-origin: handler``,
                                               ``x-reject-reason: BUSINESS_REJECTED``
``Reject(reason, requeue=True)``               ``basic.nack(requeue=True)``: the handler asks for another try
the handler raised anything else               requeued once (``basic.nack``); raised again on the
                                               redelivery: dead-lettered as ``HANDLER_FAILED``
=============================================  ===========================================================

Nothing the guard rejected is ever requeued, so a poison message (not JSON, not UTF-8, huge, hostile) costs one
delivery and never stops the loop.

**Dead letters.** RabbitMQ's own dead-lettering (``basic.reject(requeue=False)``) records only ``x-death``
(queue, reason ``rejected``, time, count): AMQP 0-9-1 gives a consumer no way to add a header to a message it
rejects. So the consumer publishes a copy to the queue's dead-letter exchange itself, with every original
property and the ``x-reject-*`` headers below, on the same channel with publisher confirms, and acknowledges
the delivery only once the broker has confirmed the copy (``amqp.confirms.ConfirmTracker``): a crash in
between leaves the delivery in the queue, to be judged again. If the broker refuses the copy (no dead-letter
route), the delivery is rejected without requeue: RabbitMQ then applies the queue's own ``x-dead-letter-*``
arguments and ``x-death``. The route is the platform's topology (docs/design.md#topology-names): exchange
``<transport.exchange>.dlx``, routing key ``<queue>.dlq`` for a queue the bundle's contracts list as a
consumer queue; ``dead_letters=`` sets it per queue (``None``: reject and let the broker dead-letter it).

=====================  ===================================================================================
header                 value
=====================  ===================================================================================
``x-reject-origin``    ``contract`` (the guard) or ``handler`` (the service's own refusal)
``x-reject-reason``    ``RejectReason``: MALFORMED, UNKNOWN_TYPE, ENVELOPE_INVALID, PAYLOAD_INVALID,
                       HEADER_MISMATCH, OVERSIZE, NOT_MIGRATABLE, UNCHECKABLE, BUSINESS_REJECTED, HANDLER_FAILED
``x-reject-pointer``   JSON pointer of the problem (into the envelope, or ``/properties``, ``/body``)
``x-reject-keyword``   the schema keyword that failed (``pattern``, ``required``...), else empty
``x-reject-detail``    one sentence, never a payload value (a handler's ``Reject`` reason, clipped)
``x-reject-contract``  ``<messageType>@<bundle version>`` it was judged against
``x-reject-bundle``    the bundle's checksum
``x-reject-service``   the consuming service; ``x-reject-queue`` the queue it came from
=====================  ===================================================================================

Acknowledgements go out in runs (``basic.ack(multiple=True)``), once per turn of the loop.
"""

from __future__ import annotations

import copy
import functools
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import pika
import pika.exceptions as px

from contract_platform.amqp.asynchronous import ConsumingChannel, StopReason
from contract_platform.amqp.confirms import Settle
from contract_platform.amqp.publisher import plain_properties
from contract_platform.amqp.topology import dlq_name, dlx_name
from contract_platform.client.bundle import Bundle
from contract_platform.client.guard import Guard, Inspected, Rejection, RejectReason, Unchecked
from contract_platform.client.runtime import RuntimeCounters
from contract_platform.client.tolerance import Tolerance
from contract_platform.client.typed import registration_of
from contract_platform.errors import UsageError, clipped, printable

__all__ = [
    "ConsumerStats",
    "DeadLetter",
    "Dispatcher",
    "GuardedConsumer",
    "Handled",
    "Message",
    "Reject",
    "Requeue",
    "StopReason",
    "reject_headers",
]

log = logging.getLogger(__name__)

T = TypeVar("T")
_DETAIL_MOST = 300


class Reject(Exception):  # the name a handler raises: it reads as what it does
    """Raised by a handler: the message is valid, but the service will not take it (a business rejection).

    ``requeue=False`` (default): dead-lettered with ``x-reject-origin: handler`` and the reason; ``True``: given
    back to the queue for another try. Kept apart from the guard's rejections, and never counted against the
    contract."""

    def __init__(self, reason: str, *, requeue: bool = False) -> None:
        self.reason = reason
        self.requeue = requeue
        super().__init__(reason)


@dataclass(slots=True)
class Message(Generic[T]):
    """What a handler gets: the envelope in the version it registered for, and the service's own type of it."""

    envelope: dict[str, Any]
    body: T  # decode(envelope), or the envelope itself without a decode
    message_type: str  # the version the handler registered for
    received_type: str  # the version that arrived
    migrated: bool  # read through migration.yaml
    tolerated: tuple[Tolerance, ...]  # unknown enum values and added fields the guard let through (client.tolerance)
    properties: Any  # the delivery's pika BasicProperties
    redelivered: bool = False
    queue: str | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        metadata: dict[str, Any] = self.envelope["metadata"]
        return metadata

    @property
    def payload(self) -> dict[str, Any]:
        payload: dict[str, Any] = self.envelope["payload"]
        return payload

    @property
    def message_id(self) -> str:
        return str(self.metadata["messageId"])


@dataclass(frozen=True)
class Handled:
    message_type: str


@dataclass(frozen=True)
class DeadLetter:
    """Goes to the dead-letter exchange, with ``rejection`` in its headers."""

    rejection: Rejection


@dataclass(frozen=True)
class Requeue:
    """Back to the queue (the handler asked, or failed once)."""

    why: str


Outcome = Handled | DeadLetter | Requeue
_HANDLED: dict[str, Handled] = {}


def _handled(message_type: str) -> Handled:
    """One ``Handled`` per type, made once: the outcome of almost every delivery."""
    found = _HANDLED.get(message_type)
    if found is None:
        found = _HANDLED[message_type] = Handled(message_type)
    return found


@dataclass(frozen=True)
class _Registration:
    handler: Callable[[Message[Any]], None]
    decode: Callable[[dict[str, Any]], Any] | None


class Dispatcher:
    """The guard plus the service's handlers, by message type: ``dispatch`` is one delivery, no broker."""

    def __init__(self, bundle: Bundle, *, service: str | None = None, counters: RuntimeCounters | None = None) -> None:
        self.bundle = bundle
        self.service = service or bundle.service
        self.counters = (
            counters if counters is not None else RuntimeCounters(bundle, service=self.service, side="consume")
        )
        self._handlers: dict[str, _Registration] = {}
        self._unchecked: dict[str, Callable[[Unchecked, Any], None]] = {}
        self._guard: Guard | None = None

    def on(
        self,
        message_type: str | type,
        handler: Callable[[Message[Any]], None],
        *,
        decode: Callable[[dict[str, Any]], Any] | None = None,
    ) -> Dispatcher:
        """``handler`` reads ``message_type`` (a version of the bundle); other majors of it are read through
        migration.yaml where it goes that way. ``decode`` maps the valid envelope to the service's own type;
        a generated type (``contractctl export models``) in place of the name decodes itself (``client.typed``)."""
        message_type, decode = registration_of(message_type, decode)
        if self.bundle.contract(message_type) is None:
            raise UsageError(
                f"{message_type}: not in the bundle {self.bundle.where} (it holds {', '.join(self.bundle.message_types)})"
            )
        self._handlers[message_type] = _Registration(handler, decode)
        self._guard = None
        return self

    def on_unchecked(self, message_type: str, handler: Callable[[Unchecked, Any], None]) -> Dispatcher:
        """Read ``message_type``, a type outside the bundle, without any contract: ``handler(unchecked, properties)``
        gets the parsed body (None when it is not JSON). Everything else outside the bundle is UNKNOWN_TYPE."""
        self._unchecked[message_type] = handler
        self._guard = None
        return self

    @property
    def guard(self) -> Guard:
        if self._guard is None:
            self._guard = Guard(self.bundle, reads=set(self._handlers), unchecked=set(self._unchecked))
        return self._guard

    @property
    def reads(self) -> list[str]:
        return sorted(self._handlers)

    @property
    def unchecked(self) -> list[str]:
        return sorted(self._unchecked)

    def dispatch(self, properties: Any, body: bytes, *, redelivered: bool = False, queue: str | None = None) -> Outcome:
        """The guard's verdict on one delivery, then its handler: what should become of the delivery."""
        outcome = self.guard.inspect(properties, body)
        counters = self.counters
        if isinstance(outcome, Rejection):
            counters.rejected(outcome.message_type, outcome.reason)
            return DeadLetter(outcome)
        if isinstance(outcome, Unchecked):
            return self._unchecked_call(outcome, properties, redelivered)
        counters.valid(outcome.received_type, tolerated=bool(outcome.tolerated))
        if outcome.migrated:
            counters.migrated(outcome.received_type, outcome.message_type)
        registration = self._handlers[outcome.message_type]
        try:
            decoded = registration.decode(outcome.envelope) if registration.decode is not None else outcome.envelope
            registration.handler(
                Message(
                    outcome.envelope,
                    decoded,
                    outcome.message_type,
                    outcome.received_type,
                    outcome.migrated,
                    outcome.tolerated,
                    properties,
                    redelivered,
                    queue,
                )
            )
        except Reject as exc:
            return self._business(exc, outcome, redelivered)
        except Exception as exc:  # the handler's bug or a transient fault: once more, then the dead letters
            return self._failed(exc, outcome.received_type, redelivered)
        return _handled(outcome.message_type)

    def _unchecked_call(self, outcome: Unchecked, properties: Any, redelivered: bool) -> Outcome:
        try:
            self._unchecked[outcome.message_type](outcome, properties)
        except Reject as exc:
            if exc.requeue:
                return Requeue("the handler asked for another try")
            return DeadLetter(self._handler_rejection(RejectReason.BUSINESS_REJECTED, exc.reason, outcome.message_type))
        except Exception as exc:
            return self._failed(exc, outcome.message_type, redelivered)
        return Handled(outcome.message_type)

    def _business(self, exc: Reject, outcome: Inspected, redelivered: bool) -> Outcome:
        if exc.requeue:
            return Requeue("the handler asked for another try")
        self.counters.business_rejected(outcome.received_type)
        return DeadLetter(self._handler_rejection(RejectReason.BUSINESS_REJECTED, exc.reason, outcome.received_type))

    def _failed(self, exc: Exception, message_type: str, redelivered: bool) -> Outcome:
        name = type(exc).__name__  # never the exception's text: it may quote the message
        log.warning("the handler of %s raised %s%s", message_type, name, " again on redelivery" if redelivered else "")
        if not redelivered:
            return Requeue(f"the handler raised {name}")
        detail = f"the handler raised {name} on the first delivery and again on its redelivery"
        return DeadLetter(self._handler_rejection(RejectReason.HANDLER_FAILED, detail, message_type))

    def _handler_rejection(self, reason: RejectReason, detail: str, message_type: str) -> Rejection:
        contract = self.bundle.contract(message_type)
        text = clipped(printable(detail), _DETAIL_MOST)
        return Rejection(reason, "", "", text, message_type, contract.version if contract else None)


def reject_headers(
    properties: Any, rejection: Rejection, *, bundle: Bundle, service: str | None, queue: str
) -> dict[str, Any]:
    """The original headers plus the ``x-reject-*`` headers (module docstring)."""
    original = getattr(properties, "headers", None)
    headers = dict(original) if isinstance(original, Mapping) else {}
    headers.update(
        {
            "x-reject-origin": rejection.reason.origin,
            "x-reject-reason": str(rejection.reason),
            "x-reject-pointer": clipped(rejection.pointer, 200),
            "x-reject-keyword": rejection.keyword,
            "x-reject-detail": clipped(rejection.detail, _DETAIL_MOST),
            "x-reject-contract": clipped(rejection.contract_label, 200),
            "x-reject-bundle": bundle.checksum,
            "x-reject-service": service or "",
            "x-reject-queue": queue,
        }
    )
    return headers


@dataclass
class ConsumerStats:
    """What one consumer did to its deliveries (the guard's counts per version are ``Dispatcher.counters``)."""

    delivered: int = 0
    handled: int = 0
    dead_lettered: Counter[str] = field(default_factory=Counter)  # reason -> copies confirmed on the DLX
    rejected_to_broker: int = 0  # no dead-letter route, or the copy was refused: basic.reject(requeue=False)
    requeued: int = 0


class GuardedConsumer(ConsumingChannel):
    """One connection and channel consuming ``queues``, every delivery through ``Dispatcher.dispatch``."""

    def __init__(
        self,
        bundle: Bundle,
        url: str,
        *,
        queues: Iterable[str],
        service: str | None = None,
        prefetch: int = 500,
        dead_letters: Mapping[str, tuple[str, str] | None] | None = None,
        counters: RuntimeCounters | None = None,
        connection_name: str | None = None,
        stop_timeout: float = 30.0,
    ) -> None:
        self.bundle = bundle
        self.dispatcher = Dispatcher(bundle, service=service, counters=counters)
        self.service = self.dispatcher.service
        name = connection_name or f"{self.service or 'service'} (contract guard)"
        super().__init__(url, name, queues, prefetch=prefetch, stop_timeout=stop_timeout)
        if not self.queues:
            raise UsageError("a consumer needs at least one queue")
        self.routes = {queue: _route(bundle, queue, dead_letters) for queue in self.queues}
        self.stats = ConsumerStats()

    # -- registration (the type registry) -----------------------------------------------------------------

    def on(
        self,
        message_type: str | type,
        handler: Callable[[Message[Any]], None],
        *,
        decode: Callable[[dict[str, Any]], Any] | None = None,
    ) -> GuardedConsumer:
        self.dispatcher.on(message_type, handler, decode=decode)
        return self

    def on_unchecked(self, message_type: str, handler: Callable[[Unchecked, Any], None]) -> GuardedConsumer:
        self.dispatcher.on_unchecked(message_type, handler)
        return self

    @property
    def counters(self) -> RuntimeCounters:
        return self.dispatcher.counters

    # -- running -----------------------------------------------------------------------------------------

    def run(
        self,
        *,
        idle_timeout: float | None = None,
        max_messages: int | None = None,
        deadline: float | None = None,
    ) -> StopReason:
        """Consume until ``request_stop()``, ``max_messages`` deliveries, ``deadline`` (a ``time.monotonic()``
        value), or ``idle_timeout`` seconds without a delivery; raises the platform error that stopped it."""
        if not self.dispatcher.reads and not self.dispatcher.unchecked:
            raise UsageError("register a handler first: consumer.on(message_type, handler)")
        self.dispatcher.guard  # compiled before the first delivery  # noqa: B018
        self._reset()
        return self._consume(idle_timeout, max_messages, deadline)

    def _reset(self) -> None:
        super()._reset()
        self._settle_scheduled = False

    # -- the hot path ------------------------------------------------------------------------------------

    def _deliveries(self, queue: str) -> Callable[[Any, Any, Any, bytes], None]:
        return functools.partial(self._on_message, queue)

    def _on_message(self, queue: str, channel: Any, method: Any, properties: Any, body: bytes) -> None:
        if self._stopping:
            return  # neither handled nor acknowledged: the broker gives it back when the channel closes
        self._last_activity = time.monotonic()
        stats = self.stats
        stats.delivered += 1
        tag = method.delivery_tag
        outcome = self.dispatcher.dispatch(properties, body, redelivered=bool(method.redelivered), queue=queue)
        if type(outcome) is Handled:
            stats.handled += 1
            self._tracker.done(tag)
        elif isinstance(outcome, DeadLetter):
            self._dead_letter(queue, tag, properties, body, outcome.rejection)
        else:
            channel.basic_nack(tag, multiple=False, requeue=True)
            self._tracker.settled_elsewhere(tag)
            stats.requeued += 1
        if not self._settle_scheduled:
            self._settle_scheduled = True
            self._connection.ioloop.call_later(0, self._settle)
        if self._max_messages is not None and stats.delivered >= self._max_messages:
            self._begin_stop(StopReason.MAX_MESSAGES)

    def _dead_letter(self, queue: str, tag: int, properties: Any, body: bytes, rejection: Rejection) -> None:
        route = self.routes.get(queue)
        if route is None:
            self._reject_to_broker(tag)
            return
        exchange, routing_key = route
        headers = reject_headers(properties, rejection, bundle=self.bundle, service=self.service, queue=queue)
        copied = copy.copy(properties) if properties is not None else pika.BasicProperties()
        copied.headers = headers
        try:
            self._channel.basic_publish(exchange, routing_key, body, copied, mandatory=True)
        except (px.AMQPError, OSError):
            raise
        except Exception as exc:  # an original header pika cannot encode again: the plain properties only
            log.warning(
                "dead letter of delivery %s: its original headers could not be sent (%s)", tag, type(exc).__name__
            )
            plain = plain_properties(properties)
            plain.headers = reject_headers(None, rejection, bundle=self.bundle, service=self.service, queue=queue)
            self._channel.basic_publish(exchange, routing_key, body, plain, mandatory=True)
        self._sequence += 1
        self._tracker.published(self._sequence, tag, getattr(properties, "message_id", None), str(rejection.reason))

    def _reject_to_broker(self, tag: int) -> None:
        if self._channel is not None and self._channel.is_open:
            self._channel.basic_reject(tag, requeue=False)
        self._tracker.settled_elsewhere(tag)
        self.stats.rejected_to_broker += 1

    def _on_return(self, _channel: Any, method: Any, properties: Any, _body: bytes) -> None:
        self._tracker.returned(getattr(properties, "message_id", None))
        log.warning(
            "a dead letter was returned by %s (%s %s): no queue is bound to %s with %s; the delivery is rejected to "
            "the broker's own dead-lettering instead",
            self.broker,
            method.reply_code,
            method.reply_text,
            method.exchange,
            method.routing_key,
        )

    def _settle(self) -> None:
        self._settle_scheduled = False
        super()._settle()

    def _refused(self, channel: Any, delivery_tag: int) -> None:
        """The dead-letter copy was refused: the broker's own dead-lettering, never a requeue."""
        channel.basic_reject(delivery_tag, requeue=False)
        self.stats.rejected_to_broker += 1

    def _settled(self, _frames: list[Settle]) -> None:
        for label, count in self._tracker.confirmed.items():
            self.stats.dead_lettered[label] += count
        self._tracker.confirmed.clear()


def _route(bundle: Bundle, queue: str, given: Mapping[str, tuple[str, str] | None] | None) -> tuple[str, str] | None:
    """Where a queue's dead letters go: as given, else the platform's topology for a consumer queue of the bundle."""
    if given is not None and queue in given:
        return given[queue]
    for contract in bundle.catalog:
        if any(consumer.queue == queue for consumer in contract.consumers):
            return dlx_name(contract.transport.exchange), dlq_name(queue)
    return None

"""Publishing behind the guard: validate fail-fast, stamp the AMQP properties, confirms in flight by the thousand.

::

    with GuardedPublisher(bundle, url, service="billing-service") as publisher:
        publisher.publish(envelope)                   # a Confirmation: ContractViolation at once if invalid
        publisher.publish(InvoiceIssuedV2(...))       # or an instance of a generated type (client.typed)
        publisher.publish_many(envelopes)             # all checked first, then all in flight, then all confirmed
        publisher.flush()                             # wait for every confirm

``publish`` validates in the caller's thread with the bundle's compiled validators (``Guard.check_outgoing``:
the envelope standard, the contract's payload schema, ``Contract.producers``, ``limits.maxBodyBytes``) and
raises ``ContractViolation`` (reason, JSON pointer, keyword) before anything reaches the broker. A valid
envelope is encoded and given the properties the standard mirrors from it (``envelope.amqp_properties``:
message_id, correlation_id, type, content_type, timestamp, delivery_mode 2, the mirrored headers), then handed
to the publisher's I/O thread, which owns one ``SelectConnection`` channel in confirm mode and keeps up to
``max_in_flight`` publishes unconfirmed (``publish`` blocks while that many are out): one confirm covers many
messages (``basic.ack(multiple)``), never one round trip per message. Each ``publish`` returns a
``Confirmation`` (``done()``, ``result(timeout)``, ``exception()``, as a ``concurrent.futures.Future``): its
``result`` is a ``PublishResult`` once the broker confirmed the message, and raises ``PublishRefused``
(returned unroutable with ``mandatory``, or nacked) or ``BrokerUnavailable``. Confirmations are settled a
confirm frame at a time under one condition variable, so a message costs no lock or event of its own.
Confirms are tracked by ``amqp.confirms.ConfirmTracker`` (publish sequence numbers stand for delivery tags).

The connection is opened on ``start()`` (or ``with``); a lost connection fails what was in flight, and the next
``publish`` opens a new one.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pika
from pika.spec import Basic

from contract_platform.amqp.asynchronous import ConfirmChannel
from contract_platform.amqp.confirms import SettleKind
from contract_platform.amqp.publisher import PublishResult, encode_compact
from contract_platform.client.bundle import Bundle
from contract_platform.client.guard import Guard, RejectReason
from contract_platform.client.runtime import RuntimeCounters
from contract_platform.client.typed import GeneratedEnvelope, envelope_of
from contract_platform.envelope.properties import amqp_properties
from contract_platform.errors import BrokerError, BrokerUnavailable, ContractViolation, PublishRefused

__all__ = ["Confirmation", "GuardedPublisher", "Prepared", "PublishResult", "PublisherStats"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prepared:
    """A checked envelope, ready for the wire."""

    exchange: str
    routing_key: str
    body: bytes
    properties: Any  # pika.BasicProperties
    message_id: str
    message_type: str


@dataclass
class PublisherStats:
    """What the broker was sent and answered; ``confirm_frames`` below ``published`` is confirms in batches."""

    published: int = 0
    confirmed: int = 0
    refused: int = 0
    confirm_frames: int = 0  # basic.ack / basic.nack frames received (one may confirm many messages)


_PENDING, _CONFIRMED, _FAILED = 0, 1, 2


class Confirmation:
    """The broker's answer to one publish, when it comes: ``result(timeout)`` waits for it."""

    __slots__ = ("_error", "_publisher", "_state", "prepared")

    def __init__(self, publisher: GuardedPublisher, prepared: Prepared) -> None:
        self._publisher = publisher
        self.prepared = prepared
        self._state = _PENDING
        self._error: BaseException | None = None

    def done(self) -> bool:
        return self._state != _PENDING

    def result(self, timeout: float | None = None) -> PublishResult:
        """The confirmed publish; raises what refused it, or ``BrokerUnavailable`` after ``timeout`` seconds."""
        self._publisher._wait([self], timeout)
        if self._error is not None:
            raise self._error
        item = self.prepared
        return PublishResult(item.message_id, item.message_type, item.exchange, item.routing_key, len(item.body))

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._publisher._wait([self], timeout)
        return self._error


class GuardedPublisher(ConfirmChannel):
    """Publishes checked envelopes of ``bundle`` through one connection owned by a background I/O thread."""

    def __init__(
        self,
        bundle: Bundle,
        url: str,
        *,
        service: str | None = None,
        max_in_flight: int = 1000,
        counters: RuntimeCounters | None = None,
        connection_name: str | None = None,
        open_timeout: float = 15.0,
    ) -> None:
        self.bundle = bundle
        self.service = service or bundle.service
        self.max_in_flight = max_in_flight
        self.counters = (
            counters if counters is not None else RuntimeCounters(bundle, service=self.service, side="publish")
        )
        self.open_timeout = open_timeout
        self.guard = Guard(bundle, reads=())
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)  # notified once per confirm frame, not per message
        self._in_flight = 0  # handed over and not yet answered (outbox + unconfirmed)
        self._outbox: deque[Confirmation] = deque()
        self._drain_scheduled = False
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self.stats = PublisherStats()
        super().__init__(url, connection_name or f"{self.service or 'service'} (contract guard publisher)")

    # -- public --------------------------------------------------------------------------------------------

    def __enter__(self) -> GuardedPublisher:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> GuardedPublisher:
        """Open the connection and its confirm-mode channel (``BrokerUnavailable``/``BrokerError`` if it cannot)."""
        if self._thread is not None and self._thread.is_alive() and self._error is None:
            return self
        self._join()
        self._ready.clear()
        self._reset()
        self._thread = threading.Thread(target=self._run, name="contract-guard-publisher", daemon=True)
        self._thread.start()
        if not self._ready.wait(self.open_timeout):
            self._error = BrokerUnavailable(
                f"RabbitMQ at {self.broker}: no channel after {self.open_timeout:.0f} s; retry later"
            )
        if self._error is not None:
            failure = self._error
            self._stop_loop()
            raise failure
        return self

    def check(self, envelope: Mapping[str, Any] | GeneratedEnvelope) -> Prepared:
        """Validate and encode ``envelope`` (a mapping, or an instance of a generated type: ``client.typed``);
        ``ContractViolation`` says what is wrong (nothing is sent)."""
        envelope = envelope_of(envelope)
        try:
            contract = self.guard.check_outgoing(envelope, producer=self.service)
            body = encode_compact(envelope)
            if len(body) > contract.max_body_bytes:
                raise ContractViolation(
                    f"the envelope is {len(body)} bytes, over the {contract.max_body_bytes} bytes {contract.message_type} "
                    "allows (limits.maxBodyBytes); nothing was published",
                    reason=RejectReason.OVERSIZE,
                    pointer="",
                    keyword="maxBodyBytes",
                    message_type=contract.message_type,
                )
        except ContractViolation as exc:
            self.counters.rejected(exc.message_type, exc.reason)
            raise
        self.counters.valid(contract.message_type)
        properties = pika.BasicProperties(**amqp_properties(envelope))
        transport = contract.transport
        return Prepared(
            transport.exchange,
            transport.routing_key,
            body,
            properties,
            str(properties.message_id),
            contract.message_type,
        )

    def publish(self, envelope: Mapping[str, Any] | GeneratedEnvelope) -> Confirmation:
        """Check ``envelope`` (raises ``ContractViolation`` now) and put it in flight; the broker's answer follows."""
        return self.send(self.check(envelope))

    def send(self, prepared: Prepared) -> Confirmation:
        """Put an envelope ``check`` prepared in flight (blocks while ``max_in_flight`` are unconfirmed)."""
        if self._error is not None or self._thread is None:
            self.start()
        confirmation = Confirmation(self, prepared)
        with self._settled:
            while self._in_flight >= self.max_in_flight and self._error is None:
                self._settled.wait()
            if self._error is not None:  # the connection went while this waited for room
                confirmation._error, confirmation._state = self._error, _FAILED
                return confirmation
            self._in_flight += 1
            self._outbox.append(confirmation)
            wake = not self._drain_scheduled
            self._drain_scheduled = True
        if wake:
            self._wake(self._drain)
        return confirmation

    def publish_many(
        self, envelopes: Iterable[Mapping[str, Any] | GeneratedEnvelope], *, timeout: float | None = None
    ) -> list[PublishResult]:
        """Check every envelope first (one invalid: nothing is sent), publish them all, wait for every confirm.

        ``PublishRefused`` when the broker refused any: how many, the first reason, and how many were confirmed."""
        prepared = [self.check(envelope) for envelope in envelopes]
        confirmations = [self.send(item) for item in prepared]
        self._wait(confirmations, timeout)
        refused = [c._error for c in confirmations if c._error is not None]
        if refused:
            first = refused[0]
            confirmed = len(confirmations) - len(refused)
            if isinstance(first, PublishRefused):
                raise PublishRefused(
                    f"{len(refused)} of {len(confirmations)} refused ({confirmed} confirmed); first: {first}"
                )
            raise first
        return [c.result() for c in confirmations]

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every message handed over so far is confirmed or refused."""
        with self._settled:
            if not self._settled.wait_for(lambda: self._in_flight == 0, timeout):
                raise BrokerUnavailable(
                    f"RabbitMQ at {self.broker}: {self._in_flight} publishes unconfirmed after {timeout} s"
                )

    def _wait(self, confirmations: list[Confirmation], timeout: float | None) -> None:
        """Until every one of ``confirmations`` is answered (``BrokerUnavailable`` after ``timeout`` seconds)."""
        position = 0

        def answered() -> bool:
            nonlocal position
            while position < len(confirmations) and confirmations[position]._state != _PENDING:
                position += 1
            return position == len(confirmations)

        with self._settled:
            if not self._settled.wait_for(answered, timeout):
                raise BrokerUnavailable(
                    f"RabbitMQ at {self.broker}: {len(confirmations) - position} of {len(confirmations)} publishes "
                    f"unconfirmed after {timeout} s"
                )

    def close(self, timeout: float = 30.0) -> None:
        """Wait for outstanding confirms (up to ``timeout``), then close the connection."""
        if self._thread is None:
            return
        with contextlib.suppress(BrokerError):
            self.flush(timeout)
        self._stop_loop()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    # -- the I/O thread --------------------------------------------------------------------------------------

    def _reset(self) -> None:
        super()._reset()  # _error: why the current connection cannot publish
        self._unconfirmed: dict[int, Confirmation] = {}
        self._returned: dict[str | None, str] = {}

    def _run(self) -> None:
        try:
            self._run_loop()
        except Exception as exc:  # the loop itself failed: whoever waits learns why
            self._fail(self._mapped(exc))
        finally:
            self._ready.set()

    def _wake(self, callback: Any) -> None:
        connection = self._connection
        try:
            connection.ioloop.add_callback_threadsafe(callback)
        except (AttributeError, RuntimeError, OSError) as exc:  # the loop is gone: fail what waits
            self._fail(BrokerUnavailable(f"RabbitMQ at {self.broker}: the connection is gone ({type(exc).__name__})"))

    def _on_confirm_ok(self, _frame: Any) -> None:
        self._ready.set()

    def _not_found(self, reply_text: str) -> BrokerError:
        return PublishRefused(
            f"RabbitMQ at {self.broker} closed the publisher's channel: {reply_text}; provision the topology first "
            "(what was in flight is not confirmed)"
        )

    def _drain(self) -> None:
        with self._lock:
            self._drain_scheduled = False
            batch = list(self._outbox)
            self._outbox.clear()
        channel = self._channel
        if channel is None or not channel.is_open:
            failure = self._error or BrokerUnavailable(f"RabbitMQ at {self.broker}: the channel is closed")
            self._answer([(sent, failure) for sent in batch])
            return
        for sent in batch:
            item = sent.prepared
            channel.basic_publish(item.exchange, item.routing_key, item.body, item.properties, mandatory=True)
            self._sequence += 1
            self.stats.published += 1
            self._tracker.published(self._sequence, self._sequence, item.message_id, item.message_type)
            self._unconfirmed[self._sequence] = sent

    def _on_confirm(self, frame: Any) -> None:
        method = frame.method
        self.stats.confirm_frames += 1
        self._tracker.answered(method.delivery_tag, multiple=method.multiple, ok=isinstance(method, Basic.Ack))
        self._tracker.confirmed.clear()  # counted per confirmation here, not per label
        done_up_to = self._tracker.settled_up_to
        answers: list[tuple[Confirmation, BaseException | None]] = []
        for settle in self._tracker.settle():
            if settle.kind is SettleKind.ACK:
                for sequence in range(done_up_to + 1, settle.delivery_tag + 1):
                    sent = self._unconfirmed.pop(sequence, None)
                    if sent is not None:
                        answers.append((sent, None))
            else:  # a refused publish is settled alone, right after the run before it
                sent = self._unconfirmed.pop(settle.delivery_tag, None)
                if sent is not None:
                    answers.append((sent, self._refusal(sent.prepared)))
            done_up_to = settle.delivery_tag
        if answers:
            self._answer(answers)

    def _on_return(self, _channel: Any, method: Any, properties: Any, _body: bytes) -> None:
        message_id = getattr(properties, "message_id", None)
        self._tracker.returned(message_id)
        self._returned[message_id] = (
            f"no queue is bound to {method.exchange} with {method.routing_key} ({method.reply_code} {method.reply_text}): "
            "provision the topology first"
        )

    def _refusal(self, item: Prepared) -> PublishRefused:
        why = self._returned.pop(item.message_id, None)
        if why is not None:
            return PublishRefused(f"message {item.message_id} was returned by {self.broker}, not delivered: {why}")
        return PublishRefused(
            f"{self.broker} nacked message {item.message_id} to {item.exchange} with {item.routing_key}: it was not "
            "accepted (a queue may be full or unavailable); publish it again"
        )

    def _answer(self, answers: list[tuple[Confirmation, BaseException | None]]) -> None:
        """Settle these confirmations (None: confirmed) and wake whoever waits, once for all of them."""
        with self._settled:
            for confirmation, error in answers:
                if confirmation._state != _PENDING:
                    continue
                if error is None:
                    confirmation._state = _CONFIRMED
                    self.stats.confirmed += 1
                else:
                    confirmation._error, confirmation._state = error, _FAILED
                    self.stats.refused += 1
                self._in_flight -= 1
            self._settled.notify_all()

    def _fail(self, error: BaseException) -> None:
        """The connection or channel is gone: every message not confirmed fails with the first error."""
        super()._fail(error)
        failure = self._error or error
        with self._lock:
            waiting = list(self._outbox)
            self._outbox.clear()
            self._drain_scheduled = False
        unconfirmed = list(self._unconfirmed.values())
        self._unconfirmed.clear()
        self._answer([(sent, failure) for sent in unconfirmed + waiting])

    def _stop_loop(self) -> None:
        connection = self._connection
        if connection is not None:
            with contextlib.suppress(AttributeError, RuntimeError, OSError):
                connection.ioloop.add_callback_threadsafe(self._close)
        self._join()

    def _join(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(30.0)
        self._connection = None

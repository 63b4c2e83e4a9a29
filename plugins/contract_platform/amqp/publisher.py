"""Publishing envelopes: validate, then publish with confirms and ``mandatory`` to the contract's exchange.

Nothing reaches the broker unless the whole envelope is valid against the envelope standard and
its contract. A message the broker cannot route, or nacks, raises ``PublishRefused``; it is never
dropped silently.

Throughput: pika's BlockingConnection waits for each confirm inside ``basic_publish``, so
``publish_many`` costs one round trip per message. Batched confirms need the asynchronous
connection (planned for the bridge).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import pika
import pika.exceptions as px

from contract_platform.amqp.connection import broker_errors, close_quietly, describe_broker, open_connection
from contract_platform.amqp.types import BrokerConnection
from contract_platform.catalog.model import Contract
from contract_platform.envelope import EnvelopeValidator, amqp_properties
from contract_platform.errors import EnvelopeError, PublishRefused
from contract_platform.settings import redact_url

__all__ = ["PublishResult", "Publisher", "basic_properties", "encode_body", "encode_compact", "plain_properties"]

log = logging.getLogger(__name__)

NOT_FOUND = 404


@dataclass(frozen=True)
class PublishResult:
    """One message the broker confirmed."""

    message_id: str
    message_type: str
    exchange: str
    routing_key: str
    body_bytes: int


@dataclass(frozen=True)
class _Outgoing:
    contract: Contract
    message_id: str
    body: bytes
    properties: Any


def basic_properties(envelope: Mapping[str, Any]) -> Any:
    """``pika.BasicProperties`` mirrored from a valid envelope (docs/design.md#amqp-properties)."""
    return pika.BasicProperties(**amqp_properties(envelope))


def encode_body(envelope: Mapping[str, Any]) -> bytes:
    """Compact JSON, UTF-8 (non-ASCII characters are kept as they are, not escaped)."""
    return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


_PLAIN_PROPERTIES = ("content_type", "content_encoding", "delivery_mode", "correlation_id", "message_id", "type")


def plain_properties(properties: Any) -> Any:
    """A delivery's plain properties as new ``pika.BasicProperties``, without headers or anything pika might fail
    to encode again: what a copy of a message that cannot keep its original headers is sent with."""
    kept: dict[str, Any] = {
        name: value for name in _PLAIN_PROPERTIES if isinstance(value := getattr(properties, name, None), str | int)
    }
    return pika.BasicProperties(**kept)


def encode_compact(envelope: Mapping[str, Any]) -> bytes:
    """``encode_body``'s bytes, faster: both write compact UTF-8 JSON with keys in order and non-ASCII kept.

    Only a float may be spelled differently (orjson ``1e-7``, json ``1e-07``), with the same value.
    """
    try:
        return orjson.dumps(envelope)
    except (orjson.JSONEncodeError, TypeError):  # e.g. an integer past 64 bits: json can write it
        return encode_body(envelope)


class Publisher:
    """Publishes envelopes through one connection (given, or opened from a URL on first use).

    A publisher that opened its own connection also closes it (``close()`` or ``with``), and opens a
    new one on the next publish after the connection was lost.
    """

    def __init__(self, connection_or_url: BrokerConnection | str, validator: EnvelopeValidator) -> None:
        self.validator = validator
        self._url = connection_or_url if isinstance(connection_or_url, str) else None
        self._connection: BrokerConnection | None = None if isinstance(connection_or_url, str) else connection_or_url
        self._channel: Any = None

    def __enter__(self) -> Publisher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the channel, and the connection if this publisher opened it."""
        if self._channel is not None and self._channel.is_open:
            try:
                self._channel.close()
            except (px.AMQPError, OSError) as exc:  # closing what is already gone is not an error
                log.debug("ignored while closing a channel: %r", exc)
        self._channel = None
        if self._url is not None:
            close_quietly(self._connection)
            self._connection = None

    def publish(self, envelope: Mapping[str, Any]) -> PublishResult:
        """Validate ``envelope`` and publish it; returns once the broker has confirmed it."""
        return self._send(self._prepare(envelope))

    def publish_many(self, envelopes: Iterable[Mapping[str, Any]]) -> list[PublishResult]:
        """Validate every envelope first (one invalid: nothing is sent), then publish in order.

        If the broker refuses one, ``PublishRefused`` says how many before it were confirmed.
        """
        outgoing = [self._prepare(envelope) for envelope in envelopes]
        results: list[PublishResult] = []
        for message in outgoing:
            try:
                results.append(self._send(message))
            except PublishRefused as exc:
                raise PublishRefused(f"{exc} ({len(results)} of {len(outgoing)} confirmed before it)") from exc
        return results

    def _prepare(self, envelope: Mapping[str, Any]) -> _Outgoing:
        contract, issues = self.validator.issues(envelope)
        message_id = _message_id(envelope)
        shown = repr(message_id) if message_id is not None else "(no messageId)"
        if contract is None or issues:
            first = issues[0] if issues else None
            head = f"{first.pointer or '/'}: {first.message}" if first else "no contract"
            more = f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""
            raise EnvelopeError(
                f"envelope {shown} is not valid, nothing was published: {head}{more}",
                [(issue.pointer, issue.message) for issue in issues],
            )
        body = encode_body(envelope)
        if len(body) > contract.max_body_bytes:
            raise EnvelopeError(
                f"envelope {shown} is {len(body)} bytes, over the {contract.max_body_bytes} bytes "
                f"{contract.message_type} allows (maxBodyBytes); nothing was published",
                [("", "OVERSIZE")],
            )
        return _Outgoing(contract, str(message_id), body, basic_properties(envelope))

    def _send(self, message: _Outgoing) -> PublishResult:
        exchange, routing_key = message.contract.transport.exchange, message.contract.transport.routing_key
        channel = self._open_channel()
        broker = self._broker()
        with broker_errors(broker):
            try:
                channel.basic_publish(exchange, routing_key, message.body, message.properties, mandatory=True)
            except px.UnroutableError as exc:
                raise PublishRefused(
                    f"no queue is bound to {exchange} with {routing_key}: provision the topology first "
                    f"(message {message.message_id} was returned by {broker}, not delivered)"
                ) from exc
            except px.NackError as exc:
                raise PublishRefused(
                    f"{broker} nacked message {message.message_id} to {exchange} with {routing_key}: "
                    "it was not accepted; check the broker's logs and publish it again"
                ) from exc
            except px.ChannelClosedByBroker as exc:
                if exc.reply_code != NOT_FOUND:
                    raise
                raise PublishRefused(
                    f"exchange {exchange} does not exist on {broker}: provision the topology first "
                    f"(message {message.message_id} was not published)"
                ) from exc
        return PublishResult(
            message.message_id, message.contract.message_type, exchange, routing_key, len(message.body)
        )

    def _open_channel(self) -> Any:
        if self._connection is None or (self._url is not None and not self._connection.is_open):
            assert self._url is not None
            self._connection = open_connection(self._url)
            self._channel = None
        if self._channel is None or not self._channel.is_open:
            with broker_errors(self._broker()):
                self._channel = self._connection.channel()
                self._channel.confirm_delivery()
        return self._channel

    def _broker(self) -> str:
        if self._connection is not None:
            return describe_broker(self._connection)
        return redact_url(self._url or "RabbitMQ")


def _message_id(envelope: Any) -> object:
    metadata = envelope.get("metadata") if isinstance(envelope, Mapping) else None
    return metadata.get("messageId") if isinstance(metadata, Mapping) else None

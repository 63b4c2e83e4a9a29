"""RabbitMQ's event exchange, read defensively: one broker event in, one ``BrokerEvent`` (or nothing) out.

The ``rabbitmq_event_exchange`` plugin publishes every broker event to ``amq.rabbitmq.event`` (an internal
topic exchange in the default virtual host, carrying every vhost's events): the routing key is the event
(``consumer.created``), the headers are its fields and the body is empty. Erlang terms come as text: a peer
host ``{127,0,0,1}``, client properties as ``{<<"connection_name">>,longstr,<<"nightly-ledger-batch">>}``.

Any client chooses its connection name, consumer tags and queue names, and each is kept as the broker gives
it, since the audit names a reader by them: NUL, control and bidirectional characters as they are, bytes
that are not UTF-8 (invalid, overlong) through ``surrogateescape``, so the stored text encodes back to the
very bytes (the store escapes what it cannot hold, ``store.sql.hold_text``; output shows them through
``errors.printable``). Text is bounded all the same, and a cut says so: names and tags are AMQP short
strings (255 bytes, never cut), a connection name is kept whole up to ``MAX_NAME`` characters. A header of
an unexpected type is simply absent.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from contract_platform.amqp.management import EVENT_EXCHANGE
from contract_platform.evidence.records import BrokerEvent

__all__ = ["EVENT_EXCHANGE", "MAX_NAME", "ROUTING_KEYS", "parse_event", "text_value"]

# What the recorder binds: consumers (reader sessions), channels and connections (who a consumer is),
# queues and bindings (a queue that appears and disappears inside a span is still known).
ROUTING_KEYS = (
    "consumer.created",
    "consumer.deleted",
    "channel.created",
    "channel.closed",
    "connection.created",
    "connection.closed",
    "queue.created",
    "queue.deleted",
    "binding.created",
    "binding.deleted",
)
_KNOWN = frozenset(ROUTING_KEYS)
_MAX_TEXT = 4096  # queue names, consumer tags, vhosts are AMQP short strings (255 bytes): never cut
MAX_NAME = 65_536  # a client-provided connection name: a 64 kB name whole
_CLIENT_NAME = re.compile(r'\{<<"connection_name">>,longstr,<<"(.*?)">>\}', re.DOTALL)
_IPV4 = re.compile(r"\{(\d{1,3}),(\d{1,3}),(\d{1,3}),(\d{1,3})\}")
_IPV6 = re.compile(r"\{(\d{1,5}(?:,\d{1,5}){7})\}")


def _text(value: Any, most: int = _MAX_TEXT) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "surrogateescape")  # not UTF-8: kept byte for byte
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    text = str(value)
    if len(text) <= most:
        return text
    return f"{text[:most]}... ({len(text) - most:,} more characters cut)"


def _peer_host(value: Any) -> str | None:
    text = _text(value)
    if text is None:
        return None
    if match := _IPV4.fullmatch(text):
        return ".".join(match.groups())
    if match := _IPV6.fullmatch(text):
        return ":".join(f"{int(part):x}" for part in match.group(1).split(","))
    return text


def _client_name(headers: Mapping[str, Any]) -> str | None:
    given = _text(headers.get("user_provided_name"), MAX_NAME)
    if given:
        return given
    properties = headers.get("client_properties")  # a broker that sends no user_provided_name
    if not isinstance(properties, list):
        return None
    for item in properties[:64]:
        text = _text(item, 2 * MAX_NAME)
        if text and (match := _CLIENT_NAME.fullmatch(text)):
            return _text(match.group(1), MAX_NAME)
    return None


def _moment(headers: Mapping[str, Any], properties: Any, received_at: datetime) -> datetime:
    millis = headers.get("timestamp_in_ms")
    if isinstance(millis, int) and not isinstance(millis, bool) and 0 < millis < 32_503_680_000_000:
        return datetime.fromtimestamp(millis / 1000, UTC)
    seconds = getattr(properties, "timestamp", None)
    if isinstance(seconds, int) and not isinstance(seconds, bool) and 0 < seconds < 32_503_680_000:
        return datetime.fromtimestamp(seconds, UTC)
    return received_at


def _digest(kind: str, headers: Mapping[str, Any]) -> str:
    """The event's identity: routing key and every header, canonically (a redelivery has the same digest)."""
    digest = hashlib.sha256(kind.encode("utf-8", "replace"))
    for name in sorted(str(key) for key in headers)[:256]:
        digest.update(b"\x00" + name.encode("utf-8", "replace") + b"\x01")
        digest.update(repr(headers.get(name))[:4096].encode("utf-8", "replace"))
    return digest.hexdigest()


def parse_event(routing_key: str, properties: Any, received_at: datetime) -> BrokerEvent | None:
    """The event, or None for one the recorder does not keep (another routing key, no headers)."""
    if routing_key not in _KNOWN:
        return None
    headers = getattr(properties, "headers", None)
    if not isinstance(headers, dict):
        return None
    vhost = _text(headers.get("vhost")) or "/"
    fields: dict[str, str | None] = {"user": _text(headers.get("user_who_performed_action"))}
    family = routing_key.split(".", 1)[0]
    if family == "consumer":
        fields |= {
            "queue": _text(headers.get("queue")),
            "consumer_tag": _text(headers.get("consumer_tag")),
            "channel": _text(headers.get("channel")),
        }
    elif family == "channel":
        fields |= {"pid": _text(headers.get("pid")), "connection": _text(headers.get("connection"))}
    elif family == "connection":
        fields |= {
            "pid": _text(headers.get("pid")),
            "name": _text(headers.get("name"), MAX_NAME),
            "client_name": _client_name(headers),
            "peer_host": _peer_host(headers.get("peer_host")),
            "user": _text(headers.get("user")) or fields["user"],
        }
    elif family == "queue":
        fields |= {"name": _text(headers.get("name"))}
    else:  # binding: the destination is what the audit follows (a queue of the version)
        source, destination = _text(headers.get("source_name")) or "", _text(headers.get("destination_name"))
        key = _text(headers.get("routing_key")) or ""
        fields |= {"name": destination, "detail": f"{source or '(default exchange)'} -> {destination} ({key!r})"}
    return BrokerEvent(
        _digest(routing_key, headers), routing_key, _moment(headers, properties, received_at), vhost, fields
    )


def text_value(value: Any, most: int = _MAX_TEXT) -> str | None:
    """A value a client chose, as the recorder keeps it (None: not text): the one reading of the event exchange's
    headers and of the delivery trace's (``activity.trace_reader``)."""
    return _text(value, most)

"""What a queue looks like on the broker: passive declares, plus the management API when it is there.

The AMQP side (``queue.declare passive``) gives ready messages and consumers and works everywhere,
except on a queue another connection declared ``exclusive``: the broker answers 405 RESOURCE_LOCKED
(AMQP 0-9-1, ``queue.declare``), ``passive_queue`` raises ``QueueLocked``, and ``inspect_queue`` judges
the queue from the management API's queue object instead (``messages_ready``, ``consumers`` and the
owner, ``owner_pid_details``). The management HTTP API adds unacked counts, ``idle_since``, type and
arguments; it is optional (plugin disabled, stats disabled, other credentials), so every field it
returns is optional and ``ManagementClient`` answers ``None`` rather than failing when it cannot tell.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import pika.channel
import pika.exceptions as px

from contract_platform.amqp.connection import broker_errors, describe_broker
from contract_platform.amqp.http import NOT_FOUND, ManagementClient, describe_owner
from contract_platform.amqp.types import BrokerConnection

if TYPE_CHECKING:
    from pika.adapters.blocking_connection import BlockingChannel

__all__ = [
    "ManagementClient",
    "QueueLocked",
    "QueueState",
    "describe_owner",
    "exchange_exists",
    "inspect_queue",
    "passive_queue",
    "probing",
    "resolve_management",
]

log = logging.getLogger(__name__)

RESOURCE_LOCKED = 405  # AMQP 0-9-1: the queue is exclusive to another connection


def resolve_management(
    connection: BrokerConnection, management: ManagementClient | None | Literal["auto"]
) -> ManagementClient | None:
    """``"auto"``: a client derived from the connection's host and credentials; ``None``: AMQP only."""
    if management == "auto":
        return ManagementClient.for_connection(connection)
    return management


@dataclass(frozen=True)
class QueueState:
    """One queue as the broker reports it; management-only fields are ``None`` when unknown."""

    name: str
    exists: bool
    ready: int = 0
    consumers: int = 0
    unacked: int | None = None
    idle_since: str | None = None
    type: str | None = None
    arguments: dict[str, Any] | None = None
    owner: str | None = None  # exclusive to another connection: who holds it (name, peer host, user)

    @property
    def empty(self) -> bool | None:
        """True when no message is ready or unacked; ``None`` when unacked is unknown and ready is 0."""
        if self.ready:
            return False
        return None if self.unacked is None else self.unacked == 0


class QueueLocked(px.ChannelClosedByBroker):
    """A passive declare was refused with 405 RESOURCE_LOCKED: the queue is exclusive to another connection.

    A ``ChannelClosedByBroker``, so callers that do not expect it map it as any broker error."""


class _ProbeAnswers(logging.Filter):
    """Drops pika's warning about the Channel.Close with which the broker answers a passive declare of a missing
    object (404) or of another connection's exclusive queue (405): both are answers here, not faults.

    Only for a channel a probe runs on (``probing``), in the thread running it: another thread's or another
    channel's 404 is not the probe's answer, and is still a warning. A blocking connection handles its
    channels' frames in the thread that waits on it, so the probe's own Channel.Close is logged there."""

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()

    @contextmanager
    def probing(self, channel: BlockingChannel) -> Iterator[None]:
        numbers: list[int] = self._local.__dict__.setdefault("channels", [])
        numbers.append(channel.channel_number)
        _PIKA_CHANNEL_LOG.addFilter(self)  # once: a filter already there is not added twice
        try:
            yield
        finally:
            numbers.remove(channel.channel_number)

    def filter(self, record: logging.LogRecord) -> bool:
        probed: list[int] = getattr(self._local, "channels", [])
        if not probed or not isinstance(record.args, tuple) or len(record.args) != 3:
            return True
        # Only an int is compared: pika's AMQP objects raise from __eq__ against anything else, and the
        # filter sees every pika.channel record (other threads' too).
        code, _, channel = record.args
        number = channel.channel_number if isinstance(channel, pika.channel.Channel) else None
        return not (
            type(code) is int and code in (NOT_FOUND, RESOURCE_LOCKED) and type(number) is int and number in probed
        )


_PIKA_CHANNEL_LOG = logging.getLogger("pika.channel")
_PROBE_ANSWERS = _ProbeAnswers()


@contextmanager
def probing(channel: BlockingChannel) -> Iterator[None]:
    """While the block runs, the broker closing ``channel`` with 404 or 405 (its answer to a passive declare
    there) is logged as no warning; in this thread, on this channel only. Wrap exactly the passive declares
    whose refusal the caller handles as an answer."""
    with _PROBE_ANSWERS.probing(channel):
        yield


@contextmanager
def _throwaway_channel(connection: BrokerConnection) -> Iterator[BlockingChannel]:
    """A channel that may be closed by the broker (404 on a passive declare) without harm or log noise."""
    channel = connection.channel()
    try:
        with probing(channel):
            yield channel
    finally:
        if channel.is_open:
            channel.close()


def passive_queue(connection: BrokerConnection, name: str) -> tuple[int, int] | None:
    """(ready, consumers) of an existing queue, or ``None`` when it does not exist; ``QueueLocked`` when it is
    exclusive to another connection. Other errors are not mapped."""
    with _throwaway_channel(connection) as channel:
        try:
            ok = channel.queue_declare(name, passive=True)
        except px.ChannelClosedByBroker as exc:
            if exc.reply_code == NOT_FOUND:
                return None
            if exc.reply_code == RESOURCE_LOCKED:
                raise QueueLocked(exc.reply_code, exc.reply_text) from exc
            raise
        return int(ok.method.message_count), int(ok.method.consumer_count)


def exchange_exists(connection: BrokerConnection, name: str) -> bool:
    """Whether an exchange exists (passive declare on a throwaway channel). Errors are not mapped."""
    with _throwaway_channel(connection) as channel:
        try:
            channel.exchange_declare(name, passive=True)
        except px.ChannelClosedByBroker as exc:
            if exc.reply_code == NOT_FOUND:
                return False
            raise
        return True


def _optional_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def inspect_queue(
    connection: BrokerConnection, name: str, *, management: ManagementClient | None | Literal["auto"] = "auto"
) -> QueueState:
    """The state of queue ``name``: ``exists=False`` if it is not there (this is not an error here).

    A queue exclusive to another connection is judged from the management API alone, with its owner; without
    the API its counts are unknown (``unacked`` None), which no check takes for a pass."""
    client = resolve_management(connection, management)
    with broker_errors(describe_broker(connection)):
        try:
            counts = passive_queue(connection, name)
        except QueueLocked:
            return _locked(name, client)
    if counts is None:
        return QueueState(name, exists=False)
    ready, consumers = counts
    info = client.queue(name) if client is not None else None
    if info is None:
        return QueueState(name, exists=True, ready=ready, consumers=consumers)
    arguments = info.get("arguments")
    return QueueState(
        name,
        exists=True,
        ready=ready,
        consumers=consumers,
        unacked=_optional_int(info.get("messages_unacknowledged")),
        idle_since=info.get("idle_since") if isinstance(info.get("idle_since"), str) else None,
        type=info.get("type") if isinstance(info.get("type"), str) else None,
        arguments=dict(arguments) if isinstance(arguments, dict) else None,
    )


def _locked(name: str, client: ManagementClient | None) -> QueueState:
    """A queue exclusive to another connection, as the management API reports it (no AMQP look is possible)."""
    info = client.queue(name) if client is not None else None
    if info is None:
        return QueueState(name, exists=True, owner="another connection (the management API did not say which)")
    details = info.get("owner_pid_details")
    owner_name = details.get("name") if isinstance(details, dict) else None
    owner = client.connection(str(owner_name)) if client is not None and owner_name else None
    arguments = info.get("arguments")
    return QueueState(
        name,
        exists=True,
        ready=_optional_int(info.get("messages_ready")) or 0,
        consumers=_optional_int(info.get("consumers")) or 0,
        unacked=_optional_int(info.get("messages_unacknowledged")),
        idle_since=info.get("idle_since") if isinstance(info.get("idle_since"), str) else None,
        type=info.get("type") if isinstance(info.get("type"), str) else None,
        arguments=dict(arguments) if isinstance(arguments, dict) else None,
        owner=describe_owner(details, owner),
    )

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
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote, unquote, urlsplit

import pika.channel
import pika.exceptions as px

from contract_platform.amqp.connection import broker_errors, describe_broker
from contract_platform.amqp.types import BrokerConnection
from contract_platform.amqp.urls import vhost_of
from contract_platform.settings import redact_url

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

DEFAULT_MANAGEMENT_PORT = 15672
_TLS: list[ssl.SSLContext] = []


def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process: httpx builds a new one per call otherwise (~40 ms of loading
    CA certificates each, which made provisioning an estate spend half its time here)."""
    if not _TLS:
        _TLS.append(ssl.create_default_context())
    return _TLS[0]


NOT_FOUND = 404
RESOURCE_LOCKED = 405  # AMQP 0-9-1: the queue is exclusive to another connection


class ManagementClient:
    """A thin, read-mostly client of the RabbitMQ management API for one virtual host.

    Every method returns ``None`` when the answer is not available: API not enabled or not reachable,
    credentials refused, object not found. Callers then fall back to what AMQP alone can tell.
    """

    def __init__(
        self,
        base_url: str = f"http://127.0.0.1:{DEFAULT_MANAGEMENT_PORT}",
        user: str = "guest",
        password: str = "guest",
        *,
        vhost: str = "/",
        timeout: float = 5.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.user = user
        self.vhost = vhost
        self.timeout = timeout
        self._password = password
        self._unavailable = False

    @property
    def auth(self) -> tuple[str, str]:
        """(user, password) for HTTP basic auth: pass it on, never log it."""
        return self.user, self._password

    def __repr__(self) -> str:
        return f"ManagementClient({self.base_url!r}, user={self.user!r}, vhost={self.vhost!r})"

    @classmethod
    def from_amqp_url(cls, url: str, *, port: int = DEFAULT_MANAGEMENT_PORT, timeout: float = 5.0) -> ManagementClient:
        """Same host, user, password and vhost as the AMQP URL; HTTP on ``port`` (HTTPS for amqps)."""
        parts = urlsplit(url)
        scheme = "https" if parts.scheme == "amqps" else "http"
        vhost = vhost_of(url)
        return cls(
            f"{scheme}://{parts.hostname or '127.0.0.1'}:{port}",
            unquote(parts.username or "guest"),
            unquote(parts.password or "guest"),
            vhost=vhost,
            timeout=timeout,
        )

    @classmethod
    def for_connection(
        cls, connection: BrokerConnection, *, port: int = DEFAULT_MANAGEMENT_PORT
    ) -> ManagementClient | None:
        """A client for the broker and credentials of an open pika connection (``None`` if unknown)."""
        params = getattr(getattr(connection, "_impl", None), "params", None)
        credentials = getattr(params, "credentials", None)
        if params is None or credentials is None:
            return None
        scheme = "https" if getattr(params, "ssl_options", None) else "http"
        return cls(
            f"{scheme}://{params.host}:{port}",
            credentials.username,
            credentials.password,
            vhost=params.virtual_host,
        )

    def get(self, path: str) -> Any | None:
        """GET ``/api/<path>`` as JSON, or ``None`` (not found, API absent, refused, not JSON)."""
        if self._unavailable:
            return None
        import httpx  # here, not at the top: the verbs that never ask the management API start without it

        url = f"{self.base_url}/api/{path}"
        try:
            response = httpx.get(url, auth=(self.user, self._password), timeout=self.timeout, verify=_tls_context())
        except httpx.HTTPError as exc:
            self._give_up(f"management API at {self.base_url} not reachable ({type(exc).__name__})")
            return None
        if response.status_code == NOT_FOUND:
            return None
        if response.status_code in (httpx.codes.UNAUTHORIZED, httpx.codes.FORBIDDEN):
            self._give_up(f"management API at {self.base_url} answered {response.status_code} for user {self.user!r}")
            return None
        if response.status_code != httpx.codes.OK:
            log.warning("management API at %s answered %s for %s", self.base_url, response.status_code, path)
            return None
        try:
            return response.json()
        except ValueError:
            return None

    def overview(self) -> dict[str, Any] | None:
        answer = self.get("overview")
        return answer if isinstance(answer, dict) else None

    def queue(self, name: str) -> dict[str, Any] | None:
        answer = self.get(f"queues/{self._vhost()}/{quote(name, safe='')}")
        return answer if isinstance(answer, dict) else None

    def connection(self, name: str) -> dict[str, Any] | None:
        """The connection object (client properties, peer host, user) by the broker's name for it."""
        answer = self.get(f"connections/{quote(name, safe='')}")
        return answer if isinstance(answer, dict) else None

    def exchange(self, name: str) -> dict[str, Any] | None:
        answer = self.get(f"exchanges/{self._vhost()}/{quote(name, safe='')}")
        return answer if isinstance(answer, dict) else None

    def bindings(self, exchange: str, queue: str) -> list[dict[str, Any]] | None:
        """Bindings from ``exchange`` to ``queue``; ``None`` when the API cannot tell."""
        answer = self.get(f"bindings/{self._vhost()}/e/{quote(exchange, safe='')}/q/{quote(queue, safe='')}")
        return answer if isinstance(answer, list) else None

    def queue_names(self, prefix: str = "") -> list[str] | None:
        answer = self.get(f"queues/{self._vhost()}?columns=name")
        if not isinstance(answer, list):
            return None
        return sorted(
            str(q["name"]) for q in answer if isinstance(q, dict) and str(q.get("name", "")).startswith(prefix)
        )

    def exchange_names(self, prefix: str = "") -> list[str] | None:
        answer = self.get(f"exchanges/{self._vhost()}?columns=name")
        if not isinstance(answer, list):
            return None
        return sorted(
            str(x["name"]) for x in answer if isinstance(x, dict) and str(x.get("name", "")).startswith(prefix)
        )

    def _vhost(self) -> str:
        return quote(self.vhost, safe="")

    def _give_up(self, message: str) -> None:
        """Stop asking (a firewalled port would cost a timeout per call) and say so once."""
        self._unavailable = True
        log.warning("%s; using AMQP only from now on", redact_url(message))


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


def describe_owner(details: Any, connection: Any = None) -> str:
    """Who holds an exclusive queue, from its ``owner_pid_details`` and, when known, the owner's connection
    object: ``billing-reader from 10.0.0.7 as svc`` (the client-provided name, else the broker's name)."""
    details = details if isinstance(details, dict) else {}
    connection = connection if isinstance(connection, dict) else {}
    properties = connection.get("client_properties")
    client_name = properties.get("connection_name") if isinstance(properties, dict) else None
    name = client_name or details.get("name") or connection.get("name")
    who = str(name) if name else "another connection"
    peer = details.get("peer_host") or connection.get("peer_host")
    user = connection.get("user")
    return who + (f" from {peer}" if peer else "") + (f" as {user}" if user else "")


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

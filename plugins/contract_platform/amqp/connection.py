"""Opening a pika connection, and the one place pika and socket errors become platform errors.

Every module of ``contract_platform.amqp`` runs its broker calls inside ``broker_errors(...)``;
nothing else catches a pika exception except to handle a specific reply code (404, 406) first.
Messages name the broker as ``amqp://user:***@host:port/vhost``: the password never appears.

``ERROR_TABLE`` maps *every* class in ``pika.exceptions`` explicitly (a unit test fails when a
new pika release adds one that is not listed); lookup walks the MRO so the most specific entry wins.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pika
import pika.exceptions as px

from contract_platform.amqp.types import BrokerConnection
from contract_platform.errors import BrokerError, BrokerOutOfResources, BrokerUnavailable, PublishRefused
from contract_platform.settings import rabbitmq_url, redact_url

__all__ = [
    "ERROR_TABLE",
    "amqp_url",
    "broker_errors",
    "broker_version",
    "close_quietly",
    "describe_broker",
    "map_error",
    "open_connection",
]

log = logging.getLogger(__name__)

DEFAULT_HEARTBEAT = 30  # seconds; the broker closes a silent connection after two missed beats
DEFAULT_SOCKET_TIMEOUT = 5.0  # seconds to connect the TCP socket
DEFAULT_STACK_TIMEOUT = 10.0  # seconds for the whole AMQP handshake (TCP + TLS + AMQP)
DEFAULT_BLOCKED_TIMEOUT = 60.0  # seconds a resource alarm may block us before we give up

# pika exception -> (platform error, what it means for the user). Most specific class wins.
ERROR_TABLE: Mapping[type[BaseException], tuple[type[BrokerError], str]] = {
    px.AMQPError: (BrokerError, "AMQP error"),
    px.AMQPConnectionError: (BrokerUnavailable, "cannot reach the broker"),
    px.ConnectionOpenAborted: (BrokerUnavailable, "the connection was aborted while opening"),
    px.StreamLostError: (BrokerUnavailable, "the connection to the broker was lost"),
    px.IncompatibleProtocolError: (BrokerError, "the server does not speak AMQP 0-9-1; is this the AMQP port?"),
    px.AuthenticationError: (BrokerError, "the broker does not offer the PLAIN authentication mechanism"),
    px.ProbableAuthenticationError: (BrokerError, "the broker refused the login; check the user and password"),
    px.ProbableAccessDeniedError: (
        BrokerError,
        "the user may not open this virtual host; check that it exists and the user has permissions on it",
    ),
    px.NoFreeChannels: (BrokerError, "no free channel numbers left on this connection"),
    px.ConnectionWrongStateError: (BrokerUnavailable, "the connection is closed; open a new one"),
    px.ConnectionClosed: (BrokerUnavailable, "the connection was closed"),
    px.ConnectionClosedByBroker: (BrokerUnavailable, "the broker closed the connection"),
    px.ConnectionClosedByClient: (BrokerUnavailable, "the connection was closed by this client"),
    px.ConnectionBlockedTimeout: (
        BrokerUnavailable,
        "the broker blocked publishing for too long (memory or disk alarm); retry when it recovers",
    ),
    px.AMQPHeartbeatTimeout: (BrokerUnavailable, "the broker stopped answering heartbeats"),
    px.AMQPChannelError: (BrokerError, "channel error"),
    px.ChannelWrongStateError: (BrokerError, "the channel is closed"),
    px.ChannelClosed: (BrokerError, "the channel was closed"),
    px.ChannelClosedByBroker: (BrokerError, "the broker closed the channel"),
    px.ChannelClosedByClient: (BrokerError, "the channel was closed by this client"),
    px.DuplicateConsumerTag: (BrokerError, "a consumer with this tag already exists on the channel"),
    px.ConsumerCancelled: (BrokerError, "the broker cancelled the consumer (was its queue deleted?)"),
    px.UnroutableError: (PublishRefused, "the message was returned as unroutable"),
    px.NackError: (PublishRefused, "the broker nacked the message"),
    px.InvalidChannelNumber: (BrokerError, "invalid channel number"),
    px.ProtocolSyntaxError: (BrokerError, "AMQP protocol syntax error"),
    px.UnexpectedFrameError: (BrokerError, "unexpected AMQP frame"),
    px.ProtocolVersionMismatch: (BrokerError, "AMQP protocol version mismatch"),
    px.BodyTooLongError: (BrokerError, "message body longer than its declared size"),
    px.InvalidFrameError: (BrokerError, "invalid AMQP frame"),
    px.InvalidFieldTypeException: (BrokerError, "a header or property has a type AMQP cannot encode"),
    px.UnsupportedAMQPFieldException: (BrokerError, "a header or property has a type AMQP cannot encode"),
    px.MethodNotImplemented: (BrokerError, "AMQP method not implemented"),
    px.ChannelError: (BrokerError, "channel error"),
    px.ReentrancyError: (BrokerError, "a pika connection was used re-entrantly (from inside a callback)"),
    px.ShortStringTooLong: (BrokerError, "a name or short string is longer than 255 bytes"),
    px.DuplicateGetOkCallback: (BrokerError, "a basic_get is already pending on this channel"),
    OSError: (BrokerUnavailable, "cannot reach the broker"),
}

# Connection.Close reply codes after which a retry can help (320 CONNECTION_FORCED: shutdown, restart).
_TRANSIENT_CLOSE_CODES = frozenset({320})


def amqp_url(
    host: str | None = None,
    port: int | None = None,
    login: str | None = None,
    password: str | None = None,
    vhost: str | None = None,
    *,
    scheme: str = "amqp",
) -> str:
    """``amqp://login:password@host:port/<vhost>`` with every part percent-encoded; vhost ``/`` is ``%2F``."""
    userinfo = ""
    if login:
        userinfo = quote(login, safe="") + (f":{quote(password, safe='')}" if password else "") + "@"
    address = (host or "127.0.0.1") + (f":{port}" if port else "")
    return f"{scheme}://{userinfo}{address}/{quote(vhost or '/', safe='')}"


def _url_parameters(
    url: str, heartbeat: int, socket_timeout: float, blocked_timeout: float, name: str = "contract-platform"
) -> Any:
    """URLParameters with our defaults wherever the URL's query string does not set the value itself."""
    params = pika.URLParameters(url)
    given = parse_qs(urlsplit(url).query)
    defaults = {
        "heartbeat": heartbeat,
        "socket_timeout": socket_timeout,
        "stack_timeout": DEFAULT_STACK_TIMEOUT,
        "blocked_connection_timeout": blocked_timeout,
        "connection_attempts": 1,
    }
    for name, value in defaults.items():
        if name not in given:
            setattr(params, name, value)
    if "client_properties" not in given:
        params.client_properties = {"connection_name": name}
    return params


def open_connection(
    url: str | None = None,
    *,
    heartbeat: int = DEFAULT_HEARTBEAT,
    socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
    blocked_timeout: float = DEFAULT_BLOCKED_TIMEOUT,
    name: str = "contract-platform",
) -> pika.BlockingConnection:
    """An open ``pika.BlockingConnection`` to ``url`` (default: ``settings.rabbitmq_url()``).

    Fails fast (one attempt): ``BrokerUnavailable`` when the broker cannot be reached (retry later),
    ``BrokerError`` when it refuses us (credentials, virtual host, not AMQP). ``name``: the connection's
    name as the broker lists it (unless the URL sets ``client_properties``).
    """
    url = url or rabbitmq_url()
    broker = redact_url(url)
    try:
        params = _url_parameters(url, heartbeat, socket_timeout, blocked_timeout, name)
    except (ValueError, TypeError) as exc:
        raise BrokerError(f"RabbitMQ URL {broker} is not valid: {_scrub(str(exc), _password(url))}") from exc
    try:
        with broker_errors(broker, secret=params.credentials.password):
            connection = pika.BlockingConnection(params)
    except BrokerUnavailable as exc:
        problem = _out_of_resources(url)
        if problem is not None:
            raise BrokerOutOfResources(f"{exc}: {problem}") from exc
        raise
    log.debug("connected to %s", broker)
    return connection


def _out_of_resources(url: str) -> str | None:
    """Why a broker that does not complete the AMQP handshake cannot, when its management API says
    (a node out of file handles accepts the TCP connection and never answers); None otherwise."""
    from contract_platform.amqp.management import management_client_for_url, resource_problem

    try:
        client = management_client_for_url(url)
    except (ValueError, TypeError):
        return None
    client.timeout = min(client.timeout, 3.0)
    return resource_problem(client)


def close_quietly(connection: BrokerConnection | None) -> None:
    """Close a connection if it is open; a connection that is already gone is not an error here."""
    try:
        if connection is not None and connection.is_open:
            connection.close()
    except (px.AMQPError, OSError) as exc:
        log.debug("ignored while closing a connection: %r", exc)


def describe_broker(connection: BrokerConnection) -> str:
    """``amqp://guest:***@127.0.0.1:5672/%2F`` for an open connection: how messages name the broker."""
    params = getattr(getattr(connection, "_impl", None), "params", None)
    if params is None:
        return "RabbitMQ"
    user = getattr(getattr(params, "credentials", None), "username", None)
    return redact_url(amqp_url(params.host, params.port, user, "x" if user else None, params.virtual_host))


def broker_version(connection: BrokerConnection) -> tuple[int, ...] | None:
    """The broker's version from its connection.start properties (``(3, 10, 8)``), if it says."""
    properties = getattr(getattr(connection, "_impl", None), "server_properties", None) or {}
    raw = properties.get("version") or properties.get(b"version")
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    if not isinstance(raw, str):
        return None
    parts = []
    for piece in raw.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) or None


def map_error(exc: BaseException, broker: str, *, secret: str | None = None) -> BrokerError:
    """The platform error for a pika or socket error; ``broker`` must already be redacted."""
    for cls in type(exc).__mro__:
        if cls in ERROR_TABLE:
            kind, meaning = ERROR_TABLE[cls]
            break
    else:
        raise TypeError(f"{type(exc).__name__} is not a broker error; only pika and socket errors are mapped")
    if isinstance(exc, px.ConnectionClosedByBroker) and exc.reply_code not in _TRANSIENT_CLOSE_CODES:
        kind = BrokerError
    detail = _scrub(_detail(exc), secret)
    advice = "; retry when the broker is back" if kind is BrokerUnavailable else ""
    return kind(f"RabbitMQ at {broker}: {meaning} ({detail}){advice}")


@contextmanager
def broker_errors(broker: str, *, secret: str | None = None) -> Iterator[None]:
    """Run broker calls; re-raise any pika or socket error as the matching ``BrokerError``."""
    try:
        yield
    except (px.AMQPError, px.ChannelError, px.ReentrancyError, OSError) as exc:
        raise map_error(exc, broker, secret=secret) from exc


def _detail(exc: BaseException) -> str:
    if isinstance(exc, px.ConnectionClosed | px.ChannelClosed):
        return f"{exc.reply_code} {exc.reply_text}"
    if isinstance(exc, px.AMQPConnectionError) and len(exc.args) == 1 and isinstance(exc.args[0], BaseException):
        return _detail(exc.args[0])
    text = str(exc) or repr(exc)
    return f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text


def _password(url: str) -> str | None:
    try:
        return urlsplit(url).password
    except ValueError:
        return None


def _scrub(text: str, secret: str | None) -> str:
    """Belt and braces: upstream messages should not carry the password, but never let one through."""
    text = redact_url(text)
    if secret and len(secret) >= 3:
        text = text.replace(secret, "***").replace(quote(secret, safe=""), "***")
    return text

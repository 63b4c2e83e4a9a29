"""The RabbitMQ management HTTP API client: no pika, no AMQP connection, so every module may import it.

``ManagementClient`` answers ``None`` rather than failing when the API cannot tell (plugin disabled, stats
disabled, other credentials): every field it returns is optional to its callers. ``amqp.management`` reads
the whole topology through it; ``amqp.inspection`` adds it to what passive declares see; ``amqp.connection``
asks it why a broker refused a connection. Every request to the API goes through ``ManagementClient.request``,
on the standard library's HTTP client (``_get``), imported on the first request: httpx cost a verb that asks
once 0.3 s of CPU to import and start.
"""

from __future__ import annotations

import logging
import ssl
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from contract_platform import settings
from contract_platform.amqp.types import BrokerConnection
from contract_platform.amqp.urls import vhost_of
from contract_platform.settings import redact_url

__all__ = [
    "DEFAULT_MANAGEMENT_PORT",
    "FORBIDDEN",
    "NOT_FOUND",
    "OK",
    "UNAUTHORIZED",
    "ApiUnreachable",
    "ManagementClient",
    "describe_owner",
    "management_client_for_url",
    "moved_by_settings",
]

log = logging.getLogger(__name__)

DEFAULT_MANAGEMENT_PORT = 15672
_TLS: list[ssl.SSLContext] = []


def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process: a new one per call costs ~40 ms of loading CA certificates each,
    which made provisioning an estate spend half its time here."""
    if not _TLS:
        _TLS.append(ssl.create_default_context())
    return _TLS[0]


OK, UNAUTHORIZED, FORBIDDEN, NOT_FOUND = 200, 401, 403, 404


class ApiUnreachable(Exception):
    """No HTTP answer at all: refused, unreachable, timed out, or an answer that is not HTTP. ``kind`` names the
    transport's own error (``ConnectionRefusedError``, ``TimeoutError``...) for messages."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.kind = type(cause).__name__


def _get(
    url: str, auth: tuple[str, str], timeout: float, *, method: str = "GET", body: bytes | None = None
) -> tuple[int, bytes]:
    """(status, body) of one GET (or ``method`` with a JSON ``body``) with HTTP basic auth, on the standard
    library's client, imported here (the verbs that never ask the API start without it): a verb that asks once
    (``record-activity --status``) would spend 0.3 s of CPU importing and starting httpx for it. A redirect is an
    answer (its status), not followed."""
    import base64
    from urllib.error import HTTPError
    from urllib.request import HTTPRedirectHandler, HTTPSHandler, Request, build_opener

    class NoRedirects(HTTPRedirectHandler):
        def redirect_request(self, *_args: Any, **_kwargs: Any) -> None:
            return None

    token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode("ascii")
    headers = {"Authorization": f"Basic {token}", "Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    request = Request(url, headers=headers, data=body, method=method)
    secure = [HTTPSHandler(context=_tls_context())] if url.startswith("https:") else []
    opener = build_opener(NoRedirects(), *secure)
    try:
        with opener.open(request, timeout=timeout) as response:
            return int(response.status), response.read()
    except HTTPError as answer:  # any status but 2xx: an answer all the same
        with answer:
            return int(answer.code), b""


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

    def request(self, path: str, *, timeout: float | None = None) -> tuple[int, bytes]:
        """(status, body) of ``GET /api/<path>``, whatever the status; ``ApiUnreachable`` when nothing answered.
        The one way the platform asks the API: ``get`` and ``amqp.management``'s checks and listings use it."""
        from http.client import HTTPException  # as _get's client: on the first request, not at import

        try:
            return _get(f"{self.base_url}/api/{path}", self.auth, timeout or self.timeout)
        except (OSError, HTTPException) as exc:  # unreachable, refused, timed out; an answer that is not HTTP
            raise ApiUnreachable(exc) from exc

    def put(self, path: str, body: dict[str, Any]) -> int | None:
        """PUT ``/api/<path>`` with a JSON ``body``: the status, or ``None`` when nothing answered. The platform
        writes through the API in one place only: switching a watched virtual host's delivery trace on."""
        import json
        from http.client import HTTPException

        if self._unavailable:
            return None
        try:
            status, _answer = _get(
                f"{self.base_url}/api/{path}", self.auth, self.timeout, method="PUT", body=json.dumps(body).encode()
            )
        except (OSError, ValueError, HTTPException) as exc:
            log.warning("management API at %s did not answer a PUT of %s (%s)", self.base_url, path, type(exc).__name__)
            return None
        return status

    def get(self, path: str) -> Any | None:
        """GET ``/api/<path>`` as JSON, or ``None`` (not found, API absent, refused, not JSON)."""
        if self._unavailable:
            return None
        try:
            status, body = self.request(path)
        except ApiUnreachable as exc:
            self._give_up(f"management API at {self.base_url} not reachable ({exc.kind})")
            return None
        if status == NOT_FOUND:
            return None
        if status in (UNAUTHORIZED, FORBIDDEN):
            self._give_up(f"management API at {self.base_url} answered {status} for user {self.user!r}")
            return None
        if status != OK:
            log.warning("management API at %s answered %s for %s", self.base_url, status, path)
            return None
        import json

        try:
            return json.loads(body)
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


def management_client_for_url(amqp_url: str) -> ManagementClient:
    """A client for the broker, credentials and vhost of an AMQP URL (``CONTRACT_RABBITMQ_MANAGEMENT_URL`` moves it)."""
    return moved_by_settings(ManagementClient.from_amqp_url(amqp_url))


def moved_by_settings(client: ManagementClient) -> ManagementClient:
    """``client`` where ``CONTRACT_RABBITMQ_MANAGEMENT_URL`` moves the API (its credentials, if it names any)."""
    override = settings.rabbitmq_management_url()
    if not override:
        return client
    parts = urlsplit(override)
    port = parts.port or DEFAULT_MANAGEMENT_PORT
    return ManagementClient(
        f"{parts.scheme or 'http'}://{parts.hostname or '127.0.0.1'}:{port}",
        unquote(parts.username) if parts.username else client.user,
        unquote(parts.password) if parts.password else client.auth[1],
        vhost=client.vhost,
        timeout=client.timeout,
    )


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

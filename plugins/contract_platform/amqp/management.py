"""The broker's whole topology from the management HTTP API: what the retirement audit searches.

::

    management_client(connection)         -> ManagementClient (settings: CONTRACT_RABBITMQ_MANAGEMENT_URL)
    management_client_for_url(amqp_url)   -> the same, before any AMQP connection is open
    require_management(client)            -> the client, or ManagementUnavailable saying how to enable the API
    read_topology(client, vhosts)         -> BrokerTopology: per vhost exchanges (with alternate exchanges),
                                             bindings (queue and exchange-to-exchange), queues with arguments
                                             and effective policy, policies and operator policies, consumers
                                             with their connection's name and peer host; ``timeout`` for the
                                             listings (an estate of 60,000 queues takes tens of seconds),
                                             ``page_size``: list queues page by page (``?page=N&page_size=M``)
    resource_problem(client)              -> None, or what a node has run out of (file handles, sockets,
                                             memory or disk alarm) and how to raise it

The management API is a requirement of the retirement audit: services declare their own queues,
bindings and policies, and only the API lists them. ``require_management`` is the one place that
says so, with the command that enables the plugin; the CLI, the DAG and the main job all call it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, unquote

from contract_platform import settings
from contract_platform.amqp.http import (
    FORBIDDEN,
    NOT_FOUND,
    OK,
    UNAUTHORIZED,
    ApiUnreachable,
    ManagementClient,
    describe_owner,
    management_client_for_url,
    moved_by_settings,
)
from contract_platform.amqp.routing import BindingInfo, ExchangeInfo
from contract_platform.amqp.types import BrokerConnection
from contract_platform.errors import EventExchangeUnavailable, ManagementUnavailable

__all__ = [
    "ENABLE_COMMAND",
    "ENABLE_EVENTS_COMMAND",
    "EVENT_EXCHANGE",
    "BrokerTopology",
    "ConsumerInfo",
    "DeliveryCounters",
    "PolicyInfo",
    "QueueInfo",
    "VhostTopology",
    "event_exchange_problem",
    "management_client",
    "management_client_for_url",
    "probe_event_exchange",
    "probe_management",
    "read_topology",
    "require_management",
    "resource_problem",
]

ENABLE_COMMAND = "rabbitmq-plugins enable rabbitmq_management"


@dataclass(frozen=True)
class ConsumerInfo:
    """Who reads a queue: the consumer tag and its connection (client-provided name, peer host, user)."""

    tag: str
    connection: str | None = None
    client_name: str | None = None
    peer_host: str | None = None
    user: str | None = None

    def describe(self) -> str:
        who = self.client_name or self.connection or "an unnamed connection"
        where = f" from {self.peer_host}" if self.peer_host else ""
        user = f" as {self.user}" if self.user else ""
        return f"{who}{where}{user}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "tag": self.tag,
            "connection": self.connection,
            "clientName": self.client_name,
            "peerHost": self.peer_host,
            "user": self.user,
        }


@dataclass(frozen=True)
class DeliveryCounters:
    """A queue's cumulative counters (``message_stats``): they only grow while the queue lives.

    ``deliver_get`` counts every delivery and every ``basic.get`` that returned a message, ``get_empty``
    every ``basic.get`` that found the queue empty, ``ack`` acknowledgements, ``redeliver`` deliveries of
    requeued messages. The broker refreshes them every statistics interval (5 s by default).
    """

    deliver_get: int
    get_empty: int
    ack: int
    redeliver: int
    publish: int = 0

    @classmethod
    def of(cls, stats: Any) -> DeliveryCounters:
        """From a queue's ``message_stats`` (absent until the queue's first activity: all zero)."""
        stats = stats if isinstance(stats, dict) else {}
        names = ("deliver_get", "get_empty", "ack", "redeliver", "publish")
        return cls(*(_int(stats.get(name)) or 0 for name in names))


@dataclass(frozen=True)
class QueueInfo:
    vhost: str
    name: str
    type: str | None = None
    arguments: Mapping[str, Any] = field(default_factory=dict, hash=False)
    policy: Mapping[str, Any] = field(default_factory=dict, hash=False)  # effective policy definition
    messages: int | None = None
    ready: int | None = None
    unacked: int | None = None
    consumers: int | None = None
    counters: DeliveryCounters | None = None  # None: the broker collects no statistics
    idle_since: datetime | None = None  # the queue's last activity (classic queues; absent while busy)
    owner: str | None = None  # an exclusive queue's connection (``describe_owner``): no other may declare it

    def setting(self, argument: str, policy_key: str) -> Any:
        """A queue argument, else the same setting from its effective policy (arguments win, as on the broker)."""
        value = self.arguments.get(argument)
        return self.policy.get(policy_key) if value is None else value


@dataclass(frozen=True)
class PolicyInfo:
    name: str
    pattern: str
    apply_to: str
    definition: Mapping[str, Any] = field(default_factory=dict, hash=False)
    priority: int = 0
    operator: bool = False

    @property
    def kind(self) -> str:
        return "operator policy" if self.operator else "policy"


@dataclass(frozen=True)
class VhostTopology:
    vhost: str
    exchanges: Mapping[str, ExchangeInfo]
    bindings: tuple[BindingInfo, ...]
    queues: Mapping[str, QueueInfo]
    policies: tuple[PolicyInfo, ...]
    consumers: Mapping[str, tuple[ConsumerInfo, ...]]  # by queue name


@dataclass(frozen=True)
class BrokerTopology:
    vhosts: Mapping[str, VhostTopology]
    management_url: str
    statistics: bool = True  # False: the broker collects no statistics (``disable_stats``), so no counters


def management_client(connection: BrokerConnection) -> ManagementClient | None:
    """A client for the broker and credentials of ``connection``; ``CONTRACT_RABBITMQ_MANAGEMENT_URL`` moves it."""
    client = ManagementClient.for_connection(connection)
    return None if client is None else moved_by_settings(client)


def probe_management(client: ManagementClient, *, event_exchange: bool = False) -> str | None:
    """None when the API answers ``/api/overview`` for this user; otherwise what is wrong and how to fix it.

    ``event_exchange``: also require RabbitMQ's event exchange (plugin ``rabbitmq_event_exchange``), which the
    retirement audit's continuous reader evidence is recorded from.
    """
    try:
        status, _body = client.request("overview")
    except ApiUnreachable as exc:
        return (
            f"the RabbitMQ management API at {client.base_url} does not answer ({exc.kind}); the retirement "
            f"audit needs it to see every queue, binding, policy and consumer on the broker. Enable it with: "
            f"{ENABLE_COMMAND} (on the broker host; the rabbitmq:*-management images have it), or point "
            "CONTRACT_RABBITMQ_MANAGEMENT_URL at it"
        )
    if status in (UNAUTHORIZED, FORBIDDEN):
        return (
            f"the RabbitMQ management API at {client.base_url} refused user {client.user!r} ({status}); "
            f"the retirement audit needs to read the whole topology: give the user the monitoring tag "
            f"(rabbitmqctl set_user_tags {client.user} monitoring) and read permission on the watched virtual hosts"
        )
    if status != OK:
        return (
            f"the RabbitMQ management API at {client.base_url} answered {status} on /api/overview "
            f"(is something else listening on that port?); enable the plugin with: {ENABLE_COMMAND}"
        )
    return probe_event_exchange(client) if event_exchange else None


EVENT_EXCHANGE = "amq.rabbitmq.event"
ENABLE_EVENTS_COMMAND = "rabbitmq-plugins enable rabbitmq_event_exchange"


def event_exchange_problem(vhost: str = "/") -> str:
    """What is wrong when ``amq.rabbitmq.event`` is missing, and the command that fixes it."""
    return (
        f"RabbitMQ's event exchange {EVENT_EXCHANGE} is not in virtual host {vhost!r}: the plugin that announces who "
        f"reads which queue is off, so no retirement can be proven. Enable it with: {ENABLE_EVENTS_COMMAND} "
        "(on the broker host; list it in enabled_plugins in a container image)"
    )


def probe_event_exchange(client: ManagementClient) -> str | None:
    """None when ``amq.rabbitmq.event`` exists (``$CONTRACT_RABBITMQ_EVENT_VHOST``, default ``/``); else the fix."""
    vhost = settings.event_vhost()
    try:
        status, _body = client.request(f"exchanges/{quote(vhost, safe='')}/{EVENT_EXCHANGE}")
    except ApiUnreachable as exc:
        return f"the RabbitMQ management API at {client.base_url} stopped answering ({exc.kind})"
    if status == OK:
        return None
    return event_exchange_problem(vhost)


def require_management(client: ManagementClient | None, *, event_exchange: bool = False) -> ManagementClient:
    """The client, or ``ManagementUnavailable`` with the fix; the one check the CLI, DAG and main job share.

    ``event_exchange``: the retirement audit's form, which also needs RabbitMQ's event exchange
    (``EventExchangeUnavailable``, with the command that enables it).
    """
    if client is None:
        raise ManagementUnavailable(
            "the connection does not say which broker it is on, so its management API cannot be found; "
            "set CONTRACT_RABBITMQ_MANAGEMENT_URL"
        )
    problem = probe_management(client)
    if problem is not None:
        raise ManagementUnavailable(problem)
    if event_exchange and (problem := probe_event_exchange(client)) is not None:
        raise EventExchangeUnavailable(problem)
    return client


_MAX_PAGE_SIZE = 500  # the management API's own limit on page_size


@dataclass(frozen=True)
class _Listing:
    """How the topology's listings are asked for: their timeout, and page by page or whole."""

    timeout: float | None = None
    page_size: int | None = None


def _get(client: ManagementClient, path: str, listing: _Listing | None = None) -> list[dict[str, Any]]:
    """A list the API must answer; anything else is ``ManagementUnavailable`` (an audit cannot guess).

    With ``listing.page_size`` the list is read page by page (an endpoint that does not page answers the
    whole list at once, which is taken as it is)."""
    if listing is None or not listing.page_size:
        whole: list[dict[str, Any]] = _get_one(client, path, listing)  # unpaged, the API answers the list
        return whole
    size = min(listing.page_size, _MAX_PAGE_SIZE)
    found: list[dict[str, Any]] = []
    page = 1
    while True:
        answer = _get_one(
            client, f"{path}{'&' if '?' in path else '?'}page={page}&page_size={size}", listing, paged=True
        )
        if isinstance(answer, list):
            return answer
        items = answer.get("items")
        found += [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []
        count = _int(answer.get("page_count")) or 0
        if page >= count:
            return found
        page += 1


def _get_one(client: ManagementClient, path: str, listing: _Listing | None = None, *, paged: bool = False) -> Any:
    timeout = listing.timeout if listing is not None and listing.timeout else client.timeout
    try:
        status, body = client.request(path, timeout=timeout)
    except ApiUnreachable as exc:
        problem = resource_problem(client)
        raise ManagementUnavailable(
            f"the RabbitMQ management API at {client.base_url} stopped answering ({exc.kind}) while the "
            "audit read the topology"
            + (f": {problem}" if problem else f" (waited {timeout:.0f} s): run it again, or page the listings")
        ) from exc
    if status == NOT_FOUND:
        vhost = unquote(path.split("/")[1]) if "/" in path else "?"
        raise ManagementUnavailable(
            f"virtual host {vhost!r} is not on the broker at {client.base_url}: correct CONTRACT_RABBITMQ_VHOSTS"
        )
    if status != OK:
        raise ManagementUnavailable(
            f"the RabbitMQ management API at {client.base_url} answered {status} for /api/{path}: "
            f"user {client.user!r} needs the monitoring tag and read permission there"
        )
    try:
        answer = json.loads(body)
    except ValueError as exc:
        raise ManagementUnavailable(f"the management API at {client.base_url} did not answer JSON") from exc
    if paged and isinstance(answer, dict):
        return answer
    return [item for item in answer if isinstance(item, dict)] if isinstance(answer, list) else []


_NEAR_LIMIT = 0.9  # a node using this share of its file handles or sockets is about to refuse work
RAISE_FILE_LIMIT = (
    "raise the broker's open-files limit (ulimit -n) and restart it: LimitNOFILE in a systemd drop-in for "
    "rabbitmq-server (/etc/systemd/system/rabbitmq-server.service.d/limits.conf), 'ulimit -n 200000' in "
    "/etc/default/rabbitmq-server, or docker's --ulimit nofile=200000:200000 (RabbitMQ's production "
    "checklist asks for at least 50,000); RABBITMQ_MAX_NUMBER_OF_PROCESSES if Erlang processes run out"
)


def resource_problem(client: ManagementClient) -> str | None:
    """What a node of the broker has run out of (``/api/nodes``), with how to fix it; None when nothing is short
    or the API cannot tell. File handles and sockets count as short from 90% of their limit: each classic queue
    and each connection holds one, so a broker of thousands of queues meets a default 1,024 limit."""
    columns = "name,fd_used,fd_total,sockets_used,sockets_total,proc_used,proc_total,mem_alarm,disk_free_alarm"
    try:
        status, body = client.request(f"nodes?columns={columns}")
        nodes = json.loads(body) if status == OK else None
    except (ApiUnreachable, ValueError):
        return None
    return describe_resources(nodes) if isinstance(nodes, list) else None


def describe_resources(nodes: Iterable[Any]) -> str | None:
    """The shortage of the first node that has one, from ``/api/nodes`` items (pure: the message's one source)."""
    for node in nodes:
        if not isinstance(node, dict):
            continue
        name = str(node.get("name") or "a node")
        for used_key, total_key, what in (
            ("fd_used", "fd_total", "file handles"),
            ("sockets_used", "sockets_total", "sockets"),
        ):
            used, total = _int(node.get(used_key)), _int(node.get(total_key))
            if used is not None and total and used >= total * _NEAR_LIMIT:
                return (
                    f"broker node {name} has used {used:,} of its {total:,} {what}: it stops opening queues and "
                    f"accepting connections (AMQP handshakes time out) until more are free. Fix: {RAISE_FILE_LIMIT}"
                )
        used, total = _int(node.get("proc_used")), _int(node.get("proc_total"))
        if used is not None and total and used >= total * _NEAR_LIMIT:
            return (
                f"broker node {name} has used {used:,} of its {total:,} Erlang processes: raise "
                "RABBITMQ_MAX_NUMBER_OF_PROCESSES (rabbitmq-env.conf) and restart it"
            )
        if node.get("mem_alarm") is True:
            return (
                f"broker node {name} is in a memory alarm: it blocks publishers until memory is freed (consume or "
                "purge deep queues, or raise vm_memory_high_watermark)"
            )
        if node.get("disk_free_alarm") is True:
            return (
                f"broker node {name} is in a disk alarm: it blocks publishers until disk is freed (free space under "
                "its data folder, or lower disk_free_limit)"
            )
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _moment(value: Any) -> datetime | None:
    """The API's ``2026-11-25T17:33:23.887+00:00`` (older brokers: ``2026-11-25 17:33:23``, UTC), else None."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _connections(client: ManagementClient) -> dict[str, dict[str, Any]]:
    return {str(c.get("name")): c for c in _get(client, "connections?columns=name,client_properties,peer_host,user")}


def _consumers(
    client: ManagementClient, vhost: str, connections: Mapping[str, Any], listing: _Listing | None = None
) -> dict[str, tuple[ConsumerInfo, ...]]:
    found: dict[str, list[ConsumerInfo]] = {}
    for item in _get(client, f"consumers/{quote(vhost, safe='')}", listing):
        queue = _dict(item.get("queue")).get("name")
        if not isinstance(queue, str):
            continue
        channel = _dict(item.get("channel_details"))
        name = channel.get("connection_name")
        details = _dict(connections.get(str(name)))
        client_name = _dict(details.get("client_properties")).get("connection_name")
        found.setdefault(queue, []).append(
            ConsumerInfo(
                str(item.get("consumer_tag", "")),
                str(name) if name else None,
                str(client_name) if client_name else None,
                str(channel.get("peer_host") or details.get("peer_host") or "") or None,
                str(channel.get("user") or details.get("user") or "") or None,
            )
        )
    return {queue: tuple(consumers) for queue, consumers in found.items()}


def _policies(client: ManagementClient, vhost: str) -> tuple[PolicyInfo, ...]:
    policies = []
    for path, operator in (("policies", False), ("operator-policies", True)):
        for item in _get(client, f"{path}/{quote(vhost, safe='')}"):
            policies.append(
                PolicyInfo(
                    str(item.get("name", "")),
                    str(item.get("pattern", "")),
                    str(item.get("apply-to", "all")),
                    _dict(item.get("definition")),
                    _int(item.get("priority")) or 0,
                    operator,
                )
            )
    return tuple(policies)


def _read_vhost(
    client: ManagementClient,
    vhost: str,
    connections: Mapping[str, Any],
    statistics: bool = True,
    listing: _Listing | None = None,
) -> VhostTopology:
    v = quote(vhost, safe="")
    whole = _Listing(listing.timeout) if listing is not None else None  # endpoints that answer all at once
    policies = _policies(client, vhost)
    by_name = {p.name: p for p in policies if not p.operator}
    exchanges = {}
    for item in _get(client, f"exchanges/{v}?columns=name,type,arguments,policy", listing):
        arguments = _dict(item.get("arguments"))
        policy = by_name.get(str(item.get("policy") or ""))
        alternate = arguments.get("alternate-exchange") or (
            policy.definition.get("alternate-exchange") if policy else None
        )
        name = str(item.get("name", ""))
        exchanges[name] = ExchangeInfo(name, str(item.get("type", "")), str(alternate) if alternate else None)
    bindings = tuple(
        BindingInfo(
            str(item.get("source", "")),
            str(item.get("destination", "")),
            str(item.get("destination_type", "queue")),
            str(item.get("routing_key", "")),
            _dict(item.get("arguments")),
        )
        for item in _get(client, f"bindings/{v}", whole)
    )
    columns = (
        "name,type,arguments,effective_policy_definition,messages,messages_ready,messages_unacknowledged,consumers,"
        "message_stats,idle_since,exclusive,owner_pid_details"
    )
    queues = {}
    for item in _get(client, f"queues/{v}?columns={columns}", listing):
        name = str(item.get("name", ""))
        queues[name] = QueueInfo(
            vhost,
            name,
            item.get("type") if isinstance(item.get("type"), str) else None,
            _dict(item.get("arguments")),
            _dict(item.get("effective_policy_definition")),
            _int(item.get("messages")),
            _int(item.get("messages_ready")),
            _int(item.get("messages_unacknowledged")),
            _int(item.get("consumers")),
            DeliveryCounters.of(item.get("message_stats")) if statistics else None,
            _moment(item.get("idle_since")),
            _owner(client, vhost, item, connections),
        )
    return VhostTopology(vhost, exchanges, bindings, queues, policies, _consumers(client, vhost, connections, whole))


def _owner(
    client: ManagementClient, vhost: str, queue: Mapping[str, Any], connections: Mapping[str, Any]
) -> str | None:
    """Who holds an exclusive queue (its ``owner_pid_details`` joined to the connection), else None.

    The queue listing says ``exclusive`` but not the owner: the queue's own object does (once the broker
    has collected its statistics)."""
    if queue.get("exclusive") is not True:
        return None
    details = queue.get("owner_pid_details")
    if not isinstance(details, dict):
        one = client.get(f"queues/{quote(vhost, safe='')}/{quote(str(queue.get('name', '')), safe='')}")
        details = one.get("owner_pid_details") if isinstance(one, dict) else None
    name = details.get("name") if isinstance(details, dict) else None
    return describe_owner(details, connections.get(str(name)) if name else None)


def read_topology(
    client: ManagementClient, vhosts: Iterable[str], *, timeout: float | None = None, page_size: int | None = None
) -> BrokerTopology:
    """Everything the audit searches, in each of ``vhosts`` (``ManagementUnavailable`` when it cannot be read).

    ``timeout``: seconds each listing may take (default the client's); ``page_size``: queues and exchanges
    page by page, at most 500 each (the API's limit), so no answer is ever huge or slow."""
    listing = _Listing(timeout, page_size) if timeout or page_size else None
    connections = _connections(client)
    overview = client.overview() or {}
    statistics = overview.get("disable_stats") is not True
    return BrokerTopology(
        {vhost: _read_vhost(client, vhost, connections, statistics, listing) for vhost in dict.fromkeys(vhosts)},
        client.base_url,
        statistics,
    )

"""The shared local broker in tests: names of a test's own, counting, reading, waiting, cleaning up.

Other suites use the same RabbitMQ at the same time, so a test declares everything under its own
``prefix()`` (``t-<uuid8>.``) or in a ``private_vhost()``, and deletes it afterwards. The management
API (15672) lists new queues, consumers and connections only after its statistics interval: wait
for them with the ``wait_for_*`` helpers, never with a fixed sleep.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pika
import pika.exceptions
from tests.support.waiting import wait_for_value, wait_until

from contract_platform.amqp import ManagementClient, open_connection
from contract_platform.amqp.connection import close_quietly
from contract_platform.amqp.inspection import passive_queue

HOST = "127.0.0.1"
API = f"http://{HOST}:15672/api"
AUTH = ("guest", "guest")
STATS_INTERVAL = 30.0  # generous: the management API refreshes its statistics every ~5 s


# What this process handed out: the end of the session checks that nothing under them was left behind
# (tests/support/broker_leaks.py).
_PREFIXES: set[str] = set()
_VHOSTS: set[str] = set()


def prefix() -> str:
    """A test's own name prefix on the shared broker."""
    name = f"t-{uuid.uuid4().hex[:8]}."
    _PREFIXES.add(name)
    return name


def handed_out() -> tuple[frozenset[str], frozenset[str]]:
    """The name prefixes and virtual hosts this process gave tests (``prefix()``, ``create_vhost()``)."""
    return frozenset(_PREFIXES), frozenset(_VHOSTS)


def url_of(vhost: str = "/") -> str:
    return f"amqp://guest:guest@{HOST}:5672/{quote(vhost, safe='')}"


def management_answers() -> bool:
    try:
        httpx.get(f"{API}/overview", auth=AUTH, timeout=5).raise_for_status()
    except httpx.HTTPError:
        return False
    return True


def create_vhost(name: str) -> None:
    """A virtual host with full permissions for guest (``delete_vhost`` removes it with all it holds)."""
    _VHOSTS.add(name)
    httpx.put(f"{API}/vhosts/{quote(name, safe='')}", auth=AUTH, timeout=10).raise_for_status()
    grant_all(name, "guest")


def grant_all(vhost: str, user: str) -> None:
    """``user`` may configure, write and read everything in ``vhost``."""
    httpx.put(
        f"{API}/permissions/{quote(vhost, safe='')}/{quote(user, safe='')}",
        auth=AUTH,
        json={"configure": ".*", "write": ".*", "read": ".*"},
        timeout=10,
    ).raise_for_status()


def delete_vhost(name: str) -> None:
    httpx.delete(f"{API}/vhosts/{quote(name, safe='')}", auth=AUTH, timeout=30)


@contextlib.contextmanager
def private_vhost(name: str | None = None) -> Iterator[str]:
    """A fresh virtual host for one test, deleted afterwards whatever the test left in it."""
    name = name or f"t-{uuid.uuid4().hex[:8]}"
    create_vhost(name)
    try:
        yield name
    finally:
        delete_vhost(name)


def delete_names(url: str, queues: Iterable[str] = (), exchanges: Iterable[str] = ()) -> None:
    """Delete these queues, then these exchanges; one already gone is fine."""
    connection = open_connection(url)
    try:
        for kind, names in (("queue", set(queues)), ("exchange", set(exchanges))):
            for name in sorted(names):
                channel = connection.channel()
                with contextlib.suppress(pika.exceptions.ChannelClosedByBroker):  # already gone
                    (channel.queue_delete if kind == "queue" else channel.exchange_delete)(name)
                    channel.close()
    finally:
        close_quietly(connection)


def delete_prefixed(url: str, management: ManagementClient, prefix: str, *, also: Iterable[str] = ()) -> None:
    """Delete every queue and exchange named ``prefix...`` or ``archive.prefix...`` (and the names in ``also``)."""
    exchanges = set(management.exchange_names(prefix) or []) | {n for n in also if n.startswith(prefix)}
    queues = set(management.queue_names(prefix) or []) | set(management.queue_names(f"archive.{prefix}") or [])
    queues |= set(also) | {f"archive.{x}" for x in exchanges if not x.endswith(".dlx")}
    delete_names(url, queues, exchanges)


def delete_recorder_queues(registry_url: str, vhost: str = "/") -> None:
    """Delete the broker activity recorder's queue of ``registry_url`` and its companions (in the event
    vhost): what a test leaves after running the serve command or the main job, which start a recorder."""
    from contract_platform.activity.queues import parked_queue, queue_for, recorder_queues

    queue = queue_for(registry_url)
    delete_names(url_of(vhost), queues=(*recorder_queues(queue), parked_queue(queue)))


def depth(url: str, queue: str) -> tuple[int, int]:
    """(ready, consumers) of ``queue``, read with a passive declare on a connection of its own."""
    connection = open_connection(url)
    try:
        counts = passive_queue(connection, queue)
    finally:
        close_quietly(connection)
    assert counts is not None, f"{queue} does not exist"
    return counts


def ready(url: str, queue: str) -> int:
    """Ready messages in ``queue`` (declare-ok's count; a quorum queue may lag a moment behind)."""
    return depth(url, queue)[0]


def wait_for_depth(url: str, queue: str, expected: int, timeout: float = 30.0) -> int:
    """Wait until ``queue`` holds exactly ``expected`` ready messages."""
    return wait_for_value(
        lambda: ready(url, queue), expected, timeout, 0.05, what=f"{queue} holding {expected} ready messages"
    )


def get_one(connection: Any, queue: str, timeout: float = 5.0) -> tuple[Any, Any, bytes]:
    """One message from ``queue`` (acknowledged), waiting for it to arrive."""
    channel = connection.channel()

    def take() -> tuple[Any, Any, bytes] | None:
        method, properties, body = channel.basic_get(queue, auto_ack=True)
        return (method, properties, body) if method is not None else None

    return wait_until(take, timeout, what=f"a message in {queue}")


def drain(connection: Any, queue: str) -> list[tuple[Any, bytes]]:
    """Take every message now in ``queue`` (acknowledged), in order: (properties, body) pairs."""
    channel = connection.channel()
    taken = []
    while True:
        method, properties, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            break
        taken.append((properties, body))
    close_quietly(channel)
    return taken


def consume_until_idle(url: str, queue: str, *, idle: float = 2.0) -> list[tuple[Any, bytes]]:
    """Every message in ``queue`` (consumed and acknowledged), until none arrives for ``idle`` seconds."""
    connection = open_connection(url)
    messages: list[tuple[Any, bytes]] = []
    try:
        channel = connection.channel()
        channel.basic_qos(prefetch_count=2000)
        for method, properties, body in channel.consume(queue, inactivity_timeout=idle):
            if method is None:
                break
            messages.append((properties, body))
            if len(messages) % 500 == 0:
                channel.basic_ack(method.delivery_tag, multiple=True)
        channel.cancel()
        if messages:
            channel.basic_ack(0, multiple=True)
    finally:
        close_quietly(connection)
    return messages


# -- the management API ---------------------------------------------------------------------------------


def _api(path: str) -> Any:
    response = httpx.get(f"{API}/{path}", auth=AUTH, timeout=5)
    return response.json() if response.status_code == httpx.codes.OK else None


def queue_listed(vhost: str, queue: str) -> bool:
    return _api(f"queues/{quote(vhost, safe='')}/{quote(queue, safe='')}") is not None


def consumer_described(vhost: str, queue: str) -> bool:
    """The management API lists a consumer of ``queue`` with its connection described.

    The broker fills a consumer's ``channel_details`` from its statistics, a few seconds after the
    consumer itself is listed: until then the audit can only say "an unnamed connection".
    """
    return any(
        item["queue"]["name"] == queue
        and isinstance(item.get("channel_details"), dict)
        and item["channel_details"].get("connection_name")
        for item in _api(f"consumers/{quote(vhost, safe='')}") or []
    )


def connection_listed(client_name: str) -> bool:
    """A connection whose client-provided name is ``client_name`` is listed."""
    return any(
        (item.get("client_properties") or {}).get("connection_name") == client_name
        for item in _api("connections") or []
    )


def wait_for_queue_listed(vhost: str, queue: str, timeout: float = STATS_INTERVAL) -> None:
    wait_until(lambda: queue_listed(vhost, queue), timeout, 0.3, what=f"{queue} listed by the management API")


def wait_for_consumer(vhost: str, queue: str, timeout: float = STATS_INTERVAL) -> None:
    wait_until(lambda: consumer_described(vhost, queue), timeout, 0.3, what=f"a described consumer of {queue} listed")


def wait_for_connection(client_name: str, timeout: float = STATS_INTERVAL) -> None:
    wait_until(lambda: connection_listed(client_name), timeout, 0.3, what=f"the connection {client_name} listed")


def wait_for_stats(management: ManagementClient, names: list[str], timeout: float = STATS_INTERVAL) -> None:
    """The management API reports message counts only after its first statistics interval (~5 s)."""
    wait_until(
        lambda: all("messages_unacknowledged" in (management.queue(n) or {}) for n in names),
        timeout,
        0.5,
        what=f"statistics for {names} from the management API",
    )


def delivery_counter(vhost: str, queue: str, name: str) -> int:
    """A queue's cumulative ``message_stats`` counter (deliver_get, get_empty, ack, redeliver), 0 before any."""
    answer = httpx.get(f"{API}/queues/{quote(vhost, safe='')}/{quote(queue, safe='')}", auth=AUTH, timeout=5)
    stats = answer.json().get("message_stats", {}) if answer.status_code == 200 else {}
    value = stats.get(name, 0) if isinstance(stats, dict) else 0
    return value if isinstance(value, int) else 0


def wait_for_counter(vhost: str, queue: str, name: str, at_least: int, timeout: float = STATS_INTERVAL) -> None:
    """The management API's statistics (refreshed every ~5 s) show ``name`` of ``queue`` at ``at_least``."""
    wait_until(
        lambda: delivery_counter(vhost, queue, name) >= at_least,
        timeout,
        0.3,
        what=f"{name} of {queue} at {at_least} in the management API",
    )

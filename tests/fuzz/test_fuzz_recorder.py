"""Hostile clients against a running broker activity recorder, on PostgreSQL and on SQLite: nothing a client
chooses stops the recorder or changes what it stores, and the next plain reader is recorded.

Each client connects to a private virtual host (itself named with a bidirectional override and a bell) under
a name of its own choosing, declares a queue, publishes a message whose properties no parser should trust
and consumes it under a consumer tag of its own choosing: NUL, control characters, bytes that are not UTF-8
or are overlong UTF-8, bidirectional overrides, the store's escape marker and a backslash-u lookalike, the
longest names the broker takes, a user name of the same kind. Others are refused by the broker itself (a
consumer tag that is not UTF-8, a 64 kB connection name: RabbitMQ reads client properties within its first
4 kB frame; the parser and the store hold 64 kB names, tests/unit/store/test_store_text.py), and one client
publishes forged markers and hostile headers straight into the recorder's queue. Then a plain reader
consumes. Every session is read back from the registry equal to what the client sent.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

import httpx
import pika
import pika.exceptions as px
import pytest
from tests.fuzz.hostile import WireBytes
from tests.support import broker
from tests.support.broker import API, AUTH, url_of
from tests.support.databases import registry_on
from tests.support.retirement import recorder_thread
from tests.support.vhosts import private_vhost
from tests.support.waiting import wait_until

from contract_platform.activity.recorder import ActivityRecorder
from contract_platform.amqp.connection import close_quietly
from contract_platform.evidence.records import ReaderSession
from contract_platform.store import SqlRegistry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

HOSTILE_PROPERTIES = pika.BasicProperties(
    headers={
        "nul\x00key": WireBytes(b"\xff\xc0\xaf\x00"),
        "bidi": "\u202eevil",
        "nested": {"list": [b"\x00\xff", None, 2**62]},
        "big": "x" * 60_000,
        "x-contract-platform-marker": WireBytes(b"\xfe\xff:probe:"),
    },
    type="ty\x00\u202e",
    message_id=WireBytes(b"id\xff"),
    correlation_id="\x1b[2J",
)


@dataclass(frozen=True)
class Client:
    """One hostile client: its connection name, queue and consumer tag as it sends them."""

    name: str
    queue: str
    tag: str
    user: str = "guest"


def clients(prefix: str, user: str) -> list[Client]:
    wide = "\u202e" * 85  # 255 bytes of UTF-8: a short string's most
    widest = f"{prefix}q" + "\u202e" * ((255 - len(prefix) - 1) // 3)  # a queue name of 255 bytes
    return [
        Client("reader\x00after-nul", f"{prefix}q\x00nul", "tag\x00nul"),
        Client("\x1b[2J\x07\x08\x7f\x9b control", f"{prefix}q\x01\x1b[31m", "\x1b]0;title\x07"),
        Client("\u202eevil\u202c \u2066isolate\u2069", f"{prefix}q\u202e", "\u2067tag"),
        Client(WireBytes(b"invalid \xff\xfe utf-8"), f"{prefix}q-invalid-name", "t-invalid"),
        Client(WireBytes(b"overlong \xc0\xaf \xe0\x80\xaf and a surrogate \xed\xa0\x80"), f"{prefix}q-over", "t-over"),
        Client("\ufdd0\\u0000 looks escaped", f"{prefix}\ufdd0q\\u0000", "\\\\u0041\ufdd0"),
        Client("\u202e" * 1000, widest, wide),  # 3 kB of name: about what the broker takes
        Client(f"{prefix}user-reader", f"{prefix}q-user", "t-user", user),
    ]


@pytest.fixture(params=["postgresql", "sqlite"])
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlRegistry]:
    with registry_on(request, tmp_path, "fuzz_recorder") as opened:
        yield opened


@pytest.fixture
def vhost(rabbitmq_url: str) -> Iterator[str]:
    with private_vhost(f"t-{uuid.uuid4().hex[:8]}-\u202e\x07") as name:
        yield name


@pytest.fixture
def user(vhost: str) -> Iterator[str]:
    """A user of the private vhost whose name holds an escape sequence, a bidirectional override and markup."""
    name = f"t-{uuid.uuid4().hex[:8]}\x1b[2J\u202e<b>"
    quoted = quote(name, safe="")
    httpx.put(f"{API}/users/{quoted}", auth=AUTH, json={"password": "pw", "tags": ""}, timeout=10).raise_for_status()
    try:
        broker.grant_all(vhost, name)
        yield name
    finally:
        httpx.delete(f"{API}/users/{quoted}", auth=AUTH, timeout=10)


def connect(vhost: str, name: str, user: str = "guest") -> pika.BlockingConnection:
    params = pika.URLParameters(url_of(vhost) + "?connection_attempts=1&socket_timeout=10")
    params.credentials = pika.PlainCredentials(user, "guest" if user == "guest" else "pw")
    params.client_properties = {"connection_name": name}
    return pika.BlockingConnection(params)


def read_once(vhost: str, client: Client) -> None:
    """Connect, declare, publish a hostile message, consume it under the client's tag, leave."""
    connection = connect(vhost, client.name, client.user)
    try:
        channel = connection.channel()
        channel.queue_declare(client.queue)
        channel.basic_publish("", client.queue, b"\x00\xff", HOSTILE_PROPERTIES)
        taken: list[bytes] = []

        def take(ch: object, method: object, properties: object, body: bytes) -> None:
            taken.append(body)

        channel.basic_consume(client.queue, take, auto_ack=True, consumer_tag=client.tag)
        wait_until(lambda: taken or connection.process_data_events(time_limit=0.05), 10, 0, what="its message")
        channel.basic_cancel(client.tag)
    finally:
        close_quietly(connection)


def refused_by_the_broker(vhost: str, prefix: str) -> None:
    """What RabbitMQ itself refuses: a consumer tag that is not UTF-8, a 64 kB connection name."""
    connection = connect(vhost, f"{prefix}refused-tag")
    with pytest.raises(px.ConnectionClosedByBroker, match="Malformed UTF-8"):
        channel = connection.channel()
        channel.queue_declare(f"{prefix}q-refused")
        channel.basic_consume(f"{prefix}q-refused", lambda *args: None, consumer_tag=WireBytes(b"t\xff"))
    close_quietly(connection)
    with pytest.raises(px.AMQPConnectionError):
        connect(vhost, "n" * 65_536)


def forge_into(queue: str) -> int:
    """Messages any client may publish into the recorder's queue (the default exchange): none is an event."""
    connection = connect("/", "forger")
    try:
        channel = connection.channel()
        forged = [
            HOSTILE_PROPERTIES,
            pika.BasicProperties(headers={"x-contract-platform-marker": {"not": "text"}}),
            pika.BasicProperties(headers={"queue": "\x00", "vhost": WireBytes(b"\xff"), "consumer_tag": "x"}),
        ]
        for properties in forged:
            channel.basic_publish("", queue, b"", properties)
        return len(forged)
    finally:
        close_quietly(connection)


def session_of(registry: SqlRegistry, vhost: str, queue: str, since: datetime) -> list[ReaderSession]:
    return registry.reader_sessions([(vhost, queue)], since=since, until=datetime.now(UTC) + timedelta(minutes=1))


def test_no_client_chosen_value_stops_the_recorder_or_changes_what_it_stores(
    registry: SqlRegistry, vhost: str, user: str
) -> None:
    prefix = broker.prefix()
    hostile = clients(prefix, user)
    with recorder_thread(registry, url_of("/"), f"{prefix}broker-activity") as recorder:
        since = datetime.now(UTC) - timedelta(seconds=5)
        for client in hostile:
            read_once(vhost, client)
        refused_by_the_broker(vhost, prefix)
        forged = forge_into(f"{prefix}broker-activity")
        plain = Client(f"{prefix}plain-reader", f"{prefix}plain", "plain-tag")
        read_once(vhost, plain)  # the next plain reader, after all of them

        wait_until(lambda: session_of(registry, vhost, plain.queue, since), 30, 0.1, what="the plain reader stored")
        after = datetime.now(UTC)
        wait_until(lambda: (recorder.report.covered_until or since) > after, 30, 0.1, what="coverage going on")
        assert_running(recorder, forged)

    for client in [*hostile, plain]:
        [session] = session_of(registry, vhost, client.queue, since)
        sent = (vhost, client.queue, client.tag, str(client.name), client.user)
        assert (session.vhost, session.queue, session.consumer_tag, session.connection_name, session.user) == sent
        assert session.attached_at is not None and session.detached_at is not None
    invalid = next(client.name for client in hostile if isinstance(client.name, WireBytes))
    stored = session_of(registry, vhost, f"{prefix}q-invalid-name", since)[0].connection_name or ""
    assert stored.encode("utf-8", "surrogateescape") == invalid.encode()  # the very bytes


def assert_running(recorder: ActivityRecorder, forged: int) -> None:
    """Still recording, nothing refused, the forged messages neither events nor coverage."""
    assert recorder.report.parked == 0 and not any("refused" in gap for gap in recorder.report.gaps)
    assert recorder.report.ignored >= forged - 1  # one reads as a standby recorder's probe: passed over, uncounted

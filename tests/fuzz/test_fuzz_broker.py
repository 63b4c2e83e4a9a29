"""What other clients leave on the broker, through ``contractctl audit``: their names are data, and nothing
they do makes the audit crash (exit 70) or blame the broker (exit 3).

Each test gets a private virtual host with the real v1/v2 topology and the broker activity recorder running,
and a separate connection standing for another service, which leaves one hostile thing behind: a queue and
a connection named with control, bidirectional and Markdown characters; a dead-lettered message of the
version whose body no parser should walk; a queue exclusive to its own connection. The audit runs as a user
runs it (``main([...])``, ``--record`` writing the Markdown report) and is blocked (exit 1): the text shows
the names escaped, one record per line, the report renders them as text, and the JSON keeps them exact.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pika
import pytest
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from tests.support import broker
from tests.support.broker import API, AUTH, STATS_INTERVAL, url_of
from tests.support.contracts import V1, family_copy
from tests.support.retirement import provision_family, running_recorder, seed_quiet_history
from tests.support.waiting import wait_until

from contract_platform.amqp import ManagementClient, open_connection, plan_topology
from contract_platform.amqp.connection import close_quietly
from contract_platform.amqp.inspection import inspect_queue
from contract_platform.amqp.peek import peek
from contract_platform.amqp.topology import Role
from contract_platform.catalog import load_catalog
from contract_platform.catalog.model import Catalog
from contract_platform.cli.main import main
from contract_platform.errors import printable
from contract_platform.store import SqlRegistry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

EXCHANGE, ROUTING_KEY = "billing.events", "billing.invoice.issued.v1"  # v1's transport
# What a terminal obeys (ESC, BEL), what ends a C string (NUL), what reverses the text after it (U+202E),
# and what Markdown and HTML read as markup (backtick, pipe, tags)
HOSTILE = "\x1b[2J\x07\x00\u202e`|<script>alert(1)</script>|<img src=x onerror=alert(1)>"
# a connection name whose newline would start a line that reads like the audit's own
FORGED_LINE = "\n  - queues: pass"
UNPRINTABLE = ("\x1b", "\x07", "\x00", "\u202e")


@pytest.fixture(scope="module")
def family(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Catalog:
    return load_catalog(family_copy(tmp_path_factory.mktemp("catalog") / "contracts", catalog_dir))


@dataclass(frozen=True)
class Scene:
    vhost: str
    service: str  # a name the platform never chose
    argv: list[str]  # contractctl audit v1 with the test's catalogue, registry and last-seen file
    docs: Path


@pytest.fixture
def scene(rabbitmq_url: str, family: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scene]:
    """A private vhost with v1/v2 provisioned, three quiet audits of v1 recorded and the recorder running."""
    if not broker.management_answers():
        pytest.skip("the RabbitMQ management API is not answering on 15672")
    last_seen = tmp_path / "last-seen.json"
    seen = (datetime.now(UTC) - timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    last_seen.write_text(json.dumps({V1: {"lastReceivedAt": seen, "records": 12}}))
    registry_url = f"sqlite:///{tmp_path / 'registry.db'}"
    with broker.private_vhost(f"t-fuzz-{uuid.uuid4().hex[:8]}") as vhost:
        monkeypatch.setenv("CONTRACT_RABBITMQ_URL", url_of(vhost))
        monkeypatch.setenv("CONTRACT_DOCS_DIR", str(tmp_path / "docs"))
        monkeypatch.setenv("CONTRACT_PLATFORM_HOME", str(tmp_path / "data"))
        monkeypatch.setenv("CONTRACT_RECORDER_HEARTBEAT", "1s")
        monkeypatch.delenv("CONTRACT_RABBITMQ_VHOSTS", raising=False)
        monkeypatch.delenv("CONTRACT_RABBITMQ_MANAGEMENT_URL", raising=False)
        connection = open_connection(url_of(vhost))
        try:
            provision_family(connection, family)
        finally:
            close_quietly(connection)
        with (
            SqlRegistry.open(registry_url) as registry,
            running_recorder(registry, url_of("/"), f"{broker.prefix()}broker-activity") as since,
        ):
            seed_quiet_history(registry, family.contracts[V1], datetime.now(UTC), vhosts=(vhost,), coverage_until=since)
            argv = [
                "audit",
                V1,
                "--catalog",
                str(family.root),
                "--registry",
                registry_url,
                "--last-seen",
                str(last_seen),
            ]
            yield Scene(vhost, f"svc{uuid.uuid4().hex[:6]}", argv, tmp_path / "docs")


@pytest.fixture
def foreign(scene: Scene) -> Iterator[Any]:
    """Another service's connection, under a client-provided name that forges a line of the audit's output."""
    params = pika.URLParameters(url_of(scene.vhost))
    params.client_properties = {"connection_name": f"{scene.service}-reader{HOSTILE}{FORGED_LINE}"}
    connection = pika.BlockingConnection(params)
    yield connection
    close_quietly(connection)


def audit(scene: Scene, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    """``contractctl audit`` as a user runs it: its exit code and stdout (stderr holds no traceback)."""
    code = main([*scene.argv, *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "internal error" not in captured.err, captured.err[-2000:]
    return code, captured.out


def rendered(scene: Scene) -> str:
    """The recorded Markdown report as a reader's viewer shows it (CommonMark with GitHub's tables), as HTML."""
    page = (scene.docs / "retirement" / V1 / "latest.md").read_text(encoding="utf-8")
    assert not any(c in page for c in UNPRINTABLE)
    return MarkdownIt("commonmark").enable("table").render(page)


def assert_shown_as_text(html: str, queue: str) -> None:
    """No name became HTML, and the queue's name is one code span, whole (no pipe or backtick cut it)."""
    assert "<script" not in html and "<img" not in html, "a name became HTML"
    assert f"<td><code>{escapeHtml(printable(queue))}</code></td>" in html


def wait_for(condition: Any, what: str) -> Any:
    return wait_until(condition, STATS_INTERVAL * 3, 0.3, what=what)


def test_names_other_clients_chose_are_printed_escaped_and_recorded_as_text(
    scene: Scene, foreign: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    queue = f"{scene.service}.in{HOSTILE}"
    channel = foreign.channel()
    channel.queue_declare(queue, durable=True)
    channel.queue_bind(queue, EXCHANGE, routing_key=ROUTING_KEY)
    channel.basic_consume(queue, lambda *args: None)
    wait_for(lambda: broker.consumer_described(scene.vhost, queue), f"the API naming the consumer of {queue!r}")

    code, text = audit(scene, capsys, "--record")

    assert code == 1
    assert not any(c in text for c in UNPRINTABLE), text[-2000:]
    assert printable(queue) in text  # the name as escapes, on its line
    assert printable(f"{scene.service}-reader{HOSTILE}{FORGED_LINE}") in text
    assert "\n  - queues: pass" not in text  # the forged line stays inside its record
    assert_shown_as_text(rendered(scene), queue)
    code, document = audit(scene, capsys, "--format", "json")
    assert code == 1
    looks = json.loads(document)["checks"]["queues"]["figures"]["queues"]
    look = next(q for q in looks if q["queue"] == queue)  # the JSON keeps the name exact
    assert look["readers"][0]["clientName"] == f"{scene.service}-reader{HOSTILE}{FORGED_LINE}"


def test_a_dead_lettered_body_no_parser_should_walk_is_counted_and_named(
    scene: Scene, foreign: Any, family: Catalog, capsys: pytest.CaptureFixture[str]
) -> None:
    """Messages of the version without message_id: a body nested 10,000 deep, one whose messageId is an integer
    of 5,000 digits (Python refuses to read more than 4,300); and an untyped body that is not UTF-8."""
    dlq = plan_topology(family.contracts[V1]).queues_of(Role.DLQ)[0].name
    channel = foreign.channel()
    typed = pika.BasicProperties(type=V1, delivery_mode=2)
    channel.basic_publish("", dlq, ("[" * 10_000 + "]" * 10_000).encode(), typed)
    channel.basic_publish("", dlq, b"\xff\xfe{", pika.BasicProperties(delivery_mode=2))
    channel.basic_publish("", dlq, b'{"metadata": {"messageId": ' + b"9" * 5_000 + b"}}", typed)
    wait_for(lambda: broker.ready(url_of(scene.vhost), dlq) == 3, f"3 messages in {dlq}")

    code, document = audit(scene, capsys, "--record", "--format", "json")

    assert code == 1
    dead_letters = json.loads(document)["checks"]["dead_letters"]
    assert dead_letters["verdict"] == "fail"
    scan = next(q for q in dead_letters["figures"]["queues"] if q["queue"] == dlq)
    assert scan["matching"] == 2 and scan["matchingIds"] == ["(no messageId)", "(no messageId)"]
    assert scan["unreadable"] == {"body nested deeper than 256 levels": 1, "body not JSON": 1, "body not UTF-8": 1}
    assert scan["untyped"] == 1
    assert broker.ready(url_of(scene.vhost), dlq) == 3  # read, and given back
    html = rendered(scene)
    assert "1 unreadable: body nested deeper than 256 levels" in html


def test_a_queue_exclusive_to_another_connection_blocks_naming_its_owner(
    scene: Scene, foreign: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A temporary subscriber: an exclusive queue bound to the version's exchange, holding a message; and an
    exclusive queue the naming convention takes for a DLQ. Neither can be declared passively by anyone else."""
    channel = foreign.channel()
    receiver = channel.queue_declare("", exclusive=True).method.queue  # a server-named queue, as subscribers do
    channel.queue_bind(receiver, EXCHANGE, routing_key=ROUTING_KEY)
    dlq = f"{scene.service}.dlq"
    channel.queue_declare(dlq, exclusive=True)
    channel.basic_publish(EXCHANGE, ROUTING_KEY, b"{}", pika.BasicProperties(type=V1))
    owner = f"{scene.service}-reader{HOSTILE}{FORGED_LINE}"

    def owner_listed() -> bool:
        answer = httpx.get(f"{API}/queues/{quote(scene.vhost, safe='')}/{quote(receiver, safe='')}", auth=AUTH)
        queue = answer.json() if answer.status_code == httpx.codes.OK else {}
        return bool(queue.get("owner_pid_details")) and queue.get("messages_ready") == 1

    wait_for(owner_listed, f"the API's statistics of {receiver}")

    code, document = audit(scene, capsys, "--format", "json")

    assert code == 1  # blocked, not "the broker is unreachable" (3)
    checks = json.loads(document)["checks"]
    look = next(q for q in checks["queues"]["figures"]["queues"] if q["queue"] == receiver)
    assert look["ready"] == 1 and look["exclusiveTo"].startswith(owner)
    assert receiver in checks["queues"]["blocker"] and owner in checks["queues"]["blocker"]
    scan = next(q for q in checks["dead_letters"]["figures"]["queues"] if q["queue"] == dlq)
    assert scan["skipped"].startswith("exclusive to") and checks["dead_letters"]["verdict"] == "unknown"
    code, text = audit(scene, capsys)
    assert code == 1 and printable(owner) in text and not any(c in text for c in UNPRINTABLE)
    connection = open_connection(url_of(scene.vhost))  # one queue looked at alone: the passive declare's 405
    try:
        state = inspect_queue(connection, receiver, management=ManagementClient.from_amqp_url(url_of(scene.vhost)))
        outcome = peek(connection, receiver, limit=10, info={}, version=None, visit=lambda *message: None)
    finally:
        close_quietly(connection)
    assert state.exists and state.ready == 1 and (state.owner or "").startswith(owner)
    assert outcome.skipped is not None and outcome.skipped.startswith("exclusive to") and not outcome.complete

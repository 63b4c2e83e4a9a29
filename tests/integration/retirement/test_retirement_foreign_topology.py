"""What services declared themselves blocks a retirement: queues, DLXs, policies and consumers the platform never chose.

Each test gets a private virtual host (created through the management API, deleted afterwards), the
real v1/v2 topology provisioned in it, and a *separate* connection standing for another service,
which declares its own arrangement under a random service name. The audit must block, naming the
queue (and who reads it), and must leave every queue's depth and order as it found them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pika
import pytest
from tests.support import broker
from tests.support.broker import API, AUTH, STATS_INTERVAL, url_of
from tests.support.contracts import V1, V2, family_copy
from tests.support.retirement import provision_family, running_recorder, seed_quiet_history
from tests.support.vhosts import private_vhost
from tests.support.waiting import wait_until

from contract_platform.amqp import ManagementClient, open_connection
from contract_platform.amqp.connection import close_quietly
from contract_platform.amqp.inspection import passive_queue
from contract_platform.catalog import load_catalog
from contract_platform.catalog.model import Catalog
from contract_platform.evidence import Verdict
from contract_platform.retirement import AuditResult, LastSeen, TypeLastSeen, audit_version, write_audit_bundle
from contract_platform.retirement.snapshot import TopologySnapshot
from contract_platform.store import SqlRegistry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def wait_for(condition: Callable[[], Any], what: str) -> Any:
    """The management API lists new queues and consumers after its statistics interval."""
    return wait_until(condition, STATS_INTERVAL, 0.3, what=what)


@pytest.fixture(scope="module")
def family(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Catalog:
    """The billing.invoice-issued family alone (the audit needs nothing else from the catalogue)."""
    return load_catalog(family_copy(tmp_path_factory.mktemp("catalog") / "contracts", catalog_dir))


@pytest.fixture
def vhost(rabbitmq_url: str) -> Iterator[str]:
    with private_vhost(f"t-retire-{uuid.uuid4().hex[:8]}") as name:
        yield name


@pytest.fixture
def platform(vhost: str, family: Catalog, tmp_path: Path) -> Iterator[tuple[Any, SqlRegistry]]:
    """The platform's connection in the private vhost, v1 and v2 provisioned, three quiet audits of v1 recorded."""
    connection = open_connection(url_of(vhost))
    provision_family(connection, family)
    with (
        SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as registry,
        running_recorder(registry, url_of("/"), f"{broker.prefix()}broker-activity") as since,
    ):
        seed_quiet_history(registry, family.contracts[V1], datetime.now(UTC), vhosts=(vhost,), coverage_until=since)
        yield connection, registry
    close_quietly(connection)


@pytest.fixture
def service() -> str:
    """A service name the platform never chose."""
    return f"svc{uuid.uuid4().hex[:6]}"


@pytest.fixture
def foreign(vhost: str, service: str) -> Iterator[Any]:
    """Another service's own connection (with a client-provided name, as most client libraries set)."""
    params = pika.URLParameters(url_of(vhost))
    params.client_properties = {"connection_name": f"{service}-reader"}
    connection = pika.BlockingConnection(params)
    yield connection
    close_quietly(connection)


def v1_body(message_id: str, kind: str = V1) -> bytes:
    envelope = {"metadata": {"messageId": message_id, "messageType": kind, "schemaVersion": 1}, "payload": {}}
    return json.dumps(envelope).encode()


def publish(channel: Any, exchange: str, key: str, message_id: str, *, with_id: bool = True, kind: str = V1) -> None:
    properties = pika.BasicProperties(type=kind, message_id=message_id if with_id else None, delivery_mode=2)
    channel.basic_publish(exchange, key, v1_body(message_id, kind), properties)  # the envelope names the type


def run_audit(
    platform: tuple[Any, SqlRegistry], family: Catalog, vhost: str, vhosts: tuple[str, ...] = ()
) -> AuditResult:
    """Audit v1 from ``vhost`` (and the watched ``vhosts``); v1 was last seen 30 days ago."""
    connection, registry = platform
    last_seen = LastSeen({V1: TypeLastSeen(datetime.now(UTC) - timedelta(days=30), 12)}, scanned=True, source="test")
    return audit_version(
        family.contracts[V1],
        family,
        registry,
        connection,
        last_seen,
        now=datetime.now(UTC),
        run_id="test",
        snapshot=TopologySnapshot.read(ManagementClient.from_amqp_url(url_of(vhost)), vhosts=list(vhosts)),
    )


def blocker(result: AuditResult, check: str) -> str:
    """The check failed: what it says blocks retirement."""
    outcome = result.check(check)
    assert outcome.verdict is Verdict.FAIL, f"{check}: {outcome.verdict}"
    return outcome.blocker or ""


def holding(channel: Any, vhost: str, queue: str, ids: list[str], kinds: tuple[str, ...] = ()) -> None:
    """Declare ``queue``, publish ``ids`` into it (types ``kinds``, else v1) and wait until the API lists it."""
    channel.queue_declare(queue, durable=True)
    for n, message_id in enumerate(ids):
        publish(channel, "", queue, message_id, kind=kinds[n] if kinds else V1)
    broker.wait_for_queue_listed(vhost, queue)


def dead_lettered(foreign: Any, vhost: str, work: str, dlq: str, ids: list[str]) -> None:
    """Publish ``ids`` into ``work`` and reject them: wait until the broker moved them into ``dlq``, listed."""
    channel = foreign.channel()
    for message_id in ids:
        publish(channel, "", work, message_id)
    wait_for(lambda: passive_queue(foreign, work) == (len(ids), 0), f"{len(ids)} messages in {work}")
    for _ in ids:
        method, _properties, _body = channel.basic_get(work, auto_ack=False)
        assert method is not None
        channel.basic_reject(method.delivery_tag, requeue=False)
    wait_for(lambda: passive_queue(foreign, dlq) == (len(ids), 0), f"the broker dead-lettered them into {dlq}")
    broker.wait_for_queue_listed(vhost, dlq)


def contents(connection: Any, queue: str) -> list[str]:
    """Drain a queue (end of test) and return its messages' ids in order."""
    return [json.loads(body)["metadata"]["messageId"] for _properties, body in broker.drain(connection, queue)]


def considered(result: AuditResult, check: str, queue: str) -> dict[str, Any]:
    entries = [q for q in result.check(check).figures["queues"] if q["queue"] == queue]
    assert entries, f"{queue} is not among the queues the {check} check considered"
    return entries[0]


@pytest.mark.parametrize("suffix", [".dead", ".graveyard"])  # a conventional name, and one only topology reveals
def test_a_message_the_broker_dead_lettered_from_a_service_queue_blocks(
    platform: tuple[Any, SqlRegistry],
    family: Catalog,
    vhost: str,
    foreign: Any,
    service: str,
    suffix: str,
    tmp_path: Path,
) -> None:
    channel = foreign.channel()
    channel.exchange_declare(f"{service}.dlx", "fanout", durable=True)
    channel.queue_declare(f"{service}{suffix}", durable=True)
    channel.queue_bind(f"{service}{suffix}", f"{service}.dlx")
    channel.queue_declare(f"{service}.in", durable=True, arguments={"x-dead-letter-exchange": f"{service}.dlx"})
    channel.queue_bind(f"{service}.in", "billing.events", routing_key="billing.invoice.issued.v1")
    ids = [f"{service}-1", f"{service}-2"]
    dead_lettered(foreign, vhost, f"{service}.in", f"{service}{suffix}", ids)

    result = run_audit(platform, family, vhost)

    blocked = blocker(result, "dead_letters")
    assert f"{service}{suffix}" in blocked and ids[0] in blocked
    assert "DLX topology" in considered(result, "dead_letters", f"{service}{suffix}")["foundBy"]
    assert "binding" in considered(result, "queues", f"{service}.in")["foundBy"]
    assert passive_queue(foreign, f"{service}{suffix}") == (2, 0)
    assert contents(foreign, f"{service}{suffix}") == ids
    page = write_audit_bundle(result, tmp_path).markdown.read_text()  # the report a person reads
    row = next(line for line in page.splitlines() if line.startswith(f"| `{service}{suffix}`"))
    assert "DLX topology" in row and f"| 2 | 2 | 2 | {ids[0]}, {ids[1]} |" in row


def test_an_error_queue_by_naming_convention_blocks_and_keeps_its_order(
    platform: tuple[Any, SqlRegistry], family: Catalog, vhost: str, foreign: Any, service: str
) -> None:
    queue = f"{service}_error"  # the convention of several .NET and Java frameworks
    ids = [f"{service}-a", f"{service}-b", f"{service}-c"]
    holding(foreign.channel(), vhost, queue, ids, kinds=(V1, V2, V1))

    result = run_audit(platform, family, vhost)

    assert queue in blocker(result, "dead_letters")
    entry = considered(result, "dead_letters", queue)
    assert entry["foundBy"] == ["name convention"] and entry["matching"] == 2 and entry["family"] == {V2: 1}
    assert passive_queue(foreign, queue) == (3, 0)
    assert contents(foreign, queue) == ids


def test_a_dead_letter_without_amqp_message_id_is_named_by_its_body(
    platform: tuple[Any, SqlRegistry], family: Catalog, vhost: str, foreign: Any, service: str
) -> None:
    queue = f"{service}.dlq"
    channel = foreign.channel()
    channel.queue_declare(queue, durable=True)
    publish(channel, "", queue, f"{service}-bodyonly", with_id=False)
    broker.wait_for_queue_listed(vhost, queue)

    result = run_audit(platform, family, vhost)

    assert f"{service}-bodyonly" in blocker(result, "dead_letters")
    assert considered(result, "dead_letters", queue)["matchingIds"] == [f"{service}-bodyonly"]


def test_a_policy_defined_dead_letter_exchange_makes_its_queues_dlqs(
    platform: tuple[Any, SqlRegistry], family: Catalog, vhost: str, foreign: Any, service: str
) -> None:
    policy = f"{service}-dlx"
    httpx.put(
        f"{API}/policies/{quote(vhost, safe='')}/{policy}",
        auth=AUTH,
        json={"pattern": f"^{service}\\.work$", "definition": {"dead-letter-exchange": f"{service}.pdlx"}},
        timeout=10,
    ).raise_for_status()
    channel = foreign.channel()
    channel.exchange_declare(f"{service}.pdlx", "fanout", durable=True)
    channel.queue_declare(f"{service}.kept", durable=True)  # no argument, no conventional name: only the policy
    channel.queue_bind(f"{service}.kept", f"{service}.pdlx")
    channel.queue_declare(f"{service}.work", durable=True)
    wait_for(
        lambda: (
            httpx.get(f"{API}/queues/{quote(vhost, safe='')}/{service}.work", auth=AUTH, timeout=5).json().get("policy")
            == policy
        ),
        "the policy applied to the work queue",
    )
    dead_lettered(foreign, vhost, f"{service}.work", f"{service}.kept", [f"{service}-p"])

    result = run_audit(platform, family, vhost)

    assert f"{service}.kept" in blocker(result, "dead_letters")
    assert considered(result, "dead_letters", f"{service}.kept")["foundBy"] == ["policy"]
    assert contents(foreign, f"{service}.kept") == [f"{service}-p"]


def test_a_foreign_consumer_on_its_own_bound_queue_blocks_and_is_named(
    platform: tuple[Any, SqlRegistry], family: Catalog, vhost: str, foreign: Any, service: str, tmp_path: Path
) -> None:
    queue = f"{service}.invoices"
    channel = foreign.channel()
    channel.queue_declare(queue, durable=True)
    channel.queue_bind(queue, "billing.events", routing_key="billing.invoice.issued.v1")
    channel.basic_consume(queue, lambda *args: None)
    broker.wait_for_consumer(vhost, queue)

    result = run_audit(platform, family, vhost)

    blocked = blocker(result, "queues")
    assert queue in blocked and f"{service}-reader" in blocked
    entry = considered(result, "queues", queue)
    assert entry["foundBy"] == ["binding"] and entry["role"] == "foreign"
    assert entry["readers"][0]["clientName"] == f"{service}-reader" and entry["readers"][0]["peerHost"]
    assert "readers" in result.failed_checks  # observed like the platform's own queues
    document = json.loads(write_audit_bundle(result, tmp_path).json.read_text())
    looks = {q["queue"]: q for q in document["checks"]["queues"]["figures"]["queues"]}
    assert looks[queue]["readers"][0]["clientName"] == f"{service}-reader"


def test_a_headers_exchange_binding_on_the_type_header_blocks_only_for_its_version(
    platform: tuple[Any, SqlRegistry], family: Catalog, vhost: str, foreign: Any, service: str
) -> None:
    channel = foreign.channel()
    channel.exchange_declare(f"{service}.by-type", "headers", durable=True)
    channel.exchange_bind(f"{service}.by-type", "billing.events", routing_key="billing.invoice.#")
    for version, queue in ((V1, f"{service}.typed-v1"), (V2, f"{service}.typed-v2")):
        channel.queue_declare(queue, durable=True)
        channel.queue_bind(queue, f"{service}.by-type", arguments={"x-match": "all", "message-type": version})
        channel.basic_consume(queue, lambda *args: None)
    broker.wait_for_consumer(vhost, f"{service}.typed-v2")

    result = run_audit(platform, family, vhost)

    blocked = blocker(result, "queues")
    assert f"{service}.typed-v1" in blocked and f"{service}.typed-v2" not in blocked
    why = considered(result, "queues", f"{service}.typed-v1")["why"][0]
    assert f"billing.events -> {service}.by-type -> {service}.typed-v1" in why


def test_a_watched_second_virtual_host_is_searched_and_read_over_its_own_connection(
    platform: tuple[Any, SqlRegistry], family: Catalog, vhost: str, service: str
) -> None:
    with broker.private_vhost(f"{vhost}-legacy") as other:
        legacy = pika.BlockingConnection(pika.URLParameters(url_of(other)))
        try:
            holding(legacy.channel(), other, f"{service}_skipped", [f"{service}-legacy"])

            result = run_audit(platform, family, vhost, vhosts=(other,))

            assert f"(vhost {other})" in blocker(result, "dead_letters")
            assert considered(result, "dead_letters", f"{service}_skipped")["vhost"] == other
            assert contents(legacy, f"{service}_skipped") == [f"{service}-legacy"]
        finally:
            close_quietly(legacy)

"""The ``readers`` check on the real broker: readers between audits, pollers, gaps, with names the platform never chose.

Each test runs the platform as a user does: the broker activity recorder (``contractctl record-activity``,
here in a thread or a process of its own) records into the test's registry, and ``audit_version`` with
``record=True`` runs three times a few seconds apart on a version whose ``retirement`` needs 3 audits
spanning 4 s. The sleeps between audits are the behaviour under test: the span has to pass.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pika
import pytest
from tests.support import broker
from tests.support.broker import url_of, wait_for_counter, wait_for_stats
from tests.support.contracts import V1
from tests.support.private_node import NodeUnavailable, PrivateNode
from tests.support.retirement import (
    force_status,
    provision_family,
    retire_declared,
    running_recorder,
    wait_for_coverage,
)
from tests.support.waiting import wait_until

from contract_platform.amqp import ManagementClient, open_connection, plan_topology
from contract_platform.amqp.connection import close_quietly
from contract_platform.amqp.topology import Role
from contract_platform.catalog.model import Catalog, Contract, RetirementSettings, Status
from contract_platform.evidence import Verdict
from contract_platform.retirement import (
    AuditResult,
    LastSeen,
    TypeLastSeen,
    VersionQueue,
    audit_version,
)
from contract_platform.retirement.audit import audit_snapshot, judge_readers
from contract_platform.store import Registry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

SHORT = RetirementSettings(observations=3, observation_span=timedelta(seconds=4), evidence_freshness=timedelta(days=2))
APART = 5.0  # seconds between audits (longer than the span's share and the broker's 5 s statistics interval)


def v1_message(message_id: str) -> tuple[bytes, Any]:
    body = {"metadata": {"messageId": message_id, "messageType": V1, "schemaVersion": 1}, "payload": {}}
    return json.dumps(body).encode(), pika.BasicProperties(type=V1, message_id=message_id, delivery_mode=2)


class Audits:
    """Audits of one version, ``APART`` seconds apart, each recorded like the DAG's."""

    def __init__(self, connection: Any, contracts: Catalog, registry: Registry, prefix: str, contract: Contract):
        self.connection, self.contracts, self.registry, self.prefix = connection, contracts, registry, prefix
        self.contract = contract
        self.last = 0.0

    def run(self, vhosts: list[str] | None = None) -> AuditResult:
        wait = self.last + APART - time.monotonic()
        if wait > 0:
            time.sleep(wait)  # the observation span passing is what is under test
        self.last = time.monotonic()
        last_seen = LastSeen({V1: TypeLastSeen(datetime.now(UTC) - timedelta(days=30), 1)}, scanned=True, source="t")
        return audit_version(
            self.contract,
            self.contracts,
            self.registry,
            self.connection,
            last_seen,
            now=datetime.now(UTC),
            run_id="test",
            snapshot=audit_snapshot(self.connection, vhosts=vhosts),
            dead_letter_scope=self.prefix,
        )


@pytest.fixture
def version(connection: Any, contracts: Catalog, management: ManagementClient) -> Contract:
    """v1 and v2 provisioned; v1 needs 3 audits spanning 4 s; the API has statistics for v1's queues."""
    provision_family(connection, contracts)
    v1 = contracts.contracts[V1]
    wait_for_stats(management, [q.name for q in plan_topology(v1).queues_of(Role.CONSUMER, Role.RETRY, Role.DLQ)])
    return replace(v1, retirement=SHORT)


@pytest.fixture
def audits(
    connection: Any, contracts: Catalog, registry: Registry, prefix: str, version: Contract, recording: datetime
) -> Audits:
    return Audits(connection, contracts, registry, prefix, version)


def named_connection(name: str, vhost: str = "/") -> Any:
    params = pika.URLParameters(url_of(vhost))
    params.client_properties = {"connection_name": name}
    return pika.BlockingConnection(params)


def readers(result: AuditResult) -> tuple[Verdict, str]:
    check = result.check("readers")
    return check.verdict, check.blocker or ""


def test_two_intermittent_readers_between_audits_each_block_and_are_named(audits: Audits, version: Contract) -> None:
    queue = version.consumers[0].queue
    assert readers(audits.run())[0] is not Verdict.PASS  # the first audit: nothing is known before it

    batch = named_connection("nightly-ledger-batch")  # a batch job: attaches, takes one message, acks, leaves
    channel = batch.channel()
    channel.basic_publish("", queue, *v1_message("ledger-1"))
    for method, _properties, _body in channel.consume(queue, inactivity_timeout=10):
        assert method is not None, "the batch reader got no message"
        channel.basic_ack(method.delivery_tag)
        break
    channel.cancel()
    batch.close()

    second = audits.run()
    assert second.check("queues").verdict is Verdict.PASS  # nobody is attached at the moment of the audit ...
    verdict, blocker = readers(second)
    assert verdict is Verdict.FAIL and "nightly-ledger-batch from 127.0.0.1 as guest" in blocker  # ... yet it read
    assert queue in blocker

    probe = named_connection("dr-replay-probe")  # attaches for two seconds, receives nothing, leaves
    probe.channel().basic_consume(queue, lambda *args: None)
    probe.sleep(2)
    probe.close()

    third = audits.run()
    verdict, blocker = readers(third)
    assert verdict is Verdict.FAIL
    assert "dr-replay-probe" in blocker and "nightly-ledger-batch" in blocker
    assert third.check("readers").clears_at is not None and not third.passed


def test_a_poller_is_seen_by_the_counters_on_a_full_queue(audits: Audits, version: Contract) -> None:
    queue = version.consumers[0].queue
    audits.run()
    poller = named_connection("poller")
    channel = poller.channel()
    channel.basic_publish("", queue, *v1_message("polled-1"))
    wait_until(lambda: channel.basic_get(queue, auto_ack=True)[0] is not None, 10, 0.2, what="the poller's get")
    poller.close()
    wait_for_counter("/", queue, "deliver_get", 1)
    verdict, blocker = readers(audits.run())
    assert verdict is Verdict.FAIL and "deliver_get +1" in blocker and "basic.get" in blocker


def test_a_poller_of_an_empty_queue_is_seen_by_its_last_activity(
    audits: Audits, version: Contract, connection: Any, prefix: str
) -> None:
    # a get that finds the queue empty moves no counter of the queue (RabbitMQ counts get_empty per channel);
    # a classic queue still reports when it was last touched. Another team's classic queue on the exchange:
    queue = f"{prefix}reporting.invoices"
    channel = connection.channel()
    channel.queue_declare(queue, durable=True, arguments={"x-queue-type": "classic"})
    channel.queue_bind(queue, version.transport.exchange, version.transport.routing_key)
    broker.wait_for_queue_listed("/", queue)
    audits.run()
    poller = named_connection("reporting-poller")
    assert poller.channel().basic_get(queue, auto_ack=False)[0] is None
    poller.close()
    touched = datetime.now(UTC)
    wait_until(lambda: _idle_since("/", queue) >= touched - timedelta(seconds=1), 30, 0.3, what=f"{queue} touched")
    verdict, blocker = readers(audits.run())
    assert verdict is Verdict.FAIL and f"{queue} was touched at" in blocker and "while it was empty" in blocker


def _idle_since(vhost: str, queue: str) -> datetime:
    from contract_platform.amqp.management import read_topology

    info = read_topology(ManagementClient(), [vhost]).vhosts[vhost].queues.get(queue)
    return info.idle_since if info is not None and info.idle_since else datetime.min.replace(tzinfo=UTC)


def test_a_consumer_holding_a_dead_letter_unacked_between_audits_blocks(audits: Audits, version: Contract) -> None:
    dlq = plan_topology(version).queues_of(Role.DLQ)[0].name
    holder = named_connection("dlq-inspector")
    channel = holder.channel()
    channel.basic_publish("", dlq, *v1_message("dead-1"))
    audits.run()
    held: list[int] = []
    channel.basic_consume(dlq, lambda ch, method, props, body: held.append(method.delivery_tag), auto_ack=False)
    wait_until(lambda: holder.process_data_events(0.2) or held, 10, 0.1, what="the inspector holding the message")
    holder.close()  # the unacked message goes back to the DLQ
    verdict, blocker = readers(audits.run())
    assert verdict is Verdict.FAIL and "dlq-inspector" in blocker and dlq in blocker


def test_a_queue_deleted_and_recreated_mid_span_is_unknown(audits: Audits, version: Contract, connection: Any) -> None:
    queue = version.consumers[0].queue
    audits.run()
    channel = connection.channel()
    channel.queue_delete(queue)
    provision_family(connection, audits.contracts)  # the same queue again, its counters from zero
    audits.run()
    verdict, blocker = readers(audits.run())
    assert verdict is Verdict.UNKNOWN and f"{queue} was deleted at" in blocker


def test_a_clean_span_passes_and_the_version_retires(
    audits: Audits, version: Contract, registry: Registry, connection: Any, tmp_path: Path
) -> None:
    first, second, third = audits.run(), audits.run(), audits.run()
    assert first.check("readers").verdict is Verdict.UNKNOWN  # nothing is known before the first audit
    assert second.check("readers").verdict is not Verdict.PASS  # two audits: fewer than required
    assert third.passed, third.figures()["blockers"]
    assert third.check("readers").figures["audits"] == 3
    force_status(registry, V1, Status.DEPRECATED)
    outcome, _, _ = retire_declared(third, registry, connection, audits.contracts, tmp_path)
    assert outcome.retired, outcome.reasons


def test_a_reader_of_a_discovered_queue_in_a_second_vhost_blocks(
    audits: Audits, version: Contract, prefix: str
) -> None:
    other = f"{prefix}second"
    broker.create_vhost(other)
    try:
        foreign = named_connection("warehouse-sync", other)
        channel = foreign.channel()
        channel.exchange_declare(version.transport.exchange, "topic", durable=True)
        channel.queue_declare("warehouse.invoices", durable=True)
        channel.queue_bind("warehouse.invoices", version.transport.exchange, version.transport.routing_key)
        broker.wait_for_queue_listed(other, "warehouse.invoices")
        first = audits.run(vhosts=[other])
        assert "warehouse.invoices (vhost " in " ".join(first.check("readers").figures["queues"])
        channel.basic_consume("warehouse.invoices", lambda *args: None)
        foreign.sleep(1)
        foreign.close()
        verdict, blocker = readers(audits.run(vhosts=[other]))
        assert (
            verdict is Verdict.FAIL and "warehouse-sync" in blocker and f"warehouse.invoices (vhost {other})" in blocker
        )
    finally:
        broker.delete_vhost(other)


# -- gaps: the recorder killed, the broker restarted ------------------------------------------------------


@pytest.fixture
def recorder_process(prefix: str, tmp_path: Path) -> Iterator[Any]:
    """``contractctl record-activity`` as its own process (killable), into the test's registry."""
    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        env = os.environ | {"CONTRACT_REGISTRY_URL": f"sqlite:///{tmp_path / 'registry.db'}"}
        contractctl = str(Path(sys.executable).parent / "contractctl")
        command = [contractctl, "record-activity", "--queue", f"{prefix}activity", "--heartbeat", "1s"]
        process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=(tmp_path / "recorder.log").open("ab")
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
    connection = open_connection(url_of("/"))
    try:
        connection.channel().queue_delete(f"{prefix}activity")
    finally:
        close_quietly(connection)


def test_the_recorder_killed_mid_span_leaves_a_gap_and_the_check_is_unknown(
    connection: Any, contracts: Catalog, registry: Registry, prefix: str, version: Contract, recorder_process: Any
) -> None:
    audits = Audits(connection, contracts, registry, prefix, version)
    first = recorder_process()
    wait_for_coverage(registry, "the recorder's coverage")
    audits.run()
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    killed_at = datetime.now(UTC)
    recorder_process()
    wait_for_coverage(registry, "the restarted recorder")
    audits.run()
    result = audits.run()
    verdict, blocker = readers(result)
    assert verdict is Verdict.UNKNOWN and "killed" in blocker, blocker
    segments, gaps = registry.coverage(killed_at - timedelta(minutes=5))
    assert len(gaps) == 1 and gaps[0].start <= killed_at <= gaps[0].end
    assert result.check("readers").clears_at >= gaps[0].end + SHORT.observation_span  # type: ignore[operator]


def test_a_broker_restart_mid_span_is_a_gap_and_unknown(tmp_path: Path, registry: Registry, version: Contract) -> None:
    try:
        node = PrivateNode(tmp_path / "node")
        node.start(plugins=("rabbitmq_event_exchange",))
    except NodeUnavailable as exc:
        pytest.skip(str(exc))
    try:
        queue = VersionQueue("/", "some.queue", "some.queue")
        with running_recorder(registry, node.url, "contract-platform.broker-activity"):
            before = datetime.now(UTC)
            registry.record_queue_counters(
                [replace(row, queue="some.queue") for row in _zero_counters(version, [before - timedelta(seconds=10)])]
            )
            node.restart_app()
            wait_until(lambda: registry.coverage(before)[1], 60, 0.2, what="the recorder back after the restart")
            wait_for_coverage(registry, "coverage after the restart")
            now = datetime.now(UTC)
            registry.record_queue_counters(_zero_counters(version, [now]))
            result = judge_readers(version, registry, [queue], now=now)
        assert result.verdict is Verdict.UNKNOWN
        (gap,) = registry.coverage(before)[1]
        assert "lost its connection" in gap.reason and gap.start <= gap.end <= now and gap.end > before
        assert "gap in the broker activity evidence" in (result.blocker or "")
    finally:
        node.stop()


def _zero_counters(version: Contract, moments: list[datetime]) -> list[Any]:
    from contract_platform.evidence.records import QueueCounters

    return [QueueCounters(version.message_type, "/", "some.queue", at, True, 0, 0, 0, 0) for at in moments]

"""The ``readers`` check on the real broker: readers between audits, pollers, gaps, with names the platform never chose.

Each test runs the platform as a user does: the broker activity recorder (``contractctl record-activity``,
here in a thread or a process of its own) records into the test's registry, and ``audit_version`` with
``record=True`` runs three times a few seconds apart on a version whose ``retirement`` needs 3 audits
spanning 4 s. The sleeps between audits are the behaviour under test: the span has to pass.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.integration.retirement.reader_evidence_support import Audits, named_connection, readers, v1_message
from tests.support import broker
from tests.support.contracts import V1
from tests.support.retirement import force_status, provision_family, retire_declared
from tests.support.waiting import wait_until

from contract_platform.amqp import ManagementClient, plan_topology
from contract_platform.amqp.topology import Role
from contract_platform.catalog.model import Contract, Status
from contract_platform.evidence import Verdict
from contract_platform.store import SqlRegistry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


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


def test_a_poller_that_leaves_at_once_is_seen_by_the_delivery_trace(audits: Audits, version: Contract) -> None:
    # a cron job: connects, publishes one v1 message, takes it with basic.get and closes at once, long before the
    # broker's statistics interval counts its channel (so the counters may never move)
    queue = version.consumers[0].queue
    audits.run()
    audits.run()
    poll_once("month-end-poller", queue, "polled-1")
    verdict, blocker = readers(audits.run())
    assert verdict is Verdict.FAIL, blocker
    assert f"{queue} handed 1 message to month-end-poller from 127.0.0.1 as guest" in blocker


def test_twenty_fast_pollers_in_a_row_are_each_caught(audits: Audits, version: Contract) -> None:
    queue = version.consumers[0].queue
    audits.run()
    for number in range(20):
        name = f"month-end-poller-{number}"
        poll_once(name, queue, f"polled-{number}")
        audits.last = 0.0  # no span to wait for: each audit judges the poller just before it
        result = audits.run()
        check = result.check("readers")
        named = [o["text"] for o in check.figures["obstacles"] if o["kind"] == "reader"]
        assert check.verdict is Verdict.FAIL, check.blocker
        assert any(f"handed 1 message to {name} from" in text for text in named), (number, named)


def test_a_poller_that_peeks_and_requeues_is_a_reader(audits: Audits, version: Contract) -> None:
    queue = version.consumers[0].queue
    audits.run()
    peeker, channel = publishing_client("peeking-poller", queue, "peeked-1")
    method = wait_until(lambda: channel.basic_get(queue, auto_ack=False)[0], 10, 0.05, what="the peek's get")
    channel.basic_nack(method.delivery_tag, requeue=True)  # left as it was found
    peeker.close()
    verdict, blocker = readers(audits.run())
    assert verdict is Verdict.FAIL and "handed 1 message to peeking-poller" in blocker, blocker


def test_a_consumer_attached_for_fifty_milliseconds_is_a_reader(audits: Audits, version: Contract) -> None:
    queue = version.consumers[0].queue
    audits.run()
    brief, channel = publishing_client("brief-consumer", queue, "brief-1")
    channel.basic_consume(queue, lambda ch, method, props, body: ch.basic_ack(method.delivery_tag))
    brief.process_data_events(time_limit=0.05)
    brief.close()
    verdict, blocker = readers(audits.run())
    assert verdict is Verdict.FAIL and "brief-consumer" in blocker, blocker


def publishing_client(name: str, queue: str, message_id: str) -> tuple[Any, Any]:
    """A client named ``name`` that has just published one v1 message to ``queue``: its connection and channel."""
    client = named_connection(name)
    channel = client.channel()
    channel.basic_publish("", queue, *v1_message(message_id))
    return client, channel


def poll_once(name: str, queue: str, message_id: str) -> None:
    """A client that publishes one message, takes it with ``basic.get`` and closes its connection at once."""
    poller, channel = publishing_client(name, queue, message_id)
    wait_until(lambda: channel.basic_get(queue, auto_ack=True)[0] is not None, 10, 0.01, what=f"{name}'s get")
    poller.close()


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
    audits: Audits, version: Contract, registry: SqlRegistry, connection: Any, tmp_path: Path
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

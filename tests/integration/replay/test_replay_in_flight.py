"""Replay's in-flight messages on the real broker, each test in a virtual host of its own.

What a user relies on: every message of the version waiting in its queues, retry queues, DLQs and parking
lots comes back as an archive record, nothing is taken from the broker (depth and order unchanged), a
poisoned body is a record like any other, and what could not be read says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

import httpx
import pika
import pytest
from tests.support import broker
from tests.support.waiting import wait_until

from contract_platform.amqp import ManagementClient, open_connection, plan_topology
from contract_platform.amqp.connection import broker_version, close_quietly
from contract_platform.amqp.peek import peek
from contract_platform.amqp.topology import dlq_name, dlx_name, parking_lot_name, provision
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.replay.inflight import in_flight_records

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

ORDER_V1 = "order.order-created.v1"
OTHER = "billing.invoice-issued.v1"


@pytest.fixture
def management(vhost: str) -> ManagementClient:
    return ManagementClient.from_amqp_url(broker.url_of(vhost))


def order_contract(catalog: Catalog, queue_type: str = "classic") -> Contract:
    contract = catalog.contracts[ORDER_V1]
    return replace(contract, topology=replace(contract.topology, queue_type=queue_type))


@dataclass(frozen=True)
class Provisioned:
    """order.order-created.v1's topology on the broker, and a channel with publisher confirms."""

    contract: Contract
    channel: Any

    @property
    def work(self) -> str:
        return self.contract.consumers[0].queue

    def publish(self, number: int) -> None:
        """Message ``m-<number>`` of the version, through its exchange."""
        transport = self.contract.transport
        publish(self.channel, transport.exchange, transport.routing_key, envelope(number), ORDER_V1, f"m-{number}")


@pytest.fixture
def provisioned(connection: Any, management: ManagementClient, catalog: Catalog) -> Callable[..., Provisioned]:
    def make(queue_type: str = "classic") -> Provisioned:
        contract = order_contract(catalog, queue_type)
        provision(connection, plan_topology(contract), management=management)
        channel = connection.channel()
        channel.confirm_delivery()
        return Provisioned(contract, channel)

    return make


def envelope(number: int, message_type: str = ORDER_V1) -> bytes:
    metadata = {"messageId": f"m-{number}", "messageType": message_type}
    return json.dumps({"metadata": metadata, "payload": {"orderId": f"ORD-{number}"}}).encode()


def publish(channel: Any, exchange: str, key: str, body: bytes, message_type: str | None, message_id: str) -> None:
    properties = pika.BasicProperties(message_id=message_id, type=message_type, delivery_mode=2)
    channel.basic_publish(exchange, key, body, properties)


def contents(connection: Any, queue: str) -> list[str]:
    """messageIds in ``queue``, in order, read by draining it (the test's last look)."""
    return [properties.message_id for properties, _body in broker.drain(connection, queue)]


def test_messages_of_the_version_in_its_queues_come_back_as_records_and_stay_where_they_were(
    connection: Any, management: ManagementClient, provisioned: Callable[..., Provisioned], vhost: str
) -> None:
    version = provisioned()
    contract, work, channel = version.contract, version.work, version.channel
    exchange, key = contract.transport.exchange, contract.transport.routing_key
    version.publish(1)
    publish(channel, dlx_name(exchange), dlq_name(work), envelope(2), ORDER_V1, "m-2")  # rejected earlier
    publish(channel, dlx_name(exchange), dlq_name(work), envelope(3, OTHER), OTHER, "m-3")  # another type
    publish(channel, dlx_name(exchange), parking_lot_name(work), b"\xff\xfe not text", ORDER_V1, "m-4")  # poisoned
    publish(channel, dlx_name(exchange), dlq_name(work), b"[" * 100_000, None, "m-6")  # untyped, too deep to parse
    channel.queue_declare(
        "legacy-consumer.order.order-created.v1.errors", durable=True
    )  # not the platform's: its name holds the messageType
    publish(channel, "", "legacy-consumer.order.order-created.v1.errors", envelope(5), ORDER_V1, "m-5")
    before = {
        q: broker.depth(broker.url_of(vhost), q)[0]
        for q in (work, dlq_name(work), "legacy-consumer.order.order-created.v1.errors")
    }

    found = in_flight_records(connection, contract, management=management)

    by_queue = {
        queue: [r["properties"]["messageId"] for q, r in found.records if q == queue] for queue, _ in found.records
    }
    assert by_queue == {
        work: ["m-1"],
        contract.consumers[1].queue: ["m-1"],  # both consumers' queues hold the published message
        dlq_name(work): ["m-2"],
        parking_lot_name(work): ["m-4"],
        "legacy-consumer.order.order-created.v1.errors": ["m-5"],
    }
    records = {(q, r["properties"]["messageId"]): r for q, r in found.records}
    # the record names where the message was published, not the dead-letter exchange it came through
    assert {(r["exchange"], r["routingKey"]) for r in records.values()} == {
        (exchange, key),
        ("", "legacy-consumer.order.order-created.v1.errors"),
    }
    assert json.loads(records[(dlq_name(work), "m-2")]["body"])["metadata"]["messageId"] == "m-2"
    poisoned = records[(parking_lot_name(work), "m-4")]
    assert poisoned["body"] is None and poisoned["bodyBase64"]  # kept as the archiver keeps such bodies
    assert found.discovered and found.complete
    looked = {q.queue: q for q in found.queues}
    dlq = looked[dlq_name(work)]
    assert (dlq.depth, dlq.inspected, dlq.matching) == (3, 3, 1)
    assert looked["legacy-consumer.order.order-created.v1.errors"].role == "discovered"
    assert all(q.vhost == vhost and q.skipped is None for q in found.queues)
    assert {q: broker.depth(broker.url_of(vhost), q)[0] for q in before} == before
    assert contents(connection, dlq_name(work)) == ["m-2", "m-3", "m-6"]  # same messages, same order


@pytest.mark.parametrize("queue_type", ["classic", "quorum"])
def test_depth_and_order_are_unchanged_for_each_queue_type(
    connection: Any, management: ManagementClient, provisioned: Callable[..., Provisioned], queue_type: str
) -> None:
    version = provisioned(queue_type)
    work = version.work
    ids = [f"m-{n}" for n in range(6)]
    for number in range(len(ids)):
        version.publish(number)

    found = in_flight_records(connection, version.contract, management=management)

    looked = {q.queue: q for q in found.queues}[work]
    version = broker_version(connection)
    if queue_type == "quorum" and (version is None or version >= (4,)):
        assert looked.inspected == 0 and looked.skipped and "delivery limit" in looked.skipped
        assert not found.complete
    else:
        assert (looked.depth, looked.inspected, looked.matching, looked.skipped) == (6, 6, 6, None)
        assert [r["properties"]["messageId"] for q, r in found.records if q == work] == ids
    assert contents(connection, work) == ids


def test_without_the_management_api_the_versions_own_queues_are_still_read(
    connection: Any, management: ManagementClient, provisioned: Callable[..., Provisioned]
) -> None:
    version = provisioned()
    contract, work, channel = version.contract, version.work, version.channel
    publish(channel, dlx_name(contract.transport.exchange), dlq_name(work), envelope(1), ORDER_V1, "m-1")
    channel.queue_declare("legacy-consumer.order.order-created.v1.errors", durable=True)
    publish(channel, "", "legacy-consumer.order.order-created.v1.errors", envelope(2), ORDER_V1, "m-2")
    closed = ManagementClient("http://127.0.0.1:1", "guest", "guest", vhost=management.vhost, timeout=2)

    found = in_flight_records(connection, contract, management=closed)

    assert [(q, r["properties"]["messageId"]) for q, r in found.records] == [(dlq_name(work), "m-1")]
    assert not found.discovered and not found.complete
    assert found.note and "not looked for" in found.note and "does not answer" in found.note
    assert "legacy-consumer.order.order-created.v1.errors" not in {q.queue for q in found.queues}


def test_a_queue_deeper_than_the_bound_is_reported_incomplete(
    connection: Any, management: ManagementClient, provisioned: Callable[..., Provisioned]
) -> None:
    version = provisioned()
    for number in range(3):
        version.publish(number)

    found = in_flight_records(connection, version.contract, management=management, max_messages=2)

    work = version.work
    looked = {q.queue: q for q in found.queues}[work]
    assert (looked.depth, looked.inspected) == (3, 2)
    assert looked.skipped and "2 of 3" in looked.skipped and not found.complete
    assert contents(connection, work) == ["m-0", "m-1", "m-2"]


def test_a_queue_deleted_while_it_is_read_ends_the_peek_without_an_error(connection: Any, vhost: str) -> None:
    queue = "vanishing.dlq"
    channel = connection.channel()
    channel.confirm_delivery()
    channel.queue_declare(queue, durable=True)
    for number in range(3):
        publish(channel, "", queue, envelope(number), ORDER_V1, f"m-{number}")
    seen: list[str] = []
    other = open_connection(broker.url_of(vhost))

    def visit(_method: Any, properties: Any, _body: bytes) -> None:
        seen.append(properties.message_id)
        if len(seen) == 1:
            other.channel().queue_delete(queue)

    try:
        outcome = peek(connection, queue, limit=10, info={}, version=broker_version(connection), visit=visit)
    finally:
        close_quietly(other)

    assert outcome.vanished and outcome.depth == 3 and seen[0] == "m-0"
    assert outcome.complete  # a vanished queue holds nothing: not a reason to call the look unfinished


def test_a_quorum_queue_under_a_delivery_limit_policy_is_not_read(
    connection: Any, management: ManagementClient, provisioned: Callable[..., Provisioned], vhost: str
) -> None:
    version = provisioned("quorum")
    contract, work, channel = version.contract, version.work, version.channel
    publish(channel, dlx_name(contract.transport.exchange), dlq_name(work), envelope(1), ORDER_V1, "m-1")
    policy = {"pattern": r"\.dlq$", "definition": {"delivery-limit": 5}, "apply-to": "queues"}
    path = f"policies/{quote(vhost, safe='')}/limit-dlqs"
    httpx.put(f"{broker.API}/{path}", auth=broker.AUTH, json=policy, timeout=10).raise_for_status()
    wait_until(
        lambda: (
            management.queue(dlq_name(work)) and management.queue(dlq_name(work)).get("effective_policy_definition")
        ),
        what=f"the policy applied to {dlq_name(work)}",
    )

    found = in_flight_records(connection, contract, management=management)

    looked = {q.queue: q for q in found.queues}[dlq_name(work)]
    assert looked.inspected == 0 and looked.skipped and "delivery limit of 5" in looked.skipped
    assert not found.records and not found.complete
    assert contents(connection, dlq_name(work)) == ["m-1"]


def test_without_the_management_api_quorum_queues_are_not_read(
    connection: Any, management: ManagementClient, provisioned: Callable[..., Provisioned]
) -> None:
    version = provisioned("quorum")
    work = version.work
    version.publish(1)
    broker.wait_for_depth(broker.url_of(management.vhost), work, 1)

    found = in_flight_records(connection, version.contract, management=None)

    looked = {q.queue: q for q in found.queues}[work]
    assert (looked.depth, looked.inspected) == (1, 0)  # its depth is known, its messages were not touched
    assert looked.skipped and "policies cannot be seen" in looked.skipped
    assert not found.records and not found.discovered
    assert contents(connection, work) == ["m-1"]

"""The dead-letter scan on the real broker: it finds messages of the type and leaves depth and order unchanged."""

from __future__ import annotations

import json
from typing import Any

import pika
import pytest
from tests.support import broker
from tests.support.contracts import V1, V2

from contract_platform.amqp import ManagementClient, plan_topology
from contract_platform.amqp.inspection import passive_queue
from contract_platform.catalog.model import Catalog
from contract_platform.evidence import Verdict
from contract_platform.retirement import check_dead_letters, scan_dead_letters

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def publish_mixed(channel: Any, queue: str, tag: str) -> list[str]:
    """Five messages: v1 by property, v2, another family, v1 by header only, v1 by body only."""
    ids = [f"{tag}-{n}" for n in range(5)]
    messages: list[tuple[pika.BasicProperties, dict[str, Any]]] = [
        (pika.BasicProperties(message_id=ids[0], type=V1), {"metadata": {"messageType": V1}}),
        (pika.BasicProperties(message_id=ids[1], type=V2), {"metadata": {"messageType": V2}}),
        (pika.BasicProperties(message_id=ids[2], type="order.order-created.v1"), {}),
        (pika.BasicProperties(message_id=ids[3], headers={"message-type": V1}), {}),
        (pika.BasicProperties(message_id=ids[4]), {"metadata": {"messageType": V1}}),
    ]
    for properties, body in messages:
        properties.delivery_mode = 2
        channel.basic_publish("", queue, json.dumps(body).encode(), properties)
    return ids


def drain(connection: Any, queue: str) -> list[tuple[str, Any]]:
    """Every message now in ``queue``: (messageId, x-delivery-count) in order."""
    return [(p.message_id, (p.headers or {}).get("x-delivery-count")) for p, _body in broker.drain(connection, queue)]


@pytest.mark.parametrize("queue_type", ["classic", "quorum"])
def test_the_scan_finds_the_type_and_leaves_depth_and_order_unchanged(
    connection: Any, contracts: Catalog, prefix: str, management: ManagementClient, queue_type: str
) -> None:
    contract = contracts.contracts[V1]
    channel = connection.channel()
    channel.confirm_delivery()
    queues = [f"{prefix}billing-bridge.{V1}.dlq", f"{prefix}other-service.{V2}.parking-lot"]
    published = {}
    for queue in queues:
        channel.queue_declare(queue, durable=True, arguments={"x-queue-type": queue_type})
        published[queue] = publish_mixed(channel, queue, queue.rsplit(".", 1)[-1])
    depth_before = {queue: passive_queue(connection, queue) for queue in queues}

    scan = scan_dead_letters(
        connection, contract, plan_topology(contract), snapshot=None, management=management, scope=prefix
    )

    assert scan.coverage == "broker"
    by_name = {q.queue: q for q in scan.queues}
    assert set(by_name) == set(queues)  # found by name through the API, nothing outside the prefix
    for queue in queues:
        assert (by_name[queue].depth, by_name[queue].inspected, by_name[queue].matching) == (5, 5, 3)
        assert by_name[queue].family == {V2: 1}
    assert {queue: passive_queue(connection, queue) for queue in queues} == depth_before == {q: (5, 0) for q in queues}
    for queue in queues:
        drained = drain(connection, queue)
        assert [message_id for message_id, _ in drained] == published[queue]  # same messages, same order
        expected_count = 1 if queue_type == "quorum" else None  # quorum: the requeue counted as a delivery
        assert {count for _, count in drained} == {expected_count}
    result = check_dead_letters(contract, scan)
    assert result.verdict is Verdict.FAIL and result.figures["matching"] == 6
    assert (queue_type == "quorum") == ("x-delivery-count" in result.figures.get("note", ""))


def test_a_quorum_queue_with_a_delivery_limit_is_flagged_and_never_read(
    connection: Any, contracts: Catalog, prefix: str, management: ManagementClient
) -> None:
    contract = contracts.contracts[V1]
    queue = f"{prefix}fragile.{V1}.dlq"
    channel = connection.channel()
    channel.confirm_delivery()
    channel.queue_declare(queue, durable=True, arguments={"x-queue-type": "quorum", "x-delivery-limit": 2})
    ids = publish_mixed(channel, queue, "fragile")

    scan = scan_dead_letters(
        connection, contract, plan_topology(contract), snapshot=None, management=management, scope=prefix
    )
    result = check_dead_letters(contract, scan)

    [scanned] = scan.queues
    assert scanned.inspected == 0 and "delivery limit of 2" in (scanned.skipped or "")
    assert result.verdict is Verdict.UNKNOWN and queue in (result.blocker or "")
    # first delivery now (a queue with a limit counts from 0): the scan never took or requeued any of them
    assert drain(connection, queue) == [(message_id, 0) for message_id in ids]


def test_without_the_management_api_only_the_own_queues_are_scanned_and_it_says_so(
    connection: Any, contracts: Catalog, prefix: str
) -> None:
    from contract_platform.amqp import provision

    contract = contracts.contracts[V1]
    plan = plan_topology(contract)
    provision(connection, plan, management=None)
    foreign = f"{prefix}someone-else.{V1}.dlq"
    connection.channel().queue_declare(foreign, durable=True)
    connection.channel().basic_publish("", foreign, b"{}", pika.BasicProperties(type=V1))

    scan = scan_dead_letters(connection, contract, plan, snapshot=None, scope=prefix)
    result = check_dead_letters(contract, scan)

    assert scan.coverage == "version" and foreign not in {q.queue for q in scan.queues}
    assert len(scan.queues) == 4  # two DLQs and two parking lots of v1's two consumers
    assert result.verdict is Verdict.UNKNOWN and "management API" in (result.blocker or "")

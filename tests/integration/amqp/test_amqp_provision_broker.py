"""Provisioning against the real broker: idempotent, and never touching what is already there."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from contract_platform.amqp import Outcome, Publisher, inspect_queue, plan_topology, provision, remove_topology
from contract_platform.amqp.http import ManagementClient
from contract_platform.amqp.inspection import exchange_exists, passive_queue
from contract_platform.catalog.model import Contract
from contract_platform.errors import TopologyConflict

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def _arguments(management: ManagementClient, names: list[str]) -> dict[str, Any]:
    return {name: (management.queue(name) or {}).get("arguments") for name in names}


def test_provision_twice_creates_everything_once_and_changes_nothing(
    connection: Any, contract: Contract, management: ManagementClient
) -> None:
    plan = plan_topology(contract)
    queue_names = [q.name for q in plan.queues]

    first = provision(connection, plan)

    assert set(first.created) == {x.name for x in plan.exchanges} | set(queue_names) | {b.name for b in plan.bindings}
    assert first.conflicts == ()
    for queue in plan.queues:
        assert passive_queue(connection, queue.name) == (0, 0)
        assert (management.queue(queue.name) or {}).get("arguments") == dict(queue.arguments)
    for exchange in plan.exchanges:
        assert exchange_exists(connection, exchange.name)
        assert (management.exchange(exchange.name) or {}).get("type") == "topic"
    for binding in plan.bindings:
        bound = management.bindings(binding.exchange, binding.queue) or []
        assert binding.routing_key in {b.get("routing_key") for b in bound}, binding.name
    before = _arguments(management, queue_names)

    second = provision(connection.channel(), plan)  # a channel works too; only its connection is used

    assert second.created == []
    assert not second.changed
    assert {step.outcome for step in second.steps} == {Outcome.PRESENT}
    assert _arguments(management, queue_names) == before


def test_provision_without_management_api_relies_on_the_broker_and_creates_nothing_twice(
    connection: Any, contract: Contract
) -> None:
    plan = plan_topology(contract)
    provision(connection, plan, management=None)

    second = provision(connection, plan, management=None)

    assert second.created == []
    assert {s.outcome for s in second.steps if s.kind != "binding"} == {Outcome.PRESENT}
    assert {s.outcome for s in second.steps if s.kind == "binding"} == {Outcome.ENSURED}
    assert all(passive_queue(connection, q.name) is not None for q in plan.queues)


def _occupy(connection: Any, queue: str) -> None:
    """Declare ``queue`` the old way (classic, no dead-lettering) and leave one message in it."""
    channel = connection.channel()
    channel.confirm_delivery()
    channel.queue_declare(queue, durable=True)
    channel.basic_publish("", queue, b'{"keep": "me"}')
    channel.close()


def test_conflicting_queue_is_reported_with_both_versions_and_left_untouched(
    connection: Any, contract: Contract, management: ManagementClient
) -> None:
    plan = plan_topology(contract)
    queue = contract.consumers[0].queue
    _occupy(connection, queue)

    with pytest.raises(TopologyConflict) as caught:
        provision(connection, plan)

    conflict = caught.value
    assert conflict.name == queue
    assert conflict.existing == {"type": "classic", "durable": True, "arguments": {}}
    assert conflict.wanted == {"durable": True, "arguments": dict(plan.queue(queue).arguments)}
    assert "'x-queue-type': 'quorum'" in str(conflict) and "'arguments': {}" in str(conflict)
    assert passive_queue(connection, queue) == (1, 0)
    info = management.queue(queue) or {}
    assert (info.get("type"), info.get("arguments")) == ("classic", {})
    # everything else was provisioned; the conflicting queue's binding was not made
    report = provision(connection, plan, strict=False)
    assert [c.name for c in report.conflicts] == [queue]
    skipped = [s.name for s in report.steps if s.outcome is Outcome.SKIPPED]
    assert skipped == [b.name for b in plan.bindings if b.queue == queue]
    assert all(passive_queue(connection, q.name) is not None for q in plan.queues)
    assert management.bindings(contract.transport.exchange, queue) == []


def test_conflict_without_management_api_comes_from_the_brokers_406(connection: Any, contract: Contract) -> None:
    plan = plan_topology(contract)
    queue = contract.consumers[0].queue
    _occupy(connection, queue)

    with pytest.raises(TopologyConflict) as caught:
        provision(connection, plan, management=None)

    conflict = caught.value
    assert conflict.name == queue
    assert conflict.wanted == plan.queue(queue).wanted()
    assert conflict.existing is not None
    assert str(conflict.existing["unknown"]).startswith("406 PRECONDITION_FAILED: inequivalent arg")
    assert passive_queue(connection, queue) == (1, 0)


@pytest.mark.parametrize("api", ["auto", None])
def test_conflicting_exchange_type_is_reported_and_left_alone(
    connection: Any, contract: Contract, management: ManagementClient, api: Any
) -> None:
    exchange = contract.transport.exchange
    connection.channel().exchange_declare(exchange, exchange_type="direct", durable=True)

    with pytest.raises(TopologyConflict) as caught:
        provision(connection, plan_topology(contract), management=api)

    assert caught.value.name == exchange
    assert caught.value.wanted == {"type": "topic", "durable": True}
    if api == "auto":
        assert caught.value.existing == {"type": "direct", "durable": True}
    assert (management.exchange(exchange) or {}).get("type") == "direct"


def test_remove_topology_keeps_what_holds_messages_and_shared_exchanges(
    connection: Any,
    contract: Contract,
    validator: Any,
    envelope: Callable[..., dict[str, Any]],
) -> None:
    plan = plan_topology(contract)
    provision(connection, plan)
    Publisher(connection, validator).publish(envelope())
    queue = contract.consumers[0].queue
    archive = f"archive.{contract.transport.exchange}"

    shared = remove_topology(connection, plan, exchanges_in_use=[contract.transport.exchange])

    assert set(shared.kept) == {queue, contract.transport.exchange, f"{contract.transport.exchange}.dlx"}
    assert set(shared.deleted) == {q.name for q in plan.queues} - {queue, archive}
    assert passive_queue(connection, queue) == (1, 0)
    assert passive_queue(connection, archive) == (1, 0)

    connection.channel().queue_purge(queue)
    connection.channel().queue_purge(archive)
    retired = remove_topology(connection, plan, exchanges_in_use=[])

    assert set(retired.deleted) == {queue, archive, contract.transport.exchange, f"{contract.transport.exchange}.dlx"}
    assert not inspect_queue(connection, queue).exists
    assert not exchange_exists(connection, contract.transport.exchange)

"""plan_topology: the names of docs/design.md#topology-names and the arguments that make the routing work."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from types import SimpleNamespace

import pytest

from contract_platform.amqp import Binding, Exchange, Role, plan_topology, provision
from contract_platform.catalog.model import Contract
from contract_platform.errors import BrokerError, CatalogError

Q = "accounting-service.billing.invoice-issued.v1"
AT_LEAST_ONCE = {"x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish"}


def test_plan_names_and_arguments_follow_design_section_4(make_contract: Callable[..., Contract]) -> None:
    plan = plan_topology(make_contract())

    assert plan.exchanges == (Exchange("billing.events", "topic", True), Exchange("billing.events.dlx", "topic", True))
    assert [(q.name, q.role, dict(q.arguments)) for q in plan.queues] == [
        (f"{Q}.dlq", Role.DLQ, {"x-queue-type": "quorum"}),
        (f"{Q}.parking-lot", Role.PARKING_LOT, {"x-queue-type": "quorum"}),
        (
            f"{Q}.retry.30s",
            Role.RETRY,
            {
                "x-queue-type": "quorum",
                "x-message-ttl": 30_000,
                "x-dead-letter-exchange": "",
                "x-dead-letter-routing-key": Q,
            }
            | AT_LEAST_ONCE,
        ),
        (
            f"{Q}.retry.5m",
            Role.RETRY,
            {
                "x-queue-type": "quorum",
                "x-message-ttl": 300_000,
                "x-dead-letter-exchange": "",
                "x-dead-letter-routing-key": Q,
            }
            | AT_LEAST_ONCE,
        ),
        (
            Q,
            Role.CONSUMER,
            {
                "x-queue-type": "quorum",
                "x-dead-letter-exchange": "billing.events.dlx",
                "x-dead-letter-routing-key": f"{Q}.dlq",
            }
            | AT_LEAST_ONCE,
        ),
        ("archive.billing.events", Role.ARCHIVE, {"x-queue-type": "quorum"}),
    ]
    assert all(q.durable for q in plan.queues)
    assert all(q.serves == Q for q in plan.queues_of(Role.DLQ, Role.PARKING_LOT, Role.RETRY))
    assert set(plan.bindings) == {
        Binding("billing.events", Q, "billing.invoice.issued.v1"),
        Binding("billing.events.dlx", f"{Q}.dlq", f"{Q}.dlq"),
        Binding("billing.events.dlx", f"{Q}.parking-lot", f"{Q}.parking-lot"),
        Binding("billing.events.dlx", f"{Q}.retry.30s", f"{Q}.retry.30s"),
        Binding("billing.events.dlx", f"{Q}.retry.5m", f"{Q}.retry.5m"),
        Binding("billing.events", "archive.billing.events", "#"),
    }
    assert len(plan.bindings) == 6


def test_rejected_messages_route_to_the_dlq_and_retries_come_back(make_contract: Callable[..., Contract]) -> None:
    """Follow the arguments the broker will follow, without a broker."""
    plan = plan_topology(make_contract())
    consumer = plan.queue(Q)
    to_dlx = [b for b in plan.bindings if b.exchange == consumer.arguments["x-dead-letter-exchange"]]
    assert [b.queue for b in to_dlx if b.routing_key == consumer.arguments["x-dead-letter-routing-key"]] == [f"{Q}.dlq"]
    for retry in plan.queues_of(Role.RETRY):
        # default exchange "": the routing key is the queue name
        assert (retry.arguments["x-dead-letter-exchange"], retry.arguments["x-dead-letter-routing-key"]) == ("", Q)
    assert "x-message-ttl" not in plan.queue(f"{Q}.dlq").arguments
    assert "x-message-ttl" not in plan.queue(f"{Q}.parking-lot").arguments


def test_classic_contracts_get_classic_queues_but_the_shared_archive_stays_quorum(
    make_contract: Callable[..., Contract],
) -> None:
    plan = plan_topology(make_contract(queue_type="classic"))

    for queue in plan.queues_of(Role.CONSUMER, Role.RETRY, Role.DLQ, Role.PARKING_LOT):
        assert queue.arguments["x-queue-type"] == "classic"
        assert "x-dead-letter-strategy" not in queue.arguments  # quorum-only argument
    assert plan.queue("archive.billing.events").arguments == {"x-queue-type": "quorum"}


def test_one_set_of_queues_per_consumer_and_one_retry_queue_per_distinct_delay(
    make_contract: Callable[..., Contract],
) -> None:
    contract = make_contract(
        queues=("a.billing.invoice-issued.v1", "b.billing.invoice-issued.v1"),
        retry_delays=(timedelta(seconds=60), timedelta(minutes=1), timedelta(hours=2)),
    )

    plan = plan_topology(contract)

    assert [q.name for q in plan.queues_of(Role.RETRY)] == [
        "a.billing.invoice-issued.v1.retry.1m",
        "a.billing.invoice-issued.v1.retry.2h",
        "b.billing.invoice-issued.v1.retry.1m",
        "b.billing.invoice-issued.v1.retry.2h",
    ]
    assert len(plan.queues_of(Role.CONSUMER)) == 2
    assert len(plan.queues_of(Role.ARCHIVE)) == 1


def test_unknown_queue_type_is_a_catalog_error_pointing_at_the_field(make_contract: Callable[..., Contract]) -> None:
    with pytest.raises(CatalogError) as caught:
        plan_topology(make_contract(queue_type="stream"))

    problem = caught.value.problems[0]
    assert problem.pointer == "/topology/queueType"
    assert problem.file.endswith("contract.yaml")
    assert "'stream'" in problem.message


def test_plan_queue_lookup_names_the_contract_when_missing(make_contract: Callable[..., Contract]) -> None:
    with pytest.raises(KeyError, match="billing.invoice-issued.v1"):
        plan_topology(make_contract()).queue("nope")


def test_provision_refuses_a_broker_too_old_for_the_plan_before_declaring_anything(
    make_contract: Callable[..., Contract],
) -> None:
    class OldBroker:
        _impl = SimpleNamespace(server_properties={"version": "3.9.29"}, params=None)

        def channel(self) -> None:
            raise AssertionError("nothing may be declared on a broker that cannot hold the plan")

    with pytest.raises(BrokerError, match=r"is 3\.9\.29; .* need 3\.10 or later") as caught:
        provision(OldBroker(), plan_topology(make_contract()), management=None)
    assert "queueType: classic" in str(caught.value)

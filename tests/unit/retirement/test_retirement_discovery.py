"""discover_queues over a broker topology built in code: the platform's own, plus what services declared."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tests.support.topologies import HOME
from tests.support.topologies import broker_topology as broker

from contract_platform.amqp import plan_topology
from contract_platform.amqp.management import BrokerTopology, ConsumerInfo, PolicyInfo, QueueInfo, VhostTopology
from contract_platform.amqp.routing import BindingInfo, ExchangeInfo
from contract_platform.catalog.model import Contract
from contract_platform.retirement.discovery import Found, discover_queues


def found(entries: Iterable[Any]) -> dict[str, set[Found]]:
    return {entry.queue: set(entry.found) for entry in entries}


def test_the_platform_topology_alone(v1: Contract) -> None:
    discovery = discover_queues(v1, plan_topology(v1), broker(v1), home_vhost=HOME)

    receivers = found(discovery.receivers)
    consumer = v1.consumers[0].queue
    assert receivers[consumer] == {Found.PLATFORM, Found.BINDING}
    assert receivers[f"{consumer}.dlq"] == {Found.PLATFORM}
    assert "archive.billing.events" not in receivers and discovery.excluded == ("archive.billing.events",)
    dead = found(discovery.dead_letter_queues)
    # the consumer queue dead-letters to <exchange>.dlx with key <queue>.dlq: that DLQ only, not the retry queue
    assert dead[f"{consumer}.dlq"] == {Found.PLATFORM, Found.DLX, Found.NAME}
    assert dead[f"{consumer}.parking-lot"] == {Found.PLATFORM, Found.NAME}
    assert f"{consumer}.retry.30s" not in dead
    # a retry queue hands messages back to work through the default exchange: that is not a dead-letter queue
    assert consumer not in dead


def test_a_service_queue_bound_with_a_wildcard_receives_the_version_and_names_its_readers(v1: Contract) -> None:
    reader = ConsumerInfo("ctag-1", "10.0.0.9:5123 -> 10.0.0.2:5672", "ledger-reader", "10.0.0.9", "ledger")
    topology = broker(
        v1,
        queues=[QueueInfo(HOME, "ledger.invoices", "classic", consumers=1), QueueInfo(HOME, "ledger.v2", "classic")],
        bindings=[
            BindingInfo("billing.events", "ledger.invoices", "queue", "billing.*.issued.#"),
            BindingInfo("billing.events", "ledger.v2", "queue", "billing.invoice.issued.v2"),
        ],
        consumers={"ledger.invoices": (reader,)},
    )

    discovery = discover_queues(v1, plan_topology(v1), topology, home_vhost=HOME)

    entry = next(e for e in discovery.receivers if e.queue == "ledger.invoices")
    assert entry.found == [Found.BINDING] and entry.role is None and entry.readers == (reader,)
    assert "billing.events -> ledger.invoices" in entry.why[0]
    assert "ledger.v2" not in found(discovery.receivers)


def test_dead_letter_queues_by_argument_policy_operator_policy_and_default_exchange(v1: Contract) -> None:
    topology = broker(
        v1,
        queues=[
            QueueInfo(HOME, "svc.in", "classic", {"x-dead-letter-exchange": "svc.dlx"}),
            QueueInfo(HOME, "svc.graveyard", "classic"),
            QueueInfo(HOME, "ops.kept", "classic"),
            QueueInfo(HOME, "pol.kept", "classic"),
            QueueInfo(HOME, "work", "quorum", {}, {"dead-letter-exchange": "", "dead-letter-routing-key": "work.held"}),
            QueueInfo(HOME, "work.held", "quorum"),
            QueueInfo(HOME, "Orders_Error", "classic"),
            QueueInfo(HOME, "plain", "classic"),
        ],
        exchanges=[ExchangeInfo("svc.dlx", "fanout"), ExchangeInfo("ops.dlx", "direct"), ExchangeInfo("pol.dlx")],
        bindings=[
            BindingInfo("svc.dlx", "svc.graveyard", "queue"),
            BindingInfo("ops.dlx", "ops.kept", "queue", "anything"),
            BindingInfo("pol.dlx", "pol.kept", "queue", "#"),
        ],
        policies=[
            PolicyInfo("ops", ".*", "queues", {"dead-letter-exchange": "ops.dlx"}, operator=True),
            PolicyInfo("pol", "^nothing-yet$", "all", {"dead-letter-exchange": "pol.dlx"}),
        ],
    )

    dead = found(discover_queues(v1, plan_topology(v1), topology, home_vhost=HOME).dead_letter_queues)

    assert dead["svc.graveyard"] == {Found.DLX}
    assert dead["ops.kept"] == {Found.POLICY}  # the DLX named by an operator policy, any routing key
    assert dead["pol.kept"] == {Found.POLICY}  # a policy's DLX counts even before a queue matches it
    assert dead["work.held"] == {Found.POLICY}  # the default exchange with a dead-letter routing key
    assert dead["Orders_Error"] == {Found.NAME}  # the naming net ignores case
    assert "plain" not in dead and "svc.in" not in dead


def test_the_naming_net_and_the_scope_are_settings(v1: Contract) -> None:
    topology = broker(v1, queues=[QueueInfo(HOME, "svc.poison", "classic"), QueueInfo(HOME, "svc_error", "classic")])
    consumer = v1.consumers[0].queue

    dead = found(
        discover_queues(v1, plan_topology(v1), topology, home_vhost=HOME, suffixes=(".poison",)).dead_letter_queues
    )
    scoped = found(discover_queues(v1, plan_topology(v1), topology, home_vhost=HOME, scope="svc").dead_letter_queues)

    assert dead["svc.poison"] == {Found.NAME} and "svc_error" not in dead
    assert set(scoped) == {"svc_error"} and f"{consumer}.dlq" not in scoped


def test_other_watched_vhosts_are_searched_too(v1: Contract) -> None:
    home = broker(v1).vhosts[HOME]
    other = VhostTopology(
        "legacy",
        {"billing.events": ExchangeInfo("billing.events", "topic")},
        (BindingInfo("billing.events", "old-reader", "queue", "billing.#"),),
        {"old-reader": QueueInfo("legacy", "old-reader", "classic"), "x.dlq": QueueInfo("legacy", "x.dlq", "classic")},
        (),
        {},
    )
    topology = BrokerTopology({HOME: home, "legacy": other}, "http://broker:15672")

    discovery = discover_queues(v1, plan_topology(v1), topology, home_vhost=HOME)

    assert ("legacy", "old-reader") in {(e.vhost, e.queue) for e in discovery.receivers}
    assert ("legacy", "x.dlq") in {(e.vhost, e.queue) for e in discovery.dead_letter_queues}
    assert discovery.vhosts == (HOME, "legacy")


def test_the_platform_bridge_tap_queue_is_known_as_the_platforms(v1: Contract) -> None:
    tap = f"bridge.{v1.message_type}"
    topology = broker(
        v1,
        queues=[QueueInfo(HOME, tap, "quorum")],
        bindings=[BindingInfo("billing.events", tap, "queue", v1.transport.routing_key)],
    )

    receivers = found(discover_queues(v1, plan_topology(v1), topology, home_vhost=HOME).receivers)

    assert receivers[tap] == {Found.BINDING, Found.PLATFORM}


def test_a_dlq_found_many_times_over_keeps_a_few_reasons_and_counts_the_rest(v1: Contract) -> None:
    topology = broker(
        v1,
        queues=[QueueInfo(HOME, "shared.kept", "classic")],
        exchanges=[ExchangeInfo("shared.dlx", "fanout")],
        bindings=[BindingInfo("shared.dlx", "shared.kept", "queue")],
        policies=[
            PolicyInfo(f"team{n}", f"^team{n}\\.", "queues", {"dead-letter-exchange": "shared.dlx"}) for n in range(10)
        ],
    )

    entry = next(
        e
        for e in discover_queues(v1, plan_topology(v1), topology, home_vhost=HOME).dead_letter_queues
        if e.queue == "shared.kept"
    )

    assert entry.found == [Found.POLICY]
    assert len(entry.reasons) == 4 and entry.reasons[-1] == "and 7 more"
    assert entry.reasons[0].startswith("policy team0 (pattern ^team0\\.) dead-letters shared.dlx -> shared.kept")

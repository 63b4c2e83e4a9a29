"""Which dead-letter queues belong to a version (``Discovery.attributed``): replay reads only these.

Two contracts share one broker: a version's own DLQs, the DLQs its receivers dead-letter into (by argument
or policy), what its exchange's ``.dlx`` routes its key to, and DLQs named after its queues are its own;
another contract's DLQs, found broker-wide all the same, are not."""

from __future__ import annotations

from dataclasses import replace

from tests.support.contracts import build_contract
from tests.support.topologies import HOME

from contract_platform.amqp import plan_topology
from contract_platform.amqp.management import BrokerTopology, PolicyInfo, QueueInfo, VhostTopology
from contract_platform.amqp.routing import BindingInfo, ExchangeInfo
from contract_platform.catalog.model import Contract, Transport
from contract_platform.retirement.discovery import dead_letter_index, discover_queues


def cases() -> Contract:
    contract = build_contract("billing.invoice-issued.v1")
    transport = Transport(exchange="cases.events", routing_key="cases.case.closed.v1")
    return replace(contract, message_type="cases.case-closed.v1", transport=transport, consumers=())


def two_contracts(billing: Contract, closed: Contract) -> BrokerTopology:
    """Both contracts' platform topologies, plus what services declared next to them."""
    queues: dict[str, QueueInfo] = {}
    exchanges: dict[str, ExchangeInfo] = {}
    bindings: list[BindingInfo] = []
    for contract in (billing, closed):
        plan = plan_topology(contract)
        queues |= {q.name: QueueInfo(HOME, q.name, q.queue_type, dict(q.arguments)) for q in plan.queues}
        exchanges |= {x.name: ExchangeInfo(x.name, x.type) for x in plan.exchanges}
        bindings += [BindingInfo(b.exchange, b.queue, "queue", b.routing_key) for b in plan.bindings]
    declared = [
        # a service reading cases: it dead-letters by argument to its own DLX
        QueueInfo(HOME, "support.cases", "classic", {"x-dead-letter-exchange": "support.dlx"}),
        QueueInfo(HOME, "support.graveyard", "classic"),
        # a service reading billing: its dead letters go by policy to a shared DLX, keyed by routing key
        QueueInfo(HOME, "ledger.invoices", "classic", {}, {"dead-letter-exchange": "shared.dlx"}),
        QueueInfo(HOME, "shared.cases.dead", "classic"),
        QueueInfo(HOME, "shared.billing.dead", "classic"),
        # named after a queue of cases, and after billing's messageType
        QueueInfo(HOME, "support.cases_error", "classic"),
        QueueInfo(HOME, "billing.invoice-issued.v1.dlq", "classic"),
        # a DLQ bound to cases.events.dlx with a pattern of its key
        QueueInfo(HOME, "cases.all.dlq", "classic"),
    ]
    queues |= {q.name: q for q in declared}
    exchanges |= {
        "support.dlx": ExchangeInfo("support.dlx", "fanout"),
        "shared.dlx": ExchangeInfo("shared.dlx", "topic"),
    }
    bindings += [
        BindingInfo("cases.events", "support.cases", "queue", "cases.#"),
        BindingInfo("support.dlx", "support.graveyard", "queue"),
        BindingInfo("billing.events", "ledger.invoices", "queue", "billing.#"),
        BindingInfo("shared.dlx", "shared.cases.dead", "queue", "cases.#"),
        BindingInfo("shared.dlx", "shared.billing.dead", "queue", "billing.#"),
        BindingInfo("cases.events.dlx", "cases.all.dlq", "queue", "cases.case.*.v1"),
    ]
    policies = (PolicyInfo("shared-dlx", "^ledger\\.", "queues", {"dead-letter-exchange": "shared.dlx"}),)
    return BrokerTopology({HOME: VhostTopology(HOME, exchanges, tuple(bindings), queues, policies, {})}, "http://x")


def attributed(contract: Contract, topology: BrokerTopology) -> set[str]:
    discovery = discover_queues(contract, plan_topology(contract), topology, home_vhost=HOME)
    return {entry.queue for entry in discovery.attributed}


def test_each_version_is_attributed_its_own_dead_letter_queues_only() -> None:
    billing = build_contract("billing.invoice-issued.v1", consumers=("crm",))
    closed = cases()
    topology = two_contracts(billing, closed)

    own_billing = {"crm.billing.invoice-issued.v1.dlq", "crm.billing.invoice-issued.v1.parking-lot"}
    assert attributed(billing, topology) == own_billing | {"shared.billing.dead", "billing.invoice-issued.v1.dlq"}
    assert attributed(closed, topology) == {"support.graveyard", "support.cases_error", "cases.all.dlq"}


def test_discovery_still_finds_every_dead_letter_queue_broker_wide_with_a_shared_index() -> None:
    billing = build_contract("billing.invoice-issued.v1", consumers=("crm",))
    closed = cases()
    topology = two_contracts(billing, closed)
    index = dead_letter_index(topology)

    first = discover_queues(closed, plan_topology(closed), topology, home_vhost=HOME, index=index)
    second = discover_queues(billing, plan_topology(billing), topology, home_vhost=HOME, index=index)
    again = discover_queues(closed, plan_topology(closed), topology, home_vhost=HOME, index=index)

    dead = {entry.queue for entry in first.dead_letter_queues}
    assert {"shared.billing.dead", "crm.billing.invoice-issued.v1.dlq", "support.graveyard"} <= dead
    # the index is shared: one version's own queues never become another's platform queues
    crm_dlq = next(e for e in second.dead_letter_queues if e.queue == "crm.billing.invoice-issued.v1.dlq")
    assert crm_dlq.role is not None
    assert all(e.role is None for e in again.dead_letter_queues)
    assert {e.queue for e in again.attributed} == {e.queue for e in first.attributed}

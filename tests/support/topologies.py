"""Broker topologies built in code, as the management API would list them (no broker needed).

Used by the retirement discovery tests and by ``benchmarks/audit_discovery.py`` (which puts the
repository root on ``sys.path`` to import it: docs/contributing.md#test-support).
"""

from __future__ import annotations

from collections.abc import Iterable

from contract_platform.amqp import plan_topology
from contract_platform.amqp.management import BrokerTopology, ConsumerInfo, PolicyInfo, QueueInfo, VhostTopology
from contract_platform.amqp.routing import BindingInfo, ExchangeInfo
from contract_platform.catalog.model import Contract

HOME = "/"
API_URL = "http://broker:15672"


def broker_topology(
    contract: Contract,
    *,
    queues: Iterable[QueueInfo] = (),
    bindings: Iterable[BindingInfo] = (),
    exchanges: Iterable[ExchangeInfo] = (),
    policies: Iterable[PolicyInfo] = (),
    consumers: dict[str, tuple[ConsumerInfo, ...]] | None = None,
    vhost: str = HOME,
) -> BrokerTopology:
    """The version's provisioned topology as the management API would list it, plus ``queues``, ``bindings``..."""
    plan = plan_topology(contract)
    listed = {q.name: QueueInfo(vhost, q.name, q.queue_type, dict(q.arguments)) for q in plan.queues}
    listed |= {q.name: q for q in queues}
    known = {x.name: ExchangeInfo(x.name, x.type) for x in plan.exchanges} | {x.name: x for x in exchanges}
    wired = [BindingInfo(b.exchange, b.queue, "queue", b.routing_key) for b in plan.bindings] + list(bindings)
    hosted = VhostTopology(vhost, known, tuple(wired), listed, tuple(policies), consumers or {})
    return BrokerTopology({vhost: hosted}, API_URL)


def many_services(services: int, *, shared_dlx_policies: int = 20) -> BrokerTopology:
    """A broker where many services declared their own arrangement next to ``billing.events``.

    Per service ``<svc>.in`` bound to ``billing.events`` (one in ten with a pattern that matches
    ``billing.invoice.issued.v1``), a DLX ``<svc>.dlx`` with ``<svc>.dead`` bound to it, and
    ``<svc>_error``; ``shared_dlx_policies`` policies name a shared DLX every ``<svc>.dead`` is bound
    to, as on a broker where teams share dead-letter exchanges.
    """
    exchanges = {"billing.events": ExchangeInfo("billing.events", "topic"), "shared.dlx": ExchangeInfo("shared.dlx")}
    queues: dict[str, QueueInfo] = {}
    bindings: list[BindingInfo] = []
    for n in range(services):
        svc = f"svc{n:06d}"
        exchanges[f"{svc}.dlx"] = ExchangeInfo(f"{svc}.dlx", "fanout")
        queues[f"{svc}.in"] = QueueInfo(HOME, f"{svc}.in", "classic", {"x-dead-letter-exchange": f"{svc}.dlx"})
        queues[f"{svc}.dead"] = QueueInfo(HOME, f"{svc}.dead", "classic")
        queues[f"{svc}_error"] = QueueInfo(HOME, f"{svc}_error", "classic")
        pattern = "billing.*.issued.#" if n % 10 == 0 else f"other.{svc}.#"
        bindings += [
            BindingInfo("billing.events", f"{svc}.in", "queue", pattern),
            BindingInfo(f"{svc}.dlx", f"{svc}.dead", "queue"),
            BindingInfo("shared.dlx", f"{svc}.dead", "queue", f"{svc}.#"),
        ]
    policies = tuple(
        PolicyInfo(f"p{n}", f"^team{n}\\.", "queues", {"dead-letter-exchange": "shared.dlx"})
        for n in range(shared_dlx_policies)
    )
    hosted = VhostTopology(HOME, exchanges, tuple(bindings), queues, policies, {})
    return BrokerTopology({HOME: hosted}, "http://synthetic")

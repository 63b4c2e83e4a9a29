"""The retirement audit's broker tests: the v1/v2 family provisioned, and a quiet history in the registry."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from tests.support.contracts import V1, V2

from contract_platform.amqp import plan_topology, provision
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.retirement.queues import AUDITED_ROLES
from contract_platform.store import Registry


def provision_family(connection: Any, contracts: Catalog) -> None:
    """The topology of billing.invoice-issued v1 and v2, as the platform provisions it."""
    for message_type in (V1, V2):
        provision(connection, plan_topology(contracts.contracts[message_type]))


def seed_quiet_history(
    registry: Registry, contract: Contract, now: datetime, days: tuple[int, ...] = (8, 4, 1)
) -> None:
    """Zero-consumer observations of every audited queue, one audit per entry of ``days`` ago."""
    for age in days:
        for queue in plan_topology(contract).queues_of(*AUDITED_ROLES):
            registry.record_observation(
                contract.message_type,
                queue.name,
                consumers=0,
                ready=0,
                unacked=0,
                source="management",
                observed_at=now - timedelta(days=age),
            )

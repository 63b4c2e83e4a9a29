"""Helpers for the retirement tests against the real broker (a module name of its own: pytest imports it by name)."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from contract_platform.amqp import ManagementClient, plan_topology, provision
from contract_platform.catalog.model import Catalog, Consumer, Contract
from contract_platform.retirement.queues import AUDITED_ROLES
from contract_platform.store import Registry

V1 = "billing.invoice-issued.v1"
V2 = "billing.invoice-issued.v2"


def prefixed(contract: Contract, prefix: str) -> Contract:
    transport = replace(contract.transport, exchange=f"{prefix}{contract.transport.exchange}")
    consumers = tuple(Consumer(c.service, f"{prefix}{c.queue}") for c in contract.consumers)
    return replace(contract, transport=transport, consumers=consumers)


def provision_family(connection: Any, contracts: Catalog) -> None:
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


def wait_for_stats(management: ManagementClient, names: list[str], timeout: float = 30.0) -> None:
    """The management API reports message counts only after its first statistics interval (~5 s)."""
    deadline = time.monotonic() + timeout
    pending = list(names)
    while pending and time.monotonic() < deadline:
        pending = [n for n in pending if "messages_unacknowledged" not in (management.queue(n) or {})]
        if pending:
            time.sleep(0.5)
    assert not pending, f"no statistics for {pending} after {timeout} s"

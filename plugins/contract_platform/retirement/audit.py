"""``audit_version``: every retirement check of one contract version, in one pass over the broker.

::

    plan_topology(contract)
      -> observe_queues (passive declares + management API)  -> queues            (+ one observation per queue)
      -> registry.observations(...)                          -> consumers_over_time
      -> scan_dead_letters (every DLQ / parking lot)         -> dead_letters
      -> LastSeen (archive_last_seen job)                    -> retention
      -> catalogue                                           -> holds, successor_consumers

Broker and store errors propagate (``BrokerUnavailable`` and ``StoreError`` are worth a retry).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from contract_platform.amqp.inspection import ManagementClient, resolve_management
from contract_platform.amqp.topology import plan_topology
from contract_platform.catalog.model import Catalog, Contract, Status
from contract_platform.retirement.consumers import Sample, check_consumers_over_time
from contract_platform.retirement.dead_letters import DEFAULT_MAX_MESSAGES, check_dead_letters, scan_dead_letters
from contract_platform.retirement.model import AuditResult, require_aware
from contract_platform.retirement.policy import check_holds, check_successor_consumers
from contract_platform.retirement.queues import check_queues, observe_queues, record_observations
from contract_platform.retirement.retention import LastSeen, check_retention

__all__ = ["audit_version", "versions_to_audit"]

_HISTORY_AT_LEAST = timedelta(days=30)


@dataclass(frozen=True)
class _Current:
    """This audit's own look at a queue, when it is not recorded in the store (an on-demand audit)."""

    queue: str
    observed_at: datetime
    consumers: int | None


def audit_version(
    contract: Contract,
    catalog: Catalog,
    registry: Any,
    connection: Any,
    last_seen: LastSeen,
    *,
    now: datetime,
    run_id: str | None,
    management: ManagementClient | None | Literal["auto"] = "auto",
    dead_letter_scope: str = "",
    record: bool = True,
    max_dead_letters: int = DEFAULT_MAX_MESSAGES,
) -> AuditResult:
    """Run every check for ``contract``; with ``record`` its queue observations go to the store first.

    ``dead_letter_scope`` limits the broker-wide DLQ scan to queue names starting with it (a shared
    virtual host); empty scans every DLQ and parking lot.
    """
    now = require_aware(now)
    plan = plan_topology(contract)
    client = resolve_management(connection, management)
    looks = observe_queues(connection, plan, management=client)
    since = now - max(_HISTORY_AT_LEAST, 4 * contract.retirement.observation_span)
    if record:
        record_observations(registry, contract.message_type, looks, now=now, run_id=run_id)
    history: list[Sample] = list(registry.observations(contract.message_type, since=since))
    if not record:
        history += [_Current(look.name, now, look.state.consumers) for look in looks]
    scan = scan_dead_letters(
        connection, contract, plan, management=client, scope=dead_letter_scope, max_messages=max_dead_letters
    )
    checks = (
        check_queues(looks),
        check_consumers_over_time(contract, history, now=now, queues=[look.name for look in looks]),
        check_dead_letters(contract, scan),
        check_retention(contract, last_seen, now=now),
        check_holds(contract, now=now),
        check_successor_consumers(contract, catalog),
    )
    return AuditResult(contract.message_type, contract.version, now, checks, run_id)


def versions_to_audit(catalog: Catalog, registry: Any, *, only: Iterable[str] | None = None) -> list[str]:
    """Catalogue versions whose effective status is deprecated (whatever they declare: deprecated or retired)."""
    wanted = set(only) if only is not None else None
    found = []
    for contract in catalog:
        if wanted is not None and contract.message_type not in wanted:
            continue
        state = registry.effective(contract.message_type)
        if state is not None and state.status is Status.DEPRECATED:
            found.append(contract.message_type)
    return found

"""``audit_version``: every retirement check of one contract version, in one pass over the broker.

::

    require_management -> read_topology (every watched vhost) -> discover_queues (receivers, DLQs, how found)
    plan_topology(contract)
      -> observe_queues (passive declares + management API)  -> queues            (+ one observation per queue)
      -> registry.observations(...)                          -> consumers_over_time
      -> scan_dead_letters (every DLQ found, read in order)  -> dead_letters
      -> LastSeen (archive_last_seen job)                    -> retention
      -> catalogue                                           -> holds, successor_consumers

Broker and store errors propagate (``BrokerUnavailable`` and ``StoreError`` are worth a retry);
``ManagementUnavailable`` says how to enable the management API, which the audit requires.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from contract_platform import settings
from contract_platform.amqp.inspection import ManagementClient
from contract_platform.amqp.management import management_client, read_topology, require_management
from contract_platform.amqp.topology import plan_topology
from contract_platform.catalog.model import Catalog, Contract, Status
from contract_platform.evidence import Registry
from contract_platform.retirement.consumers import Sample, check_consumers_over_time
from contract_platform.retirement.dead_letters import DEFAULT_MAX_MESSAGES, check_dead_letters, scan_dead_letters
from contract_platform.retirement.discovery import DEFAULT_DEAD_LETTER_SUFFIXES, Discovery, discover_queues
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
    registry: Registry,
    connection: Any,
    last_seen: LastSeen,
    *,
    now: datetime,
    run_id: str | None,
    management: ManagementClient | None | Literal["auto"] = "auto",
    dead_letter_scope: str = "",
    record: bool = True,
    max_dead_letters: int = DEFAULT_MAX_MESSAGES,
    vhosts: Sequence[str] | None = None,
    dead_letter_suffixes: Sequence[str] | None = None,
) -> AuditResult:
    """Run every check for ``contract``; with ``record`` its queue observations go to the store first.

    ``dead_letter_scope`` limits the broker-wide DLQ scan to queue names starting with it (a shared
    virtual host); empty scans every DLQ found. ``vhosts``: virtual hosts searched besides the
    connection's own (default ``settings.watched_vhosts()``); ``dead_letter_suffixes``: the name
    convention's net (default ``settings.dead_letter_suffixes()``, else ``DEFAULT_DEAD_LETTER_SUFFIXES``).
    ``management=None`` audits with AMQP alone: only the version's own queues, and the checks cannot pass.
    """
    now = require_aware(now)
    plan = plan_topology(contract)
    client = None
    if management is not None:
        client = require_management(management_client(connection) if management == "auto" else management)
    discovery: Discovery | None = None
    topology = None
    home = client.vhost if client is not None else "/"
    if client is not None:
        watched = (home, *(settings.watched_vhosts() if vhosts is None else vhosts))
        topology = read_topology(client, watched)
        if dead_letter_suffixes is None:
            dead_letter_suffixes = settings.dead_letter_suffixes() or DEFAULT_DEAD_LETTER_SUFFIXES
        suffixes = tuple(dead_letter_suffixes)
        discovery = discover_queues(
            contract, plan, topology, home_vhost=home, suffixes=suffixes, scope=dead_letter_scope
        )
    looks = observe_queues(connection, plan, management=client, discovery=discovery, topology=topology, home_vhost=home)
    since = now - max(_HISTORY_AT_LEAST, 4 * contract.retirement.observation_span)
    if record:
        record_observations(registry, contract.message_type, looks, now=now, run_id=run_id)
    history: list[Sample] = list(registry.observations(contract.message_type, since=since))
    if not record:
        history += [_Current(look.name, now, look.state.consumers) for look in looks]
    scan = scan_dead_letters(
        connection,
        contract,
        plan,
        management=client,
        scope=dead_letter_scope,
        max_messages=max_dead_letters,
        discovery=discovery,
        topology=topology,
        home_vhost=home,
    )
    checks = (
        check_queues(looks, discovery),
        check_consumers_over_time(contract, history, now=now, queues=[look.name for look in looks]),
        check_dead_letters(contract, scan),
        check_retention(contract, last_seen, now=now),
        check_holds(contract, now=now),
        check_successor_consumers(contract, catalog),
    )
    return AuditResult(contract.message_type, contract.version, now, checks, run_id)


def versions_to_audit(catalog: Catalog, registry: Registry, *, only: Iterable[str] | None = None) -> list[str]:
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

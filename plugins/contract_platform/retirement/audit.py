"""``audit_version``: every retirement check of one contract version, in one pass over the broker.

::

    require_management (+ the event exchange) -> read_topology (every watched vhost, with each queue's counters)
      -> discover_queues (receivers, DLQs, how found)
    plan_topology(contract)
      -> observe_queues (passive declares + management API)  -> queues            (+ one observation per queue)
      -> watch_deliveries (recording: trace every delivery from the version's queues, before the peek)
      -> scan_dead_letters (every DLQ found, read in order)  -> dead_letters
      -> counters (read before the peek) + the peek's own reads -> stored per queue
      -> reader sessions, traced deliveries, coverage, counters since the span -> readers
      -> LastSeen (archive_last_seen job)                    -> retention
      -> catalogue                                           -> holds, successor_consumers

``audit_versions`` audits many versions in one run over one ``TopologySnapshot`` (``retirement.snapshot``):
the topology is read once, the broker-wide DLQ index built once, and each DLQ read once; ``audit_version``
without a snapshot reads its own (the same path, for one version).

Broker and store errors propagate (``BrokerUnavailable`` and ``StoreError`` are worth a retry);
``ManagementUnavailable`` says how to enable the management API, which the audit requires.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from contract_platform import settings
from contract_platform.amqp.management import BrokerTopology, management_client, require_management
from contract_platform.amqp.topology import plan_topology
from contract_platform.amqp.types import BrokerConnection
from contract_platform.catalog.model import Catalog, Contract, Status
from contract_platform.errors import BrokerUnavailable, ContractPlatformError, StoreError
from contract_platform.evidence import EvidenceKind, Registry, Verdict
from contract_platform.evidence.records import QueueCounters
from contract_platform.retirement.dead_letters import (
    DEFAULT_MAX_MESSAGES,
    DeadLetterScan,
    DeadLetterSweep,
    check_dead_letters,
    scan_dead_letters,
)
from contract_platform.retirement.deliveries import wait_for_trace
from contract_platform.retirement.discovery import Discovery
from contract_platform.retirement.model import AuditResult, CheckName, CheckResult, require_aware
from contract_platform.retirement.policy import check_holds, check_successor_consumers
from contract_platform.retirement.queues import (
    QueueLook,
    check_queues,
    observe_queues,
    queue_label,
    record_observations,
)
from contract_platform.retirement.readers import ReaderEvidence, VersionQueue, check_readers, history_since
from contract_platform.retirement.readers_seen import Coverage, recorded_coverage
from contract_platform.retirement.retention import LastSeen, check_retention
from contract_platform.retirement.snapshot import TopologySnapshot
from contract_platform.retirement.watch import watch_deliveries

__all__ = ["AuditRun", "audit_snapshot", "audit_version", "audit_versions", "versions_to_audit"]


def audit_snapshot(
    connection: BrokerConnection,
    *,
    vhosts: Sequence[str] | None = None,
    dead_letter_suffixes: Sequence[str] | None = None,
) -> TopologySnapshot:
    """The one read of the broker an audit run judges from: the management API is required (with the event
    exchange the readers check is recorded from), probed once, then the topology of the connection's virtual
    host and ``vhosts`` (default ``settings.watched_vhosts()``) is read; ``dead_letter_suffixes``: the DLQ
    naming net (default ``settings.dead_letter_suffixes()``, else ``DEFAULT_DEAD_LETTER_SUFFIXES``)."""
    client = require_management(management_client(connection), event_exchange=True)
    return TopologySnapshot.read(client, vhosts=vhosts, suffixes=dead_letter_suffixes, keep_alive=connection)


def audit_version(
    contract: Contract,
    catalog: Catalog,
    registry: Registry,
    connection: BrokerConnection,
    last_seen: LastSeen,
    *,
    now: datetime,
    run_id: str | None,
    snapshot: TopologySnapshot | None,
    dead_letter_scope: str = "",
    record: bool = True,
    max_dead_letters: int = DEFAULT_MAX_MESSAGES,
    wait_for_recorder: timedelta | None = None,
    sweep: DeadLetterSweep | None = None,
) -> AuditResult:
    """Run every check for ``contract``; with ``record`` its queue observations go to the store first.

    ``snapshot``: the run's one read of the broker (``audit_snapshot``; its management client, topology and
    virtual hosts), from which the version's queues are discovered once and shared by every check. None
    audits with AMQP alone: only the version's own queues, and the checks cannot pass.
    ``dead_letter_scope`` limits the broker-wide DLQ scan to queue names starting with it (a shared
    virtual host); empty scans every DLQ found.
    ``wait_for_recorder``: how long to wait for the activity recorder to confirm ``now`` when it is running
    (default ``recorder_wait()``: three of its heartbeats, and at least ``AUDIT_RECORDER_WAIT``, since a busy
    machine delays a heartbeat; the wait ends as soon as the recorder confirms).
    ``sweep``: the dead-letter queues the run has read already (``audit_versions`` shares one; None: this
    audit's own).
    """
    now = require_aware(now)
    plan = plan_topology(contract)
    discovery = snapshot.discover(contract, plan, scope=dead_letter_scope) if snapshot is not None else None
    topology = snapshot.topology if snapshot is not None else None
    home = snapshot.home_vhost if snapshot is not None else "/"
    looks = observe_queues(connection, plan, snapshot=snapshot, discovery=discovery)
    if record:
        record_observations(registry, contract.message_type, looks, now=now, run_id=run_id)
    queues = version_queues(looks, discovery, home)
    if record and snapshot is not None:  # before the peek: from now on every delivery from them is seen
        watch_deliveries(connection, snapshot.client, registry, [q.key for q in queues], home_vhost=home, now=now)
    scan = scan_dead_letters(
        connection,
        contract,
        plan,
        snapshot=snapshot,
        discovery=discovery,
        scope=dead_letter_scope,
        max_messages=max_dead_letters,
        sweep=sweep,
    )
    coverage: Coverage | None = None
    if topology is None:
        readers = CheckResult(
            CheckName.READERS,
            Verdict.UNKNOWN,
            {"queues": [queue.label for queue in queues]},
            "who read the version's queues is unknown without the management API (delivery counters, every "
            "queue on the broker): enable it and run the audit again",
        )
    else:
        counters = queue_counters(
            contract.message_type, queues, topology, scan, now=now, run_id=run_id, own_until=datetime.now(UTC)
        )
        if record:
            registry.record_queue_counters(counters)
        waited = time.monotonic()
        wait = recorder_wait() if wait_for_recorder is None else wait_for_recorder
        coverage = recorded_coverage(  # read once: the readers check and the consumers' moves both judge it
            registry, history_since(contract, now), now=now, wait=wait
        )
        if any(segment.ended_at is None for segment in coverage[0]):  # a recorder runs: wait for its trace too
            left = wait - timedelta(seconds=time.monotonic() - waited)
            wait_for_trace(registry, [q.key for q in queues], now=now, wait=max(left, timedelta(seconds=1)))
        readers = judge_readers(
            contract, registry, queues, now=now, unrecorded=() if record else counters, coverage=coverage
        )
    checks = (
        check_queues(looks, discovery),
        readers,
        check_dead_letters(contract, scan),
        check_retention(
            contract,
            last_seen,
            now=now,
            deleted=registry.latest_evidence(contract.message_type, EvidenceKind.ARCHIVE_RETENTION),
        ),
        check_holds(contract, now=now),
        check_successor_consumers(contract, catalog, _moves(contract, catalog, registry, now, coverage)),
    )
    return AuditResult(contract.message_type, contract.version, now, checks, run_id)


@dataclass
class AuditRun:
    """One run's audits over one topology snapshot, and what the run cost."""

    results: list[AuditResult]
    snapshot: TopologySnapshot
    seconds: float
    failures: dict[str, str] = field(default_factory=dict)  # messageType -> why its audit could not run
    sweep: DeadLetterSweep = field(default_factory=DeadLetterSweep)  # the DLQs the run read, each once

    def figures(self) -> dict[str, Any]:
        return {
            "versions": len(self.results),
            "failed": len(self.failures),
            "queues": self.snapshot.queues,
            "topologySeconds": round(self.snapshot.seconds, 2),
            "paged": self.snapshot.paged,
            "deadLetterQueuesPeeked": self.sweep.peeked,
            "seconds": round(self.seconds, 2),
        }


def audit_versions(
    contracts: Sequence[Contract],
    catalog: Catalog,
    registry: Registry,
    connection: BrokerConnection,
    last_seen: LastSeen,
    *,
    run_id: str | None,
    dead_letter_scope: str = "",
    record: bool = True,
    vhosts: Sequence[str] | None = None,
    dead_letter_suffixes: Sequence[str] | None = None,
    snapshot: TopologySnapshot | None = None,
    on_result: Callable[[AuditResult], None] | None = None,
    now: Callable[[], datetime] | None = None,
) -> AuditRun:
    """Audit ``contracts`` one after the other over one topology snapshot (read here unless given).

    Each version's audit runs at its own ``now()`` (default the clock). ``on_result`` sees each result as
    it is made (to record it while the run goes on). A version whose audit fails with a platform error is
    listed in ``failures`` and the run goes on; a broker that drops the connection stops the run (retry it)."""
    began = time.perf_counter()
    if snapshot is None:
        snapshot = audit_snapshot(connection, vhosts=vhosts, dead_letter_suffixes=dead_letter_suffixes)
    clock = now or (lambda: datetime.now(UTC))
    sweep = DeadLetterSweep()
    results: list[AuditResult] = []
    failures: dict[str, str] = {}
    for contract in contracts:
        try:
            result = audit_version(
                contract,
                catalog,
                registry,
                connection,
                last_seen,
                now=clock(),
                run_id=run_id,
                dead_letter_scope=dead_letter_scope,
                record=record,
                snapshot=snapshot,
                sweep=sweep,
            )
        except (BrokerUnavailable, StoreError):
            raise
        except ContractPlatformError as exc:
            failures[contract.message_type] = str(exc)
            continue
        results.append(result)
        if on_result is not None:
            on_result(result)
    return AuditRun(results, snapshot, time.perf_counter() - began, failures, sweep)


def version_queues(looks: Sequence[QueueLook], discovery: Discovery | None, home: str) -> list[VersionQueue]:
    """Every queue of the version: consumer, retry, DLQ and parking-lot queues, every queue its exchange routes
    to, and every dead-letter queue discovery attributes to it (each once, by virtual host and name)."""
    found: dict[tuple[str, str], VersionQueue] = {}
    for look in looks:
        vhost = look.vhost or home
        queue = look.state.name
        found.setdefault((vhost, queue), VersionQueue(vhost, queue, look.name))
    for entry in discovery.attributed if discovery is not None else ():
        found.setdefault(
            (entry.vhost, entry.queue),
            VersionQueue(entry.vhost, entry.queue, queue_label(entry.vhost, entry.queue, home)),
        )
    return list(found.values())


def queue_counters(
    message_type: str,
    queues: Sequence[VersionQueue],
    topology: BrokerTopology,
    scan: DeadLetterScan,
    *,
    now: datetime,
    run_id: str | None,
    own_until: datetime | None = None,
) -> list[QueueCounters]:
    """Each queue's counters as the topology read them (before the peek), with what the peek itself then did
    and when the audit's own touches (passive declares, the peek) were over."""
    own = {(q.vhost, q.queue): q for q in scan.queues}  # a scan with a topology names each queue's vhost
    rows = []
    for queue in queues:
        hosted = topology.vhosts.get(queue.vhost)
        info = hosted.queues.get(queue.queue) if hosted is not None else None
        counters = info.counters if info is not None else None
        peeked = own.get((queue.vhost, queue.queue))
        rows.append(
            QueueCounters(
                message_type=message_type,
                vhost=queue.vhost,
                queue=queue.queue,
                observed_at=now,
                present=info is not None,
                deliver_get=counters.deliver_get if counters else None,
                get_empty=counters.get_empty if counters else None,
                ack=counters.ack if counters else None,
                redeliver=counters.redeliver if counters else None,
                own_deliver_get=peeked.inspected if peeked else 0,
                own_get_empty=peeked.empty_gets if peeked else 0,
                own_redeliver=peeked.redelivered if peeked else 0,
                run_id=run_id,
                publish=counters.publish if counters else None,
                idle_since=info.idle_since if info is not None else None,
                own_until=own_until,
            )
        )
    return rows


def _moves(
    contract: Contract, catalog: Catalog, registry: Registry, now: datetime, coverage: Coverage | None
) -> list[Any] | None:
    """Each consumer's move to the successor as the recorder saw it (None: no successor in the catalogue)."""
    from contract_platform.retirement.readers_seen import observed_moves

    successor = catalog.successor(contract)
    if successor is None:
        return None
    return observed_moves(catalog, contract, successor, registry, now=now, coverage=coverage)


AUDIT_RECORDER_WAIT = timedelta(seconds=15)  # a running recorder under load can trail by more than a heartbeat


def recorder_wait() -> timedelta:
    """How long an audit waits for a running recorder to confirm up to now: three heartbeats, at least 15 s."""
    return max(settings.recorder_heartbeat() * 3, AUDIT_RECORDER_WAIT)


def judge_readers(
    contract: Contract,
    registry: Registry,
    queues: Sequence[VersionQueue],
    *,
    now: datetime,
    unrecorded: Sequence[QueueCounters] = (),
    wait: timedelta = timedelta(0),
    coverage: Coverage | None = None,
) -> CheckResult:
    """The ``readers`` check on the stored evidence; waits (at most ``wait``) for a running recorder to reach
    ``now``, unless the caller read the coverage since ``history_since`` already (``coverage``)."""
    since = history_since(contract, now)
    keys = [queue.key for queue in queues]
    segments, gaps = coverage if coverage is not None else recorded_coverage(registry, since, now=now, wait=wait)
    evidence = ReaderEvidence(
        since=since,
        segments=segments,
        gaps=gaps,
        sessions=registry.reader_sessions(keys, since=since, until=now),
        changes=registry.broker_changes(keys, since=since),
        counters=[*registry.queue_counters(contract.message_type, since=since), *unrecorded],
        watches=registry.delivery_watches(keys),
    )
    return check_readers(contract, queues, evidence, now=now)


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

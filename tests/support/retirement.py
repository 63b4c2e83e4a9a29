"""The retirement audit's broker tests: the v1/v2 family provisioned, and a quiet history in the registry."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.support.broker import AUTH, HOST, url_of
from tests.support.contracts import V1, V2
from tests.support.waiting import wait_until

from contract_platform.activity.queues import parked_queue
from contract_platform.activity.recorder import ActivityRecorder, RecorderConfig, recorder_queues
from contract_platform.amqp import ManagementClient, open_connection, plan_topology, provision
from contract_platform.amqp.connection import close_quietly
from contract_platform.amqp.management import read_topology
from contract_platform.catalog.model import Catalog, Contract, Status
from contract_platform.errors import BrokerError
from contract_platform.evidence.records import QueueCounters
from contract_platform.retirement import (
    AuditResult,
    RetirementOutcome,
    record_audit,
    retire_if_proven,
    write_audit_bundle,
)
from contract_platform.retirement.queues import AUDITED_ROLES
from contract_platform.retirement.readers import confirmed_until
from contract_platform.store import SqlRegistry


def provision_family(connection: Any, contracts: Catalog) -> None:
    """The topology of billing.invoice-issued v1 and v2, as the platform provisions it."""
    for message_type in (V1, V2):
        provision(connection, plan_topology(contracts.contracts[message_type]))


def seed_quiet_history(
    registry: SqlRegistry,
    contract: Contract,
    now: datetime,
    days: tuple[int, ...] = (8, 4, 1),
    *,
    vhosts: Sequence[str] = ("/",),
    coverage_until: datetime,
) -> None:
    """A quiet past: one audit per entry of ``days`` ago, and a recorder running all along.

    Each audit recorded zero-consumer observations of every audited queue and the delivery counters of
    every queue in ``vhosts`` as they are now (nothing read since); the recorder's coverage runs from
    before the first audit to ``coverage_until`` (where a real recorder, ``running_recorder``, took over).
    """
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
    seed_counters(registry, contract, [now - timedelta(days=age) for age in days], vhosts=vhosts)
    seed_coverage(registry, now - timedelta(days=max(days, default=1) + 1), coverage_until)


def seed_counters(
    registry: SqlRegistry, contract: Contract, moments: Sequence[datetime], *, vhosts: Sequence[str] = ("/",)
) -> None:
    """The delivery counters of every queue in ``vhosts``, as the management API reports them now, at ``moments``."""
    topology = read_topology(ManagementClient(f"http://{HOST}:15672", *AUTH), vhosts)
    rows = []
    for at in moments:
        for vhost, hosted in topology.vhosts.items():
            for queue in hosted.queues.values():
                counters = queue.counters
                rows.append(
                    QueueCounters(
                        contract.message_type,
                        vhost,
                        queue.name,
                        at,
                        True,
                        counters.deliver_get if counters else None,
                        counters.get_empty if counters else None,
                        counters.ack if counters else None,
                        counters.redeliver if counters else None,
                    )
                )
    registry.record_queue_counters(rows)
    if moments:  # a recording audit traces the deliveries of the version's queues, from its moment on
        own = plan_topology(contract).queues_of(*AUDITED_ROLES)[0].name.split(".", 1)[0] + "."  # the test's prefix
        traced = sorted({(row.vhost, row.queue) for row in rows if row.queue.startswith(own)})
        seed_trace(registry, traced, min(moments))


def seed_trace(registry: SqlRegistry, queues: Sequence[tuple[str, str]], since: datetime) -> None:
    """The delivery trace of ``queues`` set up as a recording audit at ``since`` set it up (``watch_deliveries``:
    the trace queue, its bindings, tracing on); the recorder confirms it from the next audit on."""
    from contract_platform.retirement.watch import watch_deliveries

    connection = open_connection(url_of("/"))
    try:
        client = ManagementClient(f"http://{HOST}:15672", *AUTH)
        watch_deliveries(connection, client, registry, queues, home_vhost="/", now=since)
    finally:
        close_quietly(connection)


def seed_coverage(registry: SqlRegistry, start: datetime, until: datetime) -> None:
    """One coverage segment of a recorder running from ``start``, confirmed up to ``until``."""
    segment = uuid.uuid4().hex
    registry.open_coverage_segment(segment, started_at=start, host="seeded")
    registry.extend_coverage(segment, covered_from=start, until=until)


@contextmanager
def running_recorder(
    registry: SqlRegistry, url: str, queue: str, heartbeat: float = 1.0, **config: Any
) -> Iterator[datetime]:
    """The broker activity recorder in a thread, into ``registry``; yields the moment its coverage starts.
    ``config``: more of its ``RecorderConfig`` (its management API, its limits)."""
    with recorder_thread(registry, url, queue, heartbeat, **config) as recorder:
        assert recorder.report.covered_since is not None
        yield recorder.report.covered_since


@contextmanager
def recorder_thread(
    registry: SqlRegistry, url: str, queue: str, heartbeat: float = 1.0, **config: Any
) -> Iterator[ActivityRecorder]:
    """``running_recorder``, yielding the recorder itself (its report) once it covers a first moment; what it
    raised in its thread is raised when the block ends."""
    recorder = ActivityRecorder(url, registry, RecorderConfig(queue=queue, heartbeat=heartbeat, **config))
    stop = threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            recorder.run(until=stop.is_set)
        except BaseException as exc:  # shown by the test, not lost in the thread
            failed.append(exc)

    thread = threading.Thread(target=run, name=f"recorder-{queue}", daemon=True)
    thread.start()
    try:
        wait_until(
            lambda: recorder.report.covered_until is not None or failed, 30, 0.05, what="the recorder's first coverage"
        )
        if failed:
            raise failed[0]
        yield recorder
    finally:
        stop.set()
        thread.join(timeout=30)
        delete_recorder_queues(url, queue)
        delete_trace_queues(url, registry)
    if failed:
        raise failed[0]


def delete_trace_queues(url: str, registry: SqlRegistry) -> None:
    """The registry's delivery trace queues (``amqp.tracing.trace_queues``) in every virtual host it watched."""
    from contract_platform.amqp.tracing import trace_queues
    from contract_platform.amqp.urls import with_vhost

    for vhost in sorted({watch.vhost for watch in registry.delivery_watches()}):
        try:
            connection = open_connection(with_vhost(url, vhost))
        except BrokerError:  # the test deleted its virtual host, and the queues with it
            continue
        try:
            for name in trace_queues(registry.url):
                connection.channel().queue_delete(name)
        finally:
            close_quietly(connection)


def delete_recorder_queues(url: str, queue: str) -> None:
    """The recorder's queue and its companions (``recorder_queues``, ``parked_queue``), whatever a test left in them."""
    connection = open_connection(url)
    try:
        for name in (*recorder_queues(queue), parked_queue(queue)):
            connection.channel().queue_delete(name)
    finally:
        close_quietly(connection)


def shift_activity(registry_url: str, by: timedelta) -> None:
    """Time passes: everything recorded so far (observations, reader sessions, broker changes, counters,
    coverage, delivery watches) happened ``by`` earlier. A recorder still running keeps extending its segment to now."""
    from sqlalchemy import create_engine, update

    from contract_platform.store import tables

    moved = {
        tables.observations: ("observed_at",),
        tables.reader_sessions: ("attached_at", "detached_at"),
        tables.broker_changes: ("at",),
        tables.queue_counters: ("observed_at", "idle_since", "own_until"),
        tables.coverage_segments: ("started_at", "covered_from"),
        tables.coverage_gaps: ("start", "end"),
        tables.delivery_watches: ("requested_at", "traced_from"),  # the recorder keeps confirming up to now
    }
    engine = create_engine(registry_url)
    try:
        with engine.begin() as conn:
            for table, columns in moved.items():
                for row in conn.execute(table.select()).mappings().all():
                    values = {c: row[c] - by for c in columns if row[c] is not None}
                    if values:
                        same = [key == row[key.name] for key in table.primary_key.columns]
                        conn.execute(update(table).where(*same).values(**values))
    finally:
        engine.dispose()


def wait_for_coverage(registry: SqlRegistry, what: str = "the recorder's coverage of now") -> None:
    """Until the recorder has confirmed that everything the broker announced up to now is stored."""
    moment = datetime.now(UTC)

    def confirmed() -> bool:
        reached = confirmed_until(registry.coverage(moment - timedelta(hours=1))[0])
        return reached is not None and reached > moment

    wait_until(confirmed, 30, 0.2, what=what)


def force_status(registry: SqlRegistry, message_type: str, status: Status) -> None:
    """Register ``message_type`` and walk it up to ``status`` (the guards are not asked: this seeds history)."""
    state = registry.register(message_type, "1.0.0", actor="setup")
    for step in [s for s in Status if state.status.rank < s.rank <= status.rank]:
        state = registry.apply_transition(message_type, expected=state, to=step, actor="setup", reason="seed")


def retire_declared(
    result: AuditResult, registry: SqlRegistry, connection: Any, catalog: Catalog, work: Path
) -> tuple[RetirementOutcome, Contract, Catalog]:
    """Record ``result`` as the DAG does, declare its version retired, and retire it if proven.

    Returns the outcome, the version as declared retired and the catalogue holding it; the bundle is kept
    under ``work/bundles``, the audit report under ``work/docs``.
    """
    paths = write_audit_bundle(result, work / "docs")
    record_audit(result, registry, reference=paths.stamped)
    retiring = replace(catalog.contracts[result.message_type], status=Status.RETIRED)
    declared = replace(catalog, contracts={**catalog.contracts, result.message_type: retiring})
    outcome = retire_if_proven(
        retiring,
        declared,
        registry,
        connection,
        actor="test",
        run_id="test",
        now=datetime.now(UTC),
        archive_root=work / "archive",
        bundle_root=work / "bundles",
    )
    return outcome, retiring, declared

"""The readers seen of a version and its consumers' moves to the successor (the readers perspective, the
per-consumer migration state): the queues that receive it on the broker, the reader sessions the activity
recorder stored for them over the last observation window, and every place it could not see
(docs/consumer-impact.md#the-readers-perspective).

Two sources, both needed for "no reader outside the declared consumers":

* the broker's topology (management API): every queue the version reaches, declared by the catalogue or not
  (``retirement.discovery``), with the consumers attached to it right now;
* the activity recorder's store (``contractctl record-activity``): every reader session on those queues over
  ``retirement.observationSpan`` before now, and the recorder's gaps in that window.

Whatever is missing is a named blind spot (``ObservedReaders.blind``) or a gap, never an empty list that
would read as "no readers": the perspective then refuses with ``readers-unknown``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from contract_platform.catalog.model import Contract
from contract_platform.errors import ContractPlatformError
from contract_platform.evidence.records import CoverageGap, CoverageSegment, ReaderSession
from contract_platform.impact import ObservedReaders
from contract_platform.impact.moves import ReadHistory
from contract_platform.retirement.readers import TAIL_TOLERANCE, confirmed_until, history_since, merged_coverage

if TYPE_CHECKING:
    from contract_platform.amqp.types import BrokerConnection
    from contract_platform.catalog.model import Catalog
    from contract_platform.evidence import Registry
    from contract_platform.impact.moves import ConsumerMove
    from contract_platform.retirement.snapshot import TopologySnapshot

__all__ = [
    "BrokerReaders",
    "ReadersSource",
    "broker_readers",
    "observe_readers",
    "observed_moves",
    "platform_vhost",
    "recorded_coverage",
    "coverage_since",
]

NO_RECORDER = "no broker activity was recorded in the observation window (run contractctl record-activity)"
RECORDER_WAIT = timedelta(seconds=5)  # a running recorder confirms its coverage every heartbeat (1 s by default)


@dataclass(frozen=True)
class BrokerReaders:
    """The queues that receive a version on the broker and who reads them now; ``problem``: why not known."""

    queues: tuple[tuple[str, str], ...] = ()  # (vhost, queue)
    live: tuple[ReaderSession, ...] = ()
    problem: str | None = None


def broker_readers(contract: Contract, snapshot: TopologySnapshot) -> BrokerReaders:
    """Every queue that receives ``contract`` in the watched virtual hosts, and the consumers on them now, from
    the broker's topology read once for many versions (``ReadersSource``; ``retirement.snapshot``)."""
    from contract_platform.amqp import plan_topology

    try:
        discovery = snapshot.discover(contract, plan_topology(contract))
    except ContractPlatformError as exc:
        return BrokerReaders(problem=f"the broker's topology could not be read: {exc}")
    queues, live = [], []
    for entry in discovery.receivers:
        queues.append((entry.vhost, entry.queue))
        for reader in entry.readers:
            live.append(
                ReaderSession(
                    vhost=entry.vhost,
                    queue=entry.queue,
                    consumer_tag=reader.tag,
                    channel=reader.connection or "",
                    attached_at=None,
                    detached_at=None,
                    connection_name=reader.client_name or reader.connection,
                    peer_host=reader.peer_host,
                    user=reader.user,
                    source="listing",
                )
            )
    return BrokerReaders(tuple(queues), tuple(live))


def recorded_coverage(
    registry: Registry, since: datetime, *, now: datetime, wait: timedelta = timedelta(0)
) -> tuple[list[CoverageSegment], list[CoverageGap]]:
    """The recorder's segments and gaps since ``since``; waits (at most ``wait``) for a running recorder to
    confirm up to ``now``, whose coverage trails by about a heartbeat."""
    deadline = time.monotonic() + wait.total_seconds()
    while True:
        segments, gaps = registry.coverage(since)
        reached = confirmed_until(segments)
        running = any(segment.ended_at is None for segment in segments)  # any recorder still open, not the last started
        if reached is None or reached >= now - TAIL_TOLERANCE or not running or time.monotonic() >= deadline:
            return list(segments), list(gaps)
        time.sleep(0.2)


Coverage = tuple[list[CoverageSegment], list[CoverageGap]]  # what ``recorded_coverage`` read


def coverage_since(coverage: Coverage, since: datetime) -> Coverage:
    """The part of a coverage read over a longer window that ``registry.coverage(since)`` would have returned:
    segments still open or covering past ``since``, gaps ending at or after it (store.activity's rule)."""
    segments, gaps = coverage
    return (
        [s for s in segments if s.covered_until is None or s.covered_until >= since],
        [g for g in gaps if g.end >= since],
    )


def observe_readers(
    contract: Contract,
    registry: Registry | None,
    broker: BrokerReaders,
    *,
    now: datetime | None = None,
    wait: timedelta = RECORDER_WAIT,
) -> ObservedReaders:
    """The reader sessions on the version's queues over its last observation window, the recorder's gaps in
    it, and what could not be seen (no topology: only the declared consumers' queues were looked at).
    ``wait``: how long a running recorder may take to confirm up to now (it trails by a heartbeat)."""
    now = now or datetime.now(UTC)
    since = now - contract.retirement.observation_span
    blind: list[str] = []
    queues = list(broker.queues)
    if broker.problem is not None:
        blind.append(f"queues bound to the version beyond the declared consumers' ({broker.problem})")
    sessions: list[ReaderSession] = list(broker.live)
    gaps: list[CoverageGap] = []
    if registry is None:
        blind.append("reader sessions over the observation window (no registry store to read them from)")
    else:
        segments, gaps = recorded_coverage(registry, since, now=now, wait=wait)
        reached = confirmed_until(segments)
        if reached is None:
            gaps = [CoverageGap(since, now, NO_RECORDER), *gaps]
        else:
            first = min((s.covered_from for s in segments if s.covered_from is not None), default=since)
            if first > since:
                gaps.insert(0, CoverageGap(since, first, "before the recorder's first segment in the window"))
            if reached < now - TAIL_TOLERANCE:
                gaps.append(CoverageGap(reached, now, "the recorder has not confirmed up to now"))
        keys = queues or [(platform_vhost(), c.queue) for c in contract.consumers]
        sessions.extend(registry.reader_sessions(keys, since=since, until=now))
    return ObservedReaders(
        sessions=tuple(_distinct(sessions)),
        gaps=tuple(gaps),
        window_start=since,
        window_end=now,
        blind=tuple(blind),
    )


class ReadersSource:
    """``observe_readers`` for each contract asked about, over one broker connection and one topology read,
    opened at the first contract that needs them (most changes never ask). ``connect`` None or failing: the
    topology is a named blind spot. Close it (or use it as a context manager) to close the connection."""

    def __init__(self, registry: Registry | None, connect: Callable[[], BrokerConnection] | None) -> None:
        self.registry = registry
        self.connect = connect
        self._read = False
        self._snapshot: TopologySnapshot | None = None
        self._connection: BrokerConnection | None = None
        self._problem: str | None = None

    def _topology(self) -> None:
        if self._read:
            return
        self._read = True
        if self.connect is None:
            self._problem = "no broker was given"
            return
        from contract_platform.amqp.management import management_client, probe_management
        from contract_platform.retirement.snapshot import TopologySnapshot

        try:
            self._connection = self.connect()
            management = management_client(self._connection)
            problem = "its management API is not known" if management is None else probe_management(management)
            if problem is None and management is not None:
                self._snapshot = TopologySnapshot.read(management, keep_alive=self._connection)
            self._problem = problem
        except ContractPlatformError as exc:
            self._problem = f"the broker could not be read: {exc}"

    def __call__(self, contract: Contract) -> ObservedReaders:
        self._topology()
        if self._snapshot is None:
            broker = BrokerReaders(problem=self._problem or "the broker's topology could not be read")
        else:
            broker = broker_readers(contract, self._snapshot)
        return observe_readers(contract, self.registry, broker)

    def close(self) -> None:
        from contract_platform.amqp.connection import close_quietly

        close_quietly(self._connection)
        self._connection = None

    def __enter__(self) -> ReadersSource:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def platform_vhost() -> str:
    """The platform's virtual host (the one its AMQP URL names), where the declared consumers' queues live."""
    from contract_platform import settings
    from contract_platform.amqp.urls import vhost_of

    return vhost_of(settings.rabbitmq_url())


def _distinct(sessions: Sequence[ReaderSession]) -> list[ReaderSession]:
    """One entry per (queue, consumer tag, connection): a live reader is also in the recorder's sessions."""
    seen: dict[tuple[str, str, str | None], ReaderSession] = {}
    for session in sessions:
        seen.setdefault((session.queue, session.consumer_tag, session.connection_name), session)
    return list(seen.values())


def observed_moves(
    catalog: Catalog,
    source: Contract,
    target: Contract,
    registry: Registry | None,
    *,
    now: datetime | None = None,
    live: Sequence[ReaderSession] = (),
    coverage: Coverage | None = None,
) -> list[ConsumerMove]:
    """Who moved: the one answer of the CLI, the Contracts page, the API and the retirement audit.

    ``consumer_moves`` from ``source`` to ``target`` (under the target's ``migration.yaml``; one that cannot be
    read, or none, lists no field to change: lint and contract_change report the file) over the recorder's
    history of both versions' consumer queues (``history_since``: the audit's own reach, not only the
    observation window) and ``live`` (consumers on those queues now, when the caller read the broker). No
    coverage at all makes every state unknown, saying so; a gap matters only where it could hide a move back.
    ``coverage``: the recorder's coverage the caller already read over a window holding this one (the audit's),
    instead of reading it again."""
    from contract_platform.errors import MigrationSpecError
    from contract_platform.impact.moves import consumer_moves
    from contract_platform.migration.spec import parse_spec

    spec = None
    if target.migration is not None:
        try:
            spec = parse_spec(target.migration, str(target.migration_file))
        except MigrationSpecError:
            spec = None

    if registry is None:
        return consumer_moves(catalog, source, target, spec, history=None, unknown="no registry store")
    now = now or datetime.now(UTC)
    since = history_since(source, now)
    segments, _gaps = (
        coverage_since(coverage, since) if coverage is not None else recorded_coverage(registry, since, now=now)
    )
    covered = merged_coverage(segments)  # what lies between two stretches is a gap
    if not covered:
        return consumer_moves(catalog, source, target, spec, history=None, unknown=NO_RECORDER)
    vhost = platform_vhost()
    queues = [(vhost, c.queue) for c in (*source.consumers, *target.consumers)]
    history = ReadHistory(
        sessions=[*registry.reader_sessions(queues, since=since, until=now), *live],
        covered=covered,
        window_start=now - source.retirement.observation_span,
        now=now,
    )
    return consumer_moves(catalog, source, target, spec, history=history)

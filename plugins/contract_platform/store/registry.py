"""The registry store: effective status, append-only history, refusals, evidence, snapshots, observations.

``SqlRegistry`` is the only code that talks SQL. Every call runs in one transaction opened by
``SqlRegistry._connect``, which maps any SQLAlchemy error, once, to ``StoreError`` naming the database
by ``redact_url``. Status changes use optimistic concurrency on ``revision`` on every database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Connection, Engine, Select, func, insert, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from contract_platform.catalog.model import Status
from contract_platform.errors import ConcurrentTransition, SnapshotConflict, StoreError
from contract_platform.settings import redact_url, registry_url
from contract_platform.store import activity, migrations, rows, values
from contract_platform.store.engine import WRITE_OPTION, open_engine, store_error
from contract_platform.store.records import (
    BrokerChange,
    BrokerEvent,
    CoverageGap,
    CoverageSegment,
    EvidenceKind,
    EvidenceMark,
    EvidenceRecord,
    Observation,
    ObservationSource,
    QueueCounters,
    ReaderSession,
    RefusalRecord,
    TransitionRecord,
    Verdict,
    VersionState,
)
from contract_platform.store.tables import (
    contract_versions,
    coverage_gaps,
    coverage_segments,
    evidence,
    fingerprints,
    observations,
    refusals,
    schema_snapshots,
    transitions,
)

if TYPE_CHECKING:
    from contract_platform.evidence.registry import ActivityLog
    from contract_platform.evidence.registry import Registry as DomainRegistry

__all__ = ["SqlRegistry"]

T = TypeVar("T")


class SqlRegistry:
    """One registry database. Open with ``SqlRegistry.open(url)``; close with ``close()`` or a ``with`` block."""

    def __init__(self, engine: Engine, url: str) -> None:
        self._engine: Engine | None = engine
        self._url = url
        self.url = redact_url(url)

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    def open(cls, url: str | None = None) -> SqlRegistry:
        """Connect (default ``settings.registry_url()``), then create or upgrade the schema."""
        url = url or registry_url()
        try:
            registry = cls(open_engine(url), url)
        except (SQLAlchemyError, OSError) as exc:
            raise store_error(url, "opening", exc) from exc
        try:
            with registry._connect("upgrading the schema", write=True) as conn:
                migrations.upgrade(conn)
        except ValueError as exc:  # a schema newer than this code
            registry.close()
            raise StoreError(f"registry store {registry.url}: {exc}") from exc
        except StoreError:
            registry.close()
            raise
        return registry

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def __enter__(self) -> SqlRegistry:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqlRegistry({self.url!r})"

    def schema_version(self) -> int:
        with self._connect("reading the schema version") as conn:
            return migrations.current_version(conn)

    # -- effective status and history ----------------------------------------------------------

    def effective(self, message_type: str) -> VersionState | None:
        with self._connect(f"reading the effective status of {message_type}") as conn:
            return _read_state(conn, message_type)

    def all_effective(self) -> list[VersionState]:
        with self._connect("reading effective statuses") as conn:
            found = conn.execute(select(contract_versions).order_by(contract_versions.c.message_type))
            return [rows.version_state(row._mapping) for row in found]

    def register(
        self, message_type: str, contract_version: str, *, actor: str, run_id: str | None = None
    ) -> VersionState:
        """A new message type becomes ``proposed`` (transition None -> proposed recorded).

        Registering a known one changes nothing but its ``contract_version`` (which bumps ``revision``,
        so a plan made against the old version cannot be applied).
        """

        def register_once(conn: Connection) -> VersionState:
            now = values.now()
            state = _read_state(conn, message_type)
            if state is None:
                conn.execute(
                    insert(contract_versions).values(
                        message_type=message_type,
                        effective_status=Status.PROPOSED.value,
                        contract_version=contract_version,
                        revision=1,
                        updated_at=now,
                    )
                )
                _insert_transition(
                    conn,
                    message_type,
                    1,
                    None,
                    Status.PROPOSED,
                    now,
                    actor,
                    run_id,
                    f"registered at contract version {contract_version}",
                    None,
                )
                return VersionState(message_type, Status.PROPOSED, contract_version, 1, now)
            if state.contract_version == contract_version:
                return state
            conn.execute(
                update(contract_versions)
                .where(contract_versions.c.message_type == message_type)
                .values(contract_version=contract_version, revision=state.revision + 1, updated_at=now)
            )
            return VersionState(message_type, state.status, contract_version, state.revision + 1, now)

        return self._write_retrying(f"registering {message_type}", register_once)

    def apply_transition(
        self,
        message_type: str,
        *,
        expected: VersionState,
        to: Status,
        actor: str,
        reason: str,
        run_id: str | None = None,
        evidence_id: int | None = None,
    ) -> VersionState:
        """Move ``message_type`` from ``expected`` to ``to`` and record it, or raise ``ConcurrentTransition``.

        The store does not judge the step; ``contract_platform.lifecycle`` does, and calls this.
        """
        if expected.message_type != message_type:
            raise ValueError(f"expected state is for {expected.message_type}, not {message_type}")
        now = values.now()
        revision = expected.revision + 1
        with self._connect(f"applying {expected.status} -> {to} to {message_type}", write=True) as conn:
            result = conn.execute(
                update(contract_versions)
                .where(
                    contract_versions.c.message_type == message_type,
                    contract_versions.c.revision == expected.revision,
                    contract_versions.c.effective_status == expected.status.value,
                )
                .values(effective_status=to.value, revision=revision, updated_at=now)
            )
            if result.rowcount != 1:
                raise _lost_race(conn, expected, to)
            _insert_transition(
                conn, message_type, revision, expected.status, to, now, actor, run_id, reason, evidence_id
            )
        return VersionState(message_type, to, expected.contract_version, revision, now)

    def transitions(self, message_type: str) -> list[TransitionRecord]:
        """Every transition of ``message_type``, oldest first."""
        with self._connect(f"reading the history of {message_type}") as conn:
            found = conn.execute(
                select(transitions)
                .where(transitions.c.message_type == message_type)
                .order_by(transitions.c.revision, transitions.c.id)
            )
            return [rows.transition_record(row._mapping) for row in found]

    def transition(self, message_type: str, revision: int) -> TransitionRecord | None:
        """The transition that produced ``revision`` (None if a version change, not a transition, did)."""
        with self._connect(f"reading a transition of {message_type}") as conn:
            row = conn.execute(
                select(transitions).where(
                    transitions.c.message_type == message_type, transitions.c.revision == revision
                )
            ).first()
            return rows.transition_record(row._mapping) if row else None

    def record_refusal(
        self,
        message_type: str,
        *,
        from_status: Status | None,
        to_status: Status,
        reasons: list[str],
        actor: str,
        run_id: str | None = None,
    ) -> RefusalRecord:
        now = values.now()
        row = {
            "message_type": message_type,
            "from_status": from_status.value if from_status else None,
            "to_status": to_status.value,
            "at": now,
            "actor": actor,
            "run_id": run_id,
            "reasons": [str(reason) for reason in reasons],
        }
        with self._connect(f"recording a refusal for {message_type}", write=True) as conn:
            key = conn.execute(insert(refusals).values(**row)).inserted_primary_key
        return rows.refusal_record({**row, "id": key[0] if key else 0})

    def refusals(self, message_type: str, limit: int = 20) -> list[RefusalRecord]:
        """The latest refusals of ``message_type``, newest first."""
        with self._connect(f"reading refusals of {message_type}") as conn:
            found = conn.execute(
                select(refusals)
                .where(refusals.c.message_type == message_type)
                .order_by(refusals.c.at.desc(), refusals.c.id.desc())
                .limit(limit)
            )
            return [rows.refusal_record(row._mapping) for row in found]

    # -- evidence ------------------------------------------------------------------------------

    def add_evidence(
        self,
        message_type: str,
        *,
        contract_version: str,
        kind: EvidenceKind | str,
        verdict: Verdict | str,
        figures: Mapping[str, Any],
        reference: str | None = None,
        run_id: str | None = None,
        collected_at: datetime | None = None,
    ) -> EvidenceRecord:
        row = {
            "message_type": message_type,
            "contract_version": contract_version,
            "kind": values.member(EvidenceKind, kind, "evidence kind").value,
            "verdict": values.member(Verdict, verdict, "verdict").value,
            "figures": values.json_object(figures, "figures"),
            "reference": reference,
            "run_id": run_id,
            "collected_at": values.aware(collected_at, "collected_at"),
        }
        with self._connect(f"adding {row['kind']} evidence for {message_type}", write=True) as conn:
            key = conn.execute(insert(evidence).values(**row)).inserted_primary_key
        return rows.evidence_record({**row, "id": key[0] if key else 0})

    def latest_evidence(
        self, message_type: str, kind: EvidenceKind | str, *, contract_version: str | None = None
    ) -> EvidenceRecord | None:
        """The most recently collected evidence of ``kind`` (optionally for one contract version only)."""
        found = self.evidence(message_type, kind, limit=1, contract_version=contract_version)
        return found[0] if found else None

    def evidence(
        self,
        message_type: str,
        kind: EvidenceKind | str | None = None,
        since: datetime | None = None,
        limit: int = 100,
        *,
        contract_version: str | None = None,
    ) -> list[EvidenceRecord]:
        """Evidence of ``message_type``, newest first, collected at or after ``since``."""
        query = select(evidence).where(evidence.c.message_type == message_type)
        if kind is not None:
            query = query.where(evidence.c.kind == values.member(EvidenceKind, kind, "evidence kind").value)
        if since is not None:
            query = query.where(evidence.c.collected_at >= values.aware(since, "since"))
        if contract_version is not None:
            query = query.where(evidence.c.contract_version == contract_version)
        query = query.order_by(evidence.c.collected_at.desc(), evidence.c.id.desc()).limit(limit)
        with self._connect(f"reading evidence of {message_type}") as conn:
            return [rows.evidence_record(row._mapping) for row in conn.execute(query)]

    # -- batched reads for pages that show many versions at once (the Contracts page) --------------

    def latest_transitions(self) -> dict[str, TransitionRecord]:
        """The latest transition of every message type, in one query."""
        latest = _latest_per(transitions, (transitions.c.message_type,), (transitions.c.revision, transitions.c.id))
        with self._connect("reading the latest transitions") as conn:
            return {row.message_type: rows.transition_record(row._mapping) for row in conn.execute(latest)}

    def latest_refusals(self) -> dict[str, RefusalRecord]:
        """The latest refusal of every message type that has one, in one query."""
        latest = _latest_per(refusals, (refusals.c.message_type,), (refusals.c.at, refusals.c.id))
        with self._connect("reading the latest refusals") as conn:
            return {row.message_type: rows.refusal_record(row._mapping) for row in conn.execute(latest)}

    def latest_evidence_of(
        self, kinds: Iterable[EvidenceKind | str], message_types: Iterable[str] | None = None
    ) -> dict[tuple[str, EvidenceKind], EvidenceRecord]:
        """The latest evidence of each of ``kinds`` for every message type (or only ``message_types``), keyed
        ``(message_type, kind)``: what ``latest_evidence`` answers one at a time, in one query per 500 types."""
        wanted = sorted({values.member(EvidenceKind, kind, "evidence kind").value for kind in kinds})
        if not wanted:
            return {}
        chosen = None if message_types is None else sorted(set(message_types))
        found: dict[tuple[str, EvidenceKind], EvidenceRecord] = {}
        chunks = [None] if chosen is None else [chosen[i : i + 500] for i in range(0, len(chosen), 500)]
        with self._connect("reading the latest evidence of many message types") as conn:
            for chunk in chunks:
                where = [evidence.c.kind.in_(wanted)]
                if chunk is not None:
                    where.append(evidence.c.message_type.in_(chunk))
                latest = _latest_per(
                    evidence,
                    (evidence.c.message_type, evidence.c.kind),
                    (evidence.c.collected_at, evidence.c.id),
                    where,
                )
                for row in conn.execute(latest):
                    record = rows.evidence_record(row._mapping)
                    found[(record.message_type, record.kind)] = record
        return found

    def transitions_by(self, actor: str, run_ids: Iterable[str] | None = None) -> list[TransitionRecord]:
        """Every transition ``actor`` applied in a run (in ``run_ids`` only, if given), of every type."""
        query = select(transitions).where(transitions.c.actor == actor, transitions.c.run_id.is_not(None))
        if run_ids is not None:
            query = query.where(transitions.c.run_id.in_(sorted(set(run_ids))))
        with self._connect(f"reading the transitions of {actor}") as conn:
            return [rows.transition_record(row._mapping) for row in conn.execute(query.order_by(transitions.c.id))]

    def refusals_by(self, actor: str, run_ids: Iterable[str] | None = None) -> list[RefusalRecord]:
        """Every refusal recorded by ``actor`` in a run (in ``run_ids`` only, if given), of every type."""
        query = select(refusals).where(refusals.c.actor == actor, refusals.c.run_id.is_not(None))
        if run_ids is not None:
            query = query.where(refusals.c.run_id.in_(sorted(set(run_ids))))
        with self._connect(f"reading the refusals of {actor}") as conn:
            return [rows.refusal_record(row._mapping) for row in conn.execute(query.order_by(refusals.c.id))]

    def evidence_of_runs(
        self, kinds: Iterable[EvidenceKind | str], run_ids: Iterable[str] | None = None
    ) -> list[EvidenceMark]:
        """Every piece of evidence of ``kinds`` that names a run (in ``run_ids`` only, if given), of every type:
        its type, kind, verdict and time, not its figures (a run of an estate records thousands, and the run
        pages list them; reading and parsing each one's JSON was most of their cost)."""
        wanted = sorted({values.member(EvidenceKind, kind, "evidence kind").value for kind in kinds})
        if not wanted:
            return []
        columns = (evidence.c.message_type, evidence.c.kind, evidence.c.verdict, evidence.c.collected_at)
        query = select(*columns, evidence.c.run_id).where(evidence.c.kind.in_(wanted), evidence.c.run_id.is_not(None))
        if run_ids is not None:
            query = query.where(evidence.c.run_id.in_(sorted(set(run_ids))))
        with self._connect("reading the evidence of runs") as conn:
            return [
                EvidenceMark(message_type, EvidenceKind(kind), Verdict(verdict), collected_at, run_id)
                for message_type, kind, verdict, collected_at, run_id in conn.execute(query.order_by(evidence.c.id))
            ]

    def run_times(self, actor: str, kinds: Iterable[EvidenceKind | str]) -> dict[str, datetime]:
        """Each run id ``actor`` applied or refused a step in, or that recorded evidence of ``kinds``, with the
        time of the latest thing it did: in three grouped queries, no row's content read."""
        wanted = sorted({values.member(EvidenceKind, kind, "evidence kind").value for kind in kinds})
        found: dict[str, datetime] = {}
        queries = [
            select(table.c.run_id, func.max(table.c.at))
            .where(table.c.actor == actor, table.c.run_id.is_not(None))
            .group_by(table.c.run_id)
            for table in (transitions, refusals)
        ]
        if wanted:
            queries.append(
                select(evidence.c.run_id, func.max(evidence.c.collected_at))
                .where(evidence.c.kind.in_(wanted), evidence.c.run_id.is_not(None))
                .group_by(evidence.c.run_id)
            )
        with self._connect(f"reading the runs of {actor}") as conn:
            for query in queries:
                for run_id, at in conn.execute(query):  # max() keeps the column's type: aware UTC
                    found[run_id] = max(found.get(run_id, at), at)
        return found

    # -- schema snapshots ----------------------------------------------------------------------

    def snapshot_schema(self, message_type: str, contract_version: str, schema: Mapping[str, Any]) -> bool:
        """Record the payload schema of one version; True if new, False if already recorded as is.

        Raises ``SnapshotConflict`` when the version was recorded with another schema.
        """
        document = values.json_object(schema, "schema")
        fingerprint = values.schema_fingerprint(document)

        def snapshot_once(conn: Connection) -> bool:
            recorded = conn.execute(
                select(schema_snapshots.c.fingerprint).where(
                    schema_snapshots.c.message_type == message_type,
                    schema_snapshots.c.contract_version == contract_version,
                )
            ).scalar()
            if recorded is not None:
                if recorded != fingerprint:
                    raise SnapshotConflict(message_type, contract_version, recorded, fingerprint)
                return False
            conn.execute(
                insert(schema_snapshots).values(
                    message_type=message_type,
                    contract_version=contract_version,
                    schema=document,
                    fingerprint=fingerprint,
                    recorded_at=values.now(),
                )
            )
            return True

        return self._write_retrying(f"recording the schema of {message_type} {contract_version}", snapshot_once)

    def schema_history(self, message_type: str) -> list[tuple[str, dict[str, Any]]]:
        """Every recorded (contract_version, schema) of ``message_type``, oldest to newest by semver."""
        with self._connect(f"reading the schema history of {message_type}") as conn:
            snapshots = [
                (str(row.contract_version), dict(row.schema))
                for row in conn.execute(
                    select(schema_snapshots.c.contract_version, schema_snapshots.c.schema).where(
                        schema_snapshots.c.message_type == message_type
                    )
                )
            ]
        return sorted(snapshots, key=lambda item: values.semver_key(item[0]))

    # -- queue observations --------------------------------------------------------------------

    def record_observation(
        self,
        message_type: str,
        queue: str,
        *,
        consumers: int | None,
        ready: int | None,
        unacked: int | None,
        source: ObservationSource | str,
        run_id: str | None = None,
        observed_at: datetime | None = None,
    ) -> Observation:
        row = {
            "message_type": message_type,
            "queue": queue,
            "observed_at": values.aware(observed_at, "observed_at"),
            "consumers": consumers,
            "ready": ready,
            "unacked": unacked,
            "source": values.member(ObservationSource, source, "observation source").value,
            "run_id": run_id,
        }
        with self._connect(f"recording an observation of {queue}", write=True) as conn:
            key = conn.execute(insert(observations).values(**row)).inserted_primary_key
        return rows.observation({**row, "id": key[0] if key else 0})

    def observations(self, message_type: str, since: datetime | None = None) -> list[Observation]:
        """Observations of every queue of ``message_type``, oldest first."""
        query = select(observations).where(observations.c.message_type == message_type)
        if since is not None:
            query = query.where(observations.c.observed_at >= values.aware(since, "since"))
        query = query.order_by(observations.c.observed_at, observations.c.id)
        with self._connect(f"reading observations of {message_type}") as conn:
            return [rows.observation(row._mapping) for row in conn.execute(query)]

    # -- broker activity (the recorder writes, the retirement audit reads) --------------------------

    def store_broker_events(self, events: Sequence[BrokerEvent]) -> int:
        """Apply a batch of broker events in one transaction; returns how many were new."""
        if not events:
            return 0
        return self._write_retrying(
            f"storing {len(events)} broker events", lambda conn: activity.apply_events(conn, events)
        )

    def open_coverage_segment(
        self,
        segment_id: str,
        *,
        started_at: datetime,
        host: str | None,
        covered_from: datetime | None = None,
        gap_reason: str | None = None,
    ) -> CoverageGap | None:
        """A recorder's new segment. With ``covered_from`` the recorder has decided where its coverage starts
        (docs/retirement-audit.md#restarts-standby-and-the-buffer): from the last confirmed moment when it proved
        that nothing was lost since, else from now, with ``gap_reason`` for the gap in between, recorded here
        (and the reader sessions left open then are known only until it starts). Returns that gap. Other
        segments still open are closed: their recorder went away without closing them. Without
        ``covered_from`` the gap, if any, is decided by the first ``extend_coverage``."""
        started_at = values.aware(started_at, "started_at")
        row = {"id": segment_id, "started_at": started_at, "host": host}

        def open_segment(conn: Connection) -> CoverageGap | None:
            others = conn.execute(select(coverage_segments).where(coverage_segments.c.ended_at.is_(None))).mappings()
            for other in list(others):
                conn.execute(
                    update(coverage_segments)
                    .where(coverage_segments.c.id == other["id"])
                    .values(ended_at=other["covered_until"] or other["started_at"], end_reason=_UNCLOSED)
                )
            if covered_from is None:
                conn.execute(insert(coverage_segments).values(**row))
                return None
            start = values.aware(covered_from, "covered_from")
            gap = None
            if gap_reason is not None:
                last = _last_confirmation(conn)
                if last is not None and last.covered_until is not None and last.covered_until < start:
                    gap = _record_gap(conn, last.covered_until, start, gap_reason, close_sessions=True)
            conn.execute(insert(coverage_segments).values(**row, covered_from=start))
            return gap

        return self._write_retrying("opening a recorder coverage segment", open_segment)

    def last_confirmation(self) -> CoverageSegment | None:
        """The segment that confirmed the latest moment (its ``covered_until``); None before any confirmation."""
        with self._connect("reading the recorder's last confirmation") as conn:
            return _last_confirmation(conn)

    def extend_coverage(self, segment_id: str, *, covered_from: datetime, until: datetime) -> CoverageGap | None:
        """Everything from ``covered_from`` (kept from the first call) until ``until`` is stored.

        The first call of a segment records the gap since the previous segment's coverage ended (and
        closes the reader sessions left open then: what they did after it is unknown); returns that gap.
        """
        covered_from, until = values.aware(covered_from, "covered_from"), values.aware(until, "until")

        def extend(conn: Connection) -> CoverageGap | None:
            this = conn.execute(select(coverage_segments).where(coverage_segments.c.id == segment_id)).first()
            if this is None:
                raise ValueError(f"no coverage segment {segment_id!r}: open it first")
            gap = None
            if this.covered_from is None:
                gap = _gap_before(conn, segment_id, covered_from)
                conn.execute(
                    update(coverage_segments)
                    .where(coverage_segments.c.id == segment_id)
                    .values(covered_from=covered_from)
                )
            conn.execute(
                update(coverage_segments).where(coverage_segments.c.id == segment_id).values(covered_until=until)
            )
            return gap

        return self._write_retrying("extending the recorder's coverage", extend)

    def end_coverage_segment(self, segment_id: str, *, at: datetime, reason: str) -> None:
        with self._connect("closing a recorder coverage segment", write=True) as conn:
            conn.execute(
                update(coverage_segments)
                .where(coverage_segments.c.id == segment_id)
                .values(ended_at=values.aware(at, "at"), end_reason=reason)
            )

    def record_gap(self, start: datetime, end: datetime, reason: str, *, close_sessions: bool = False) -> None:
        """Something of ``start``..``end`` is not known (an event that could not be stored, events the broker
        dropped): a gap all the same. ``close_sessions``: events of that interval are lost, so the reader
        sessions open then are known only until it starts."""
        start, end = values.aware(start, "start"), values.aware(end, "end")
        self._write_retrying(
            "recording a gap in the broker activity",
            lambda conn: _record_gap(conn, start, end, reason, close_sessions=close_sessions),
        )

    def broker_events_since(self, since: datetime) -> tuple[int, datetime | None]:
        """How many broker events were stored with a moment after ``since``, and the newest moment stored."""
        since = values.aware(since, "since")
        with self._connect("counting stored broker events") as conn:
            return activity.events_since(conn, since)

    def coverage(self, since: datetime) -> tuple[list[CoverageSegment], list[CoverageGap]]:
        """The recorder's segments and the gaps between them that reach past ``since``, oldest first."""
        since = values.aware(since, "since")
        with self._connect("reading the recorder's coverage") as conn:
            return activity.segments_between(conn, since), activity.gaps_between(conn, since)

    def reader_sessions(
        self, queues: Iterable[tuple[str, str]], *, since: datetime, until: datetime
    ) -> list[ReaderSession]:
        """Reader sessions on any of ``queues`` ((vhost, name) pairs) that overlap ``since``..``until``."""
        with self._connect("reading reader sessions") as conn:
            return activity.sessions_of(conn, queues, values.aware(since, "since"), values.aware(until, "until"))

    def broker_changes(self, queues: Iterable[tuple[str, str]], *, since: datetime) -> list[BrokerChange]:
        """Queue and binding creations and deletions of ``queues`` since ``since``, oldest first."""
        with self._connect("reading broker changes") as conn:
            return activity.changes_of(conn, queues, values.aware(since, "since"))

    def record_queue_counters(self, counters: Sequence[QueueCounters]) -> None:
        with self._connect(f"recording the counters of {len(counters)} queues", write=True) as conn:
            activity.insert_counters(conn, counters)

    def queue_counters(self, message_type: str, *, since: datetime) -> list[QueueCounters]:
        """Every queue-counter snapshot of ``message_type``'s audits since ``since``, oldest first."""
        with self._connect(f"reading the queue counters of {message_type}") as conn:
            return activity.counters_of(conn, message_type, values.aware(since, "since"))

    def prune_broker_activity(self, before: datetime) -> int:
        """Forget broker activity that ended before ``before`` (the recorder's retention)."""
        with self._connect("pruning broker activity", write=True) as conn:
            return activity.prune(conn, values.aware(before, "before"))

    # -- catalogue fingerprints ----------------------------------------------------------------

    def fingerprint(self, message_type: str) -> str | None:
        with self._connect(f"reading the fingerprint of {message_type}") as conn:
            value = conn.execute(
                select(fingerprints.c.fingerprint).where(fingerprints.c.message_type == message_type)
            ).scalar()
            return str(value) if value is not None else None

    def set_fingerprint(self, message_type: str, fingerprint: str) -> None:
        def upsert(conn: Connection) -> None:
            row = {"fingerprint": fingerprint, "updated_at": values.now()}
            where = fingerprints.c.message_type == message_type
            if conn.execute(update(fingerprints).where(where).values(**row)).rowcount == 0:
                conn.execute(insert(fingerprints).values(message_type=message_type, **row))

        self._write_retrying(f"recording the fingerprint of {message_type}", upsert)

    # -- the edge: connections, transactions, error mapping -------------------------------------

    @contextmanager
    def _connect(self, action: str, *, write: bool = False) -> Iterator[Connection]:
        """One transaction; SQLAlchemy errors leave as ``StoreError`` (the one place they are mapped)."""
        if self._engine is None:
            raise StoreError(f"registry store {self.url}: {action} failed: the registry is closed")
        try:
            with self._engine.connect() as conn:
                if write:
                    conn.execution_options(**{WRITE_OPTION: True})
                with conn.begin():
                    yield conn
        except SQLAlchemyError as exc:
            raise store_error(self._url, action, exc) from exc

    def _write_retrying(self, action: str, body: Callable[[Connection], T]) -> T:
        """Run ``body`` in a write transaction; once more if a concurrent insert won a unique key."""
        try:
            with self._connect(action, write=True) as conn:
                return body(conn)
        except StoreError as exc:
            if not isinstance(exc.__cause__, IntegrityError):
                raise
        with self._connect(action, write=True) as conn:
            return body(conn)


# -- SQL helpers -----------------------------------------------------------------------------------


_UNCLOSED = "the recorder stopped without closing its segment (killed, or its machine went down)"


def _last_confirmation(conn: Connection) -> CoverageSegment | None:
    row = conn.execute(
        select(coverage_segments)
        .where(coverage_segments.c.covered_until.is_not(None))
        .order_by(coverage_segments.c.covered_until.desc())
        .limit(1)
    ).first()
    return activity.segment(row._mapping) if row is not None else None


def _record_gap(conn: Connection, start: datetime, end: datetime, reason: str, *, close_sessions: bool) -> CoverageGap:
    """The gap ``start``..``end``, stored once (a second recording of the same interval changes nothing)."""
    exists = conn.execute(
        select(coverage_gaps.c.id).where(coverage_gaps.c.start == start, coverage_gaps.c.end == end)
    ).first()
    if exists is None:
        conn.execute(insert(coverage_gaps).values(start=start, end=end, reason=reason))
        if close_sessions:
            activity.close_open_sessions(conn, start, end)
    return CoverageGap(start, end, reason)


def _gap_before(conn: Connection, segment_id: str, covered_from: datetime) -> CoverageGap | None:
    """The gap between the latest earlier segment's coverage and ``covered_from``, stored once."""
    previous = conn.execute(
        select(coverage_segments)
        .where(
            coverage_segments.c.id != segment_id,
            coverage_segments.c.covered_until.is_not(None),
            coverage_segments.c.covered_until <= covered_from,
        )
        .order_by(coverage_segments.c.covered_until.desc())
        .limit(1)
    ).first()
    if previous is None:
        return None
    start = previous.covered_until
    activity.close_open_sessions(conn, start, covered_from)  # what they did in the gap is unknown, recorded or not
    return _record_gap(conn, start, covered_from, previous.end_reason or _UNCLOSED, close_sessions=False)


def _latest_per(table: Any, group: Sequence[Any], newest: Sequence[Any], where: Sequence[Any] = ()) -> Select[Any]:
    """The newest row (by ``newest``, descending) of each ``group`` of ``table``, in one query.

    Each group's newest id is looked up through the group's index (a correlated ``LIMIT 1``), so the
    rows read are one per group, never the whole history (a window function over the table reads all).
    """
    pairs = select(*group).where(*where).distinct().subquery("latest_groups")
    other = table.alias("newer")
    newest_id = (
        select(other.c.id)
        .where(*(other.c[column.name] == pairs.c[column.name] for column in group))
        .order_by(*(other.c[column.name].desc() for column in newest))
        .limit(1)
        .scalar_subquery()
    )
    return select(table).select_from(pairs).join(table, table.c.id == newest_id)


def _read_state(conn: Connection, message_type: str) -> VersionState | None:
    row = conn.execute(select(contract_versions).where(contract_versions.c.message_type == message_type)).first()
    return rows.version_state(row._mapping) if row else None


def _insert_transition(
    conn: Connection,
    message_type: str,
    revision: int,
    from_status: Status | None,
    to_status: Status,
    at: datetime,
    actor: str,
    run_id: str | None,
    reason: str,
    evidence_id: int | None,
) -> None:
    conn.execute(
        insert(transitions).values(
            message_type=message_type,
            revision=revision,
            from_status=from_status.value if from_status else None,
            to_status=to_status.value,
            at=at,
            actor=actor,
            run_id=run_id,
            reason=reason,
            evidence_id=evidence_id,
        )
    )


def _lost_race(conn: Connection, expected: VersionState, to: Status) -> ConcurrentTransition:
    """Name who got there first: the state now and the latest transition."""
    step = f"{expected.message_type}: {expected.status} -> {to} was not applied"
    current = _read_state(conn, expected.message_type)
    if current is None:
        return ConcurrentTransition(f"{step}: the registry holds no state for it; register it first")
    row = conn.execute(
        select(transitions)
        .where(transitions.c.message_type == expected.message_type)
        .order_by(transitions.c.revision.desc())
        .limit(1)
    ).first()
    last = rows.transition_record(row._mapping) if row else None
    winner = (
        f"; last transition {last.from_status or 'none'} -> {last.to_status} by {last.actor}"
        f"{f' (run {last.run_id})' if last.run_id else ''} at {last.at.isoformat()}"
        if last
        else ""
    )
    return ConcurrentTransition(
        f"{step}: another run got there first — the registry is at revision {current.revision} "
        f"({current.status}, version {current.contract_version}), not {expected.revision} ({expected.status})"
        f"{winner}; re-read the effective status and reconcile again"
    )


if TYPE_CHECKING:

    def _satisfies_the_protocol(store: SqlRegistry) -> DomainRegistry:
        """mypy proves here that the SQL store is the ``Registry`` the domain depends on."""
        return store

    def _satisfies_the_activity_log(store: SqlRegistry) -> ActivityLog:
        return store

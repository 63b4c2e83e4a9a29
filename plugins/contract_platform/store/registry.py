"""The registry store: effective status, append-only history, refusals, evidence, snapshots, observations.

``SqlRegistry`` is the only code that talks SQL (with ``activity``, its broker-activity half), on the database
driver itself through ``sql.Database``: every call runs in one transaction opened by ``SqlRegistry._connect``,
which maps any driver error, once, to ``StoreError`` naming the database by ``redact_url``. Status changes use
optimistic concurrency on ``revision`` on every database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from contract_platform.catalog.model import Status
from contract_platform.errors import ConcurrentTransition, SnapshotConflict, StoreError
from contract_platform.evidence import EvidenceKind, Verdict
from contract_platform.evidence.records import (
    BrokerChange,
    BrokerEvent,
    CoverageGap,
    CoverageSegment,
    Delivery,
    DeliveryWatch,
    EvidenceMark,
    EvidenceRecord,
    Observation,
    ObservationSource,
    QueueCounters,
    ReaderSession,
    RefusalRecord,
    TransitionRecord,
    VersionState,
)
from contract_platform.settings import redact_url, registry_url
from contract_platform.store import activity, migrations, rows, values
from contract_platform.store.sql import Database, Row, Transaction, is_integrity_error, marks

if TYPE_CHECKING:
    from contract_platform.evidence.registry import ActivityLog
    from contract_platform.evidence.registry import Registry as DomainRegistry

__all__ = ["SqlRegistry"]

T = TypeVar("T")


class SqlRegistry:
    """One registry database. Open with ``SqlRegistry.open(url)``; close with ``close()`` or a ``with`` block."""

    def __init__(self, database: Database) -> None:
        self._database = database
        self.url = redact_url(database.url)

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    def open(cls, url: str | None = None) -> SqlRegistry:
        """Connect (default ``settings.registry_url()``), then create or upgrade the schema."""
        registry = cls(Database(url or registry_url()))
        try:
            migrations.ensure_current(registry._database)
        except ValueError as exc:  # a schema newer than this code
            registry.close()
            raise StoreError(f"registry store {registry.url}: {exc}") from exc
        except StoreError:
            registry.close()
            raise
        return registry

    def close(self) -> None:
        self._database.close()

    def __enter__(self) -> SqlRegistry:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqlRegistry({self.url!r})"

    def schema_version(self) -> int:
        with self._connect("reading the schema version") as tx:
            return migrations.current_version(tx)

    # -- effective status and history ----------------------------------------------------------

    def effective(self, message_type: str) -> VersionState | None:
        with self._connect(f"reading the effective status of {message_type}") as tx:
            return _read_state(tx, message_type)

    def all_effective(self) -> list[VersionState]:
        with self._connect("reading effective statuses") as tx:
            found = tx.rows("SELECT * FROM cp_contract_versions ORDER BY message_type")
            return [rows.version_state(row) for row in found]

    def register(
        self, message_type: str, contract_version: str, *, actor: str, run_id: str | None = None
    ) -> VersionState:
        """A new message type becomes ``proposed`` (transition None -> proposed recorded).

        Registering a known one changes nothing but its ``contract_version`` (which bumps ``revision``,
        so a plan made against the old version cannot be applied).
        """

        def register_once(tx: Transaction) -> VersionState:
            now = values.now()
            state = _read_state(tx, message_type)
            if state is None:
                tx.insert(
                    "cp_contract_versions",
                    {
                        "message_type": message_type,
                        "effective_status": Status.PROPOSED.value,
                        "contract_version": contract_version,
                        "revision": 1,
                        "updated_at": now,
                    },
                )
                _insert_transition(
                    tx,
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
            tx.execute(
                "UPDATE cp_contract_versions SET contract_version = ?, revision = ?, updated_at = ? "
                "WHERE message_type = ?",
                [contract_version, state.revision + 1, now, message_type],
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
        with self._connect(f"applying {expected.status} -> {to} to {message_type}", write=True) as tx:
            changed = tx.execute(
                "UPDATE cp_contract_versions SET effective_status = ?, revision = ?, updated_at = ? "
                "WHERE message_type = ? AND revision = ? AND effective_status = ?",
                [to.value, revision, now, message_type, expected.revision, expected.status.value],
            )
            if changed != 1:
                raise _lost_race(tx, expected, to)
            _insert_transition(tx, message_type, revision, expected.status, to, now, actor, run_id, reason, evidence_id)
        return VersionState(message_type, to, expected.contract_version, revision, now)

    def transitions(self, message_type: str) -> list[TransitionRecord]:
        """Every transition of ``message_type``, oldest first."""
        with self._connect(f"reading the history of {message_type}") as tx:
            found = tx.rows("SELECT * FROM cp_transitions WHERE message_type = ? ORDER BY revision, id", [message_type])
            return [rows.transition_record(row) for row in found]

    def transition(self, message_type: str, revision: int) -> TransitionRecord | None:
        """The transition that produced ``revision`` (None if a version change, not a transition, did)."""
        with self._connect(f"reading a transition of {message_type}") as tx:
            row = tx.first(
                "SELECT * FROM cp_transitions WHERE message_type = ? AND revision = ?", [message_type, revision]
            )
            return rows.transition_record(row) if row else None

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
        with self._connect(f"recording a refusal for {message_type}", write=True) as tx:
            key = tx.insert("cp_refusals", row, returning_id=True)
        return rows.refusal_record({**row, "id": key})

    def refusals(self, message_type: str, limit: int = 20) -> list[RefusalRecord]:
        """The latest refusals of ``message_type``, newest first."""
        with self._connect(f"reading refusals of {message_type}") as tx:
            found = tx.rows(
                "SELECT * FROM cp_refusals WHERE message_type = ? ORDER BY at DESC, id DESC LIMIT ?",
                [message_type, limit],
            )
            return [rows.refusal_record(row) for row in found]

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
        with self._connect(f"adding {row['kind']} evidence for {message_type}", write=True) as tx:
            key = tx.insert("cp_evidence", row, returning_id=True)
        return rows.evidence_record({**row, "id": key})

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
        where, params = ["message_type = ?"], list[Any]([message_type])
        if kind is not None:
            where.append("kind = ?")
            params.append(values.member(EvidenceKind, kind, "evidence kind").value)
        if since is not None:
            where.append("collected_at >= ?")
            params.append(values.aware(since, "since"))
        if contract_version is not None:
            where.append("contract_version = ?")
            params.append(contract_version)
        query = f"SELECT * FROM cp_evidence WHERE {' AND '.join(where)} ORDER BY collected_at DESC, id DESC LIMIT ?"
        with self._connect(f"reading evidence of {message_type}") as tx:
            return [rows.evidence_record(row) for row in tx.rows(query, [*params, limit])]

    def prune_evidence(self, before: datetime, *, dry_run: bool = False) -> int:
        """Forget evidence collected before ``before`` (``housekeeping``'s evidence retention), except the latest of
        each (message type, kind, contract version), which guards and pages read, and any a status change names.
        ``dry_run``: count what would go, forget nothing."""
        victims = (
            "FROM cp_evidence WHERE collected_at < ? "
            "AND id NOT IN (SELECT evidence_id FROM cp_transitions WHERE evidence_id IS NOT NULL) "
            "AND EXISTS (SELECT 1 FROM cp_evidence AS newer WHERE newer.message_type = cp_evidence.message_type "
            "AND newer.kind = cp_evidence.kind AND newer.contract_version = cp_evidence.contract_version "
            "AND (newer.collected_at > cp_evidence.collected_at "
            "OR (newer.collected_at = cp_evidence.collected_at AND newer.id > cp_evidence.id)))"
        )
        at = [values.aware(before, "before")]
        if dry_run:
            with self._connect("counting the evidence to prune") as tx:
                return int(tx.scalar(f"SELECT COUNT(*) {victims}", at))
        with self._connect("pruning evidence", write=True) as tx:
            return tx.execute(f"DELETE {victims}", at)

    def reclaim_space(self, *, min_free_ratio: float) -> int:
        """Give the space of deleted rows back to the file system when at least ``min_free_ratio`` of an SQLite
        file is free pages (``VACUUM``, then a WAL checkpoint); bytes the file shrank by. PostgreSQL: 0, its
        autovacuum reuses the space of deleted rows."""
        return self._database.reclaim_space("reclaiming the space of deleted rows", min_free_ratio=min_free_ratio)

    # -- batched reads for pages that show many versions at once (the Contracts page) --------------

    def latest_transitions(self) -> dict[str, TransitionRecord]:
        """The latest transition of every message type, in one query."""
        latest = _latest_per("cp_transitions", ("message_type",), ("revision", "id"))
        with self._connect("reading the latest transitions") as tx:
            return {row["message_type"]: rows.transition_record(row) for row in tx.rows(latest)}

    def latest_refusals(self) -> dict[str, RefusalRecord]:
        """The latest refusal of every message type that has one, in one query."""
        latest = _latest_per("cp_refusals", ("message_type",), ("at", "id"))
        with self._connect("reading the latest refusals") as tx:
            return {row["message_type"]: rows.refusal_record(row) for row in tx.rows(latest)}

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
        with self._connect("reading the latest evidence of many message types") as tx:
            for chunk in chunks:
                where, params = f"kind IN ({marks(len(wanted))})", list(wanted)
                if chunk is not None:
                    where += f" AND message_type IN ({marks(len(chunk))})"
                    params += chunk
                latest = _latest_per("cp_evidence", ("message_type", "kind"), ("collected_at", "id"), where)
                for row in tx.rows(latest, params):
                    record = rows.evidence_record(row)
                    found[(record.message_type, record.kind)] = record
        return found

    def transitions_by(self, actor: str, run_ids: Iterable[str] | None = None) -> list[TransitionRecord]:
        """Every transition ``actor`` applied in a run (in ``run_ids`` only, if given), of every type."""
        query, params = _of_runs("SELECT * FROM cp_transitions WHERE actor = ?", [actor], run_ids)
        with self._connect(f"reading the transitions of {actor}") as tx:
            return [rows.transition_record(row) for row in tx.rows(f"{query} ORDER BY id", params)]

    def refusals_by(self, actor: str, run_ids: Iterable[str] | None = None) -> list[RefusalRecord]:
        """Every refusal recorded by ``actor`` in a run (in ``run_ids`` only, if given), of every type."""
        query, params = _of_runs("SELECT * FROM cp_refusals WHERE actor = ?", [actor], run_ids)
        with self._connect(f"reading the refusals of {actor}") as tx:
            return [rows.refusal_record(row) for row in tx.rows(f"{query} ORDER BY id", params)]

    def evidence_of_runs(
        self, kinds: Iterable[EvidenceKind | str], run_ids: Iterable[str] | None = None
    ) -> list[EvidenceMark]:
        """Every piece of evidence of ``kinds`` that names a run (in ``run_ids`` only, if given), of every type:
        its type, kind, verdict and time, not its figures (a run of an estate records thousands, and the run
        pages list them; reading and parsing each one's JSON was most of their cost)."""
        wanted = sorted({values.member(EvidenceKind, kind, "evidence kind").value for kind in kinds})
        if not wanted:
            return []
        query, params = _of_runs(
            f"SELECT message_type, kind, verdict, collected_at, run_id FROM cp_evidence WHERE kind IN ({marks(len(wanted))})",
            wanted,
            run_ids,
        )
        with self._connect("reading the evidence of runs") as tx:
            return [
                rows.record_of(EvidenceMark, row, kind=EvidenceKind(row["kind"]), verdict=Verdict(row["verdict"]))
                for row in tx.rows(f"{query} ORDER BY id", params)
            ]

    def run_times(self, actor: str, kinds: Iterable[EvidenceKind | str]) -> dict[str, datetime]:
        """Each run id ``actor`` applied or refused a step in, or that recorded evidence of ``kinds``, with the
        time of the latest thing it did: in three grouped queries, no row's content read."""
        wanted = sorted({values.member(EvidenceKind, kind, "evidence kind").value for kind in kinds})
        found: dict[str, datetime] = {}
        queries: list[tuple[str, list[Any]]] = [
            (
                f"SELECT run_id, MAX(at) AS at FROM {table} WHERE actor = ? AND run_id IS NOT NULL GROUP BY run_id",
                [actor],
            )
            for table in ("cp_transitions", "cp_refusals")
        ]
        if wanted:
            queries.append(
                (
                    "SELECT run_id, MAX(collected_at) AS at FROM cp_evidence "
                    f"WHERE kind IN ({marks(len(wanted))}) AND run_id IS NOT NULL GROUP BY run_id",
                    list(wanted),
                )
            )
        with self._connect(f"reading the runs of {actor}") as tx:
            for query, params in queries:
                for row in tx.rows(query, params):  # named "at": read back as an aware UTC moment
                    run_id, at = row["run_id"], row["at"]
                    found[run_id] = max(found.get(run_id, at), at)
        return found

    # -- schema snapshots ----------------------------------------------------------------------

    def snapshot_schema(self, message_type: str, contract_version: str, schema: Mapping[str, Any]) -> bool:
        """Record the payload schema of one version; True if new, False if already recorded as is.

        Raises ``SnapshotConflict`` when the version was recorded with another schema.
        """
        document = values.json_object(schema, "schema")
        fingerprint = values.schema_fingerprint(document)

        def snapshot_once(tx: Transaction) -> bool:
            recorded = tx.scalar(
                "SELECT fingerprint FROM cp_schema_snapshots WHERE message_type = ? AND contract_version = ?",
                [message_type, contract_version],
            )
            if recorded is not None:
                if recorded != fingerprint:
                    raise SnapshotConflict(message_type, contract_version, recorded, fingerprint)
                return False
            tx.insert(
                "cp_schema_snapshots",
                {
                    "message_type": message_type,
                    "contract_version": contract_version,
                    "schema": document,
                    "fingerprint": fingerprint,
                    "recorded_at": values.now(),
                },
            )
            return True

        return self._write_retrying(f"recording the schema of {message_type} {contract_version}", snapshot_once)

    def schema_history(self, message_type: str) -> list[tuple[str, dict[str, Any]]]:
        """Every recorded (contract_version, schema) of ``message_type``, oldest to newest by semver."""
        with self._connect(f"reading the schema history of {message_type}") as tx:
            snapshots = [
                (str(row["contract_version"]), dict(row["schema"]))
                for row in tx.rows(
                    'SELECT contract_version, "schema" FROM cp_schema_snapshots WHERE message_type = ?', [message_type]
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
        with self._connect(f"recording an observation of {queue}", write=True) as tx:
            key = tx.insert("cp_observations", row, returning_id=True)
        return rows.observation({**row, "id": key})

    def observations(self, message_type: str, since: datetime | None = None) -> list[Observation]:
        """Observations of every queue of ``message_type``, oldest first."""
        query, params = "SELECT * FROM cp_observations WHERE message_type = ?", list[Any]([message_type])
        if since is not None:
            query += " AND observed_at >= ?"
            params.append(values.aware(since, "since"))
        with self._connect(f"reading observations of {message_type}") as tx:
            return [rows.observation(row) for row in tx.rows(f"{query} ORDER BY observed_at, id", params)]

    # -- broker activity (the recorder writes, the retirement audit reads) --------------------------

    def store_broker_events(self, events: Sequence[BrokerEvent]) -> int:
        """Apply a batch of broker events in one transaction; returns how many were new."""
        if not events:
            return 0
        return self._write_retrying(
            f"storing {len(events)} broker events", lambda tx: activity.apply_events(tx, events)
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

        def open_segment(tx: Transaction) -> CoverageGap | None:
            for other in tx.rows("SELECT * FROM cp_coverage_segments WHERE ended_at IS NULL"):
                tx.execute(
                    "UPDATE cp_coverage_segments SET ended_at = ?, end_reason = ? WHERE id = ?",
                    [other["covered_until"] or other["started_at"], _UNCLOSED, other["id"]],
                )
            if covered_from is None:
                tx.insert("cp_coverage_segments", row)
                return None
            start = values.aware(covered_from, "covered_from")
            gap = None
            if gap_reason is not None:
                last = _last_confirmation(tx)
                if last is not None and last.covered_until is not None and last.covered_until < start:
                    gap = _record_gap(tx, last.covered_until, start, gap_reason, close_sessions=True)
            tx.insert("cp_coverage_segments", {**row, "covered_from": start})
            return gap

        return self._write_retrying("opening a recorder coverage segment", open_segment)

    def last_confirmation(self) -> CoverageSegment | None:
        """The segment that confirmed the latest moment (its ``covered_until``); None before any confirmation."""
        with self._connect("reading the recorder's last confirmation") as tx:
            return _last_confirmation(tx)

    def extend_coverage(self, segment_id: str, *, covered_from: datetime, until: datetime) -> CoverageGap | None:
        """Everything from ``covered_from`` (kept from the first call) until ``until`` is stored.

        The first call of a segment records the gap since the previous segment's coverage ended (and
        closes the reader sessions left open then: what they did after it is unknown); returns that gap.
        """
        covered_from, until = values.aware(covered_from, "covered_from"), values.aware(until, "until")

        def extend(tx: Transaction) -> CoverageGap | None:
            this = tx.first("SELECT covered_from FROM cp_coverage_segments WHERE id = ?", [segment_id])
            if this is None:
                raise ValueError(f"no coverage segment {segment_id!r}: open it first")
            gap = None
            if this["covered_from"] is None:
                gap = _gap_before(tx, segment_id, covered_from)
                tx.execute("UPDATE cp_coverage_segments SET covered_from = ? WHERE id = ?", [covered_from, segment_id])
            tx.execute("UPDATE cp_coverage_segments SET covered_until = ? WHERE id = ?", [until, segment_id])
            return gap

        return self._write_retrying("extending the recorder's coverage", extend)

    def end_coverage_segment(self, segment_id: str, *, at: datetime, reason: str) -> None:
        with self._connect("closing a recorder coverage segment", write=True) as tx:
            tx.execute(
                "UPDATE cp_coverage_segments SET ended_at = ?, end_reason = ? WHERE id = ?",
                [values.aware(at, "at"), reason, segment_id],
            )

    def record_gap(self, start: datetime, end: datetime, reason: str, *, close_sessions: bool = False) -> None:
        """Something of ``start``..``end`` is not known (an event that could not be stored, events the broker
        dropped): a gap all the same. ``close_sessions``: events of that interval are lost, so the reader
        sessions open then are known only until it starts."""
        start, end = values.aware(start, "start"), values.aware(end, "end")
        self._write_retrying(
            "recording a gap in the broker activity",
            lambda tx: _record_gap(tx, start, end, reason, close_sessions=close_sessions),
        )

    def broker_events_since(self, since: datetime) -> tuple[int, datetime | None]:
        """How many broker events were stored with a moment after ``since``, and the newest moment stored."""
        since = values.aware(since, "since")
        with self._connect("counting stored broker events") as tx:
            return activity.events_since(tx, since)

    def coverage(self, since: datetime) -> tuple[list[CoverageSegment], list[CoverageGap]]:
        """The recorder's segments and the gaps between them that reach past ``since``, oldest first."""
        since = values.aware(since, "since")
        with self._connect("reading the recorder's coverage") as tx:
            return activity.segments_between(tx, since), activity.gaps_between(tx, since)

    def reader_sessions(
        self, queues: Iterable[tuple[str, str]], *, since: datetime, until: datetime
    ) -> list[ReaderSession]:
        """Reader sessions on any of ``queues`` ((vhost, name) pairs) that overlap ``since``..``until``."""
        with self._connect("reading reader sessions") as tx:
            return activity.sessions_of(tx, queues, values.aware(since, "since"), values.aware(until, "until"))

    def broker_changes(self, queues: Iterable[tuple[str, str]], *, since: datetime) -> list[BrokerChange]:
        """Queue and binding creations and deletions of ``queues`` since ``since``, oldest first."""
        with self._connect("reading broker changes") as tx:
            return activity.changes_of(tx, queues, values.aware(since, "since"))

    def record_queue_counters(self, counters: Sequence[QueueCounters]) -> None:
        with self._connect(f"recording the counters of {len(counters)} queues", write=True) as tx:
            activity.insert_counters(tx, counters)

    def queue_counters(self, message_type: str, *, since: datetime) -> list[QueueCounters]:
        """Every queue-counter snapshot of ``message_type``'s audits since ``since``, oldest first."""
        with self._connect(f"reading the queue counters of {message_type}") as tx:
            return activity.counters_of(tx, message_type, values.aware(since, "since"))

    # -- delivery tracing (the recording audit asks, the recorder traces, the readers check reads) -------------

    def store_deliveries(self, deliveries: Sequence[Delivery]) -> int:
        """Store traced deliveries as reader sessions (``activity.store_deliveries``); returns the rows written."""
        if not deliveries:
            return 0
        return self._write_retrying(
            f"storing {len(deliveries)} traced deliveries", lambda tx: activity.store_deliveries(tx, deliveries)
        )

    def request_delivery_watches(
        self, queues: Iterable[tuple[str, str]], *, at: datetime, traced_from: datetime
    ) -> None:
        """Trace the deliveries of ``queues`` ((vhost, name) pairs), traced since ``traced_from`` when new."""
        at, traced_from = values.aware(at, "at"), values.aware(traced_from, "traced_from")
        pairs = list(queues)
        self._write_retrying(
            f"asking for the deliveries of {len(pairs)} queues to be traced",
            lambda tx: activity.request_watches(tx, pairs, at, traced_from),
        )

    def restart_delivery_watches(self, vhost: str, *, traced_from: datetime, reason: str) -> None:
        """The trace of ``vhost`` starts anew at ``traced_from`` (its queue was lost): see ``activity.restart_watches``."""
        traced_from = values.aware(traced_from, "traced_from")
        self._write_retrying(
            "restarting a delivery trace", lambda tx: activity.restart_watches(tx, vhost, traced_from, reason)
        )

    def confirm_delivery_watches(self, vhost: str, *, until: datetime | None, problem: str | None = None) -> None:
        """Every delivery traced in ``vhost`` up to ``until`` is stored; ``problem``: why not further."""
        until = values.aware(until, "until") if until is not None else None
        self._write_retrying(
            "confirming a delivery trace", lambda tx: activity.confirm_watches(tx, vhost, until, problem)
        )

    def delivery_watches(self, queues: Iterable[tuple[str, str]] | None = None) -> list[DeliveryWatch]:
        """The watches of ``queues`` (None: all), as the recorder and the readers check read them."""
        pairs = None if queues is None else list(queues)
        with self._connect("reading the delivery watches") as tx:
            return activity.watches_of(tx, pairs)

    def prune_broker_activity(self, before: datetime) -> int:
        """Forget broker activity that ended before ``before`` (the recorder's retention)."""
        with self._connect("pruning broker activity", write=True) as tx:
            return activity.prune(tx, values.aware(before, "before"))

    # -- catalogue fingerprints ----------------------------------------------------------------

    def fingerprint(self, message_type: str) -> str | None:
        with self._connect(f"reading the fingerprint of {message_type}") as tx:
            value = tx.scalar("SELECT fingerprint FROM cp_fingerprints WHERE message_type = ?", [message_type])
            return str(value) if value is not None else None

    def set_fingerprint(self, message_type: str, fingerprint: str) -> None:
        def upsert(tx: Transaction) -> None:
            now = values.now()
            changed = tx.execute(
                "UPDATE cp_fingerprints SET fingerprint = ?, updated_at = ? WHERE message_type = ?",
                [fingerprint, now, message_type],
            )
            if changed == 0:
                tx.insert(
                    "cp_fingerprints", {"message_type": message_type, "fingerprint": fingerprint, "updated_at": now}
                )

        self._write_retrying(f"recording the fingerprint of {message_type}", upsert)

    # -- the edge: connections, transactions, error mapping -------------------------------------

    @contextmanager
    def _connect(self, action: str, *, write: bool = False) -> Iterator[Transaction]:
        """One transaction; driver errors leave as ``StoreError`` (``sql.Database.transaction`` maps them)."""
        with self._database.transaction(action, write=write) as tx:
            yield tx

    def _write_retrying(self, action: str, body: Callable[[Transaction], T]) -> T:
        """Run ``body`` in a write transaction; once more if a concurrent insert won a unique key."""
        try:
            with self._connect(action, write=True) as tx:
                return body(tx)
        except StoreError as exc:
            if not is_integrity_error(exc):
                raise
        with self._connect(action, write=True) as tx:
            return body(tx)


# -- SQL helpers -----------------------------------------------------------------------------------


_UNCLOSED = "the recorder stopped without closing its segment (killed, or its machine went down)"


def _last_confirmation(tx: Transaction) -> CoverageSegment | None:
    row = tx.first(
        "SELECT * FROM cp_coverage_segments WHERE covered_until IS NOT NULL ORDER BY covered_until DESC LIMIT 1"
    )
    return activity.segment(row) if row is not None else None


def _record_gap(tx: Transaction, start: datetime, end: datetime, reason: str, *, close_sessions: bool) -> CoverageGap:
    """The gap ``start``..``end``, stored once (a second recording of the same interval changes nothing)."""
    exists = tx.first('SELECT id FROM cp_coverage_gaps WHERE "start" = ? AND "end" = ?', [start, end])
    if exists is None:
        tx.insert("cp_coverage_gaps", {"start": start, "end": end, "reason": reason})
        if close_sessions:
            activity.close_open_sessions(tx, start, end)
    return CoverageGap(start, end, reason)


def _gap_before(tx: Transaction, segment_id: str, covered_from: datetime) -> CoverageGap | None:
    """The gap between the latest earlier segment's coverage and ``covered_from``, stored once."""
    previous = tx.first(
        "SELECT covered_until, end_reason FROM cp_coverage_segments "
        "WHERE id != ? AND covered_until IS NOT NULL AND covered_until <= ? ORDER BY covered_until DESC LIMIT 1",
        [segment_id, covered_from],
    )
    if previous is None:
        return None
    start = previous["covered_until"]
    activity.close_open_sessions(tx, start, covered_from)  # what they did in the gap is unknown, recorded or not
    return _record_gap(tx, start, covered_from, previous["end_reason"] or _UNCLOSED, close_sessions=False)


def _latest_per(table: str, group: Sequence[str], newest: Sequence[str], where: str = "") -> str:
    """The newest row (by ``newest``, descending) of each ``group`` of ``table``, in one query (``where``, with
    its parameters, chooses the groups).

    Each group's newest id is looked up through the group's index (a correlated ``LIMIT 1``), so the
    rows read are one per group, never the whole history (a window function over the table reads all).
    """
    columns = ", ".join(group)
    same_group = " AND ".join(f"newer.{column} = latest_groups.{column}" for column in group)
    order = ", ".join(f"newer.{column} DESC" for column in newest)
    return (
        f"SELECT {table}.* FROM (SELECT DISTINCT {columns} FROM {table}{f' WHERE {where}' if where else ''}) "
        f"AS latest_groups JOIN {table} ON {table}.id = "
        f"(SELECT newer.id FROM {table} AS newer WHERE {same_group} ORDER BY {order} LIMIT 1)"
    )


def _of_runs(query: str, params: list[Any], run_ids: Iterable[str] | None) -> tuple[str, list[Any]]:
    """``query`` (its WHERE begun) for rows that name a run: any, or one of ``run_ids`` when given."""
    query += " AND run_id IS NOT NULL"
    if run_ids is None:
        return query, params
    chosen = sorted(set(run_ids))
    if not chosen:
        return query + " AND 1 = 0", params
    return f"{query} AND run_id IN ({marks(len(chosen))})", [*params, *chosen]


def _read_state(tx: Transaction, message_type: str) -> VersionState | None:
    row = tx.first("SELECT * FROM cp_contract_versions WHERE message_type = ?", [message_type])
    return rows.version_state(row) if row else None


def _insert_transition(
    tx: Transaction,
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
    tx.insert(
        "cp_transitions",
        {
            "message_type": message_type,
            "revision": revision,
            "from_status": from_status.value if from_status else None,
            "to_status": to_status.value,
            "at": at,
            "actor": actor,
            "run_id": run_id,
            "reason": reason,
            "evidence_id": evidence_id,
        },
    )


def _lost_race(tx: Transaction, expected: VersionState, to: Status) -> ConcurrentTransition:
    """Name who got there first: the state now and the latest transition."""
    step = f"{expected.message_type}: {expected.status} -> {to} was not applied"
    current = _read_state(tx, expected.message_type)
    if current is None:
        return ConcurrentTransition(f"{step}: the registry holds no state for it; register it first")
    row: Row | None = tx.first(
        "SELECT * FROM cp_transitions WHERE message_type = ? ORDER BY revision DESC LIMIT 1", [expected.message_type]
    )
    last = rows.transition_record(row) if row else None
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

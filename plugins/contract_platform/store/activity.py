"""The SQL of broker activity: events applied in order, reader sessions, coverage and queue counters.

Called only by ``store.registry.Registry`` inside its transactions (docs/retirement-audit.md#continuous-reader-evidence).
An event is applied once: its digest goes to ``cp_broker_events_seen`` in the same transaction, so a batch
stored again after a crash (the broker redelivers what was not acked) changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, and_, bindparam, delete, func, insert, or_, select, update

from contract_platform.evidence.records import (
    BrokerChange,
    BrokerEvent,
    CoverageGap,
    CoverageSegment,
    QueueCounters,
    ReaderSession,
)
from contract_platform.store.tables import (
    broker_changes,
    broker_channels,
    broker_connections,
    broker_events_seen,
    coverage_gaps,
    coverage_segments,
    queue_counters,
    reader_sessions,
)

__all__ = [
    "apply_events",
    "changes_of",
    "close_open_sessions",
    "counters_of",
    "events_since",
    "gaps_between",
    "insert_counters",
    "prune",
    "segments_between",
    "sessions_of",
]

_CHANGES = frozenset({"queue.created", "queue.deleted", "binding.created", "binding.deleted"})


def apply_events(conn: Connection, events: Sequence[BrokerEvent]) -> int:
    """Apply ``events`` in order; returns how many were new (not stored before).

    One batch costs a handful of statements whatever its size: who each channel belongs to is read once,
    sessions that attach and detach inside the batch are written once, the rest go as executemany.
    """
    keys = [event.key for event in events]
    seen: set[str] = set()
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        query = select(broker_events_seen.c.key).where(broker_events_seen.c.key.in_(chunk))
        seen |= {str(k) for k in conn.execute(query).scalars()}
    fresh = []
    for event in events:
        if event.key not in seen:
            seen.add(event.key)
            fresh.append(event)
    if fresh:
        conn.execute(insert(broker_events_seen), [{"key": e.key, "at": e.at} for e in fresh])
        _Batch(conn, fresh).apply()
    return len(fresh)


class _Batch:
    """The effects of one batch of new events, gathered in memory and written together."""

    def __init__(self, conn: Connection, events: Sequence[BrokerEvent]) -> None:
        self.conn, self.events = conn, events
        self.connections: dict[str, dict[str, Any]] = {}  # pid -> who (known before, or created in the batch)
        self.channels: dict[str, str | None] = {}  # channel pid -> connection pid
        self.new_connections: dict[str, dict[str, Any]] = {}
        self.new_channels: dict[str, dict[str, Any]] = {}
        self.closed_connections: list[dict[str, Any]] = []
        self.closed_channels: list[dict[str, Any]] = []
        self.sessions: list[dict[str, Any]] = []  # new rows
        self.open: dict[tuple[str, str, str, str], dict[str, Any]] = {}  # new rows still attached
        self.detached: list[dict[str, Any]] = []  # detachments of sessions stored before the batch
        self.orphans: dict[tuple[str, str, str, str], list[tuple[int, datetime]]] = {}  # stored, attached unknown
        self.adopted: list[dict[str, Any]] = []  # stored orphans whose attachment came after their detachment
        self.changes: list[dict[str, Any]] = []

    def apply(self) -> None:
        self._load()
        for event in self.events:
            self._one(event)
        conn = self.conn
        if self.new_connections:
            known = self._existing(broker_connections, list(self.new_connections))
            rows = [{"pid": pid, **row} for pid, row in self.new_connections.items() if pid not in known]
            if rows:
                conn.execute(insert(broker_connections), rows)
        if self.new_channels:
            known = self._existing(broker_channels, list(self.new_channels))
            rows = [{"pid": pid, **row} for pid, row in self.new_channels.items() if pid not in known]
            if rows:
                conn.execute(insert(broker_channels), rows)
        for table, closed in ((broker_connections, self.closed_connections), (broker_channels, self.closed_channels)):
            if closed:
                conn.execute(
                    update(table).where(table.c.pid == bindparam("b_pid")).values(closed_at=bindparam("b_at")), closed
                )
        if self.sessions:
            conn.execute(insert(reader_sessions), self.sessions)
        if self.adopted:
            conn.execute(
                update(reader_sessions)
                .where(reader_sessions.c.id == bindparam("b_id"))
                .values(attached_at=bindparam("b_at"), source="event"),
                self.adopted,
            )
        for row in self.detached:
            self._detach_stored(row)
        if self.changes:
            conn.execute(insert(broker_changes), self.changes)

    def _existing(self, table: Any, pids: list[str]) -> set[str]:
        return {str(row.pid) for row in self._rows(table, pids, table.c.pid)}

    def _rows(self, table: Any, pids: list[str], *columns: Any) -> list[Any]:
        """``columns`` of the rows of ``table`` whose pid is one of ``pids`` (500 to a statement)."""
        found: list[Any] = []
        for start in range(0, len(pids), 500):
            found += self.conn.execute(select(*columns).where(table.c.pid.in_(pids[start : start + 500]))).all()
        return found

    def _load(self) -> None:
        """Who the batch's consumers are, as far as earlier batches stored it: the channels its consumer
        events name, then the connections of those channels and of the channels opening in the batch."""
        channels = {e.get("channel") or "" for e in self.events if e.kind.startswith("consumer.")} - {""}
        for row in self._rows(broker_channels, list(channels), broker_channels.c.pid, broker_channels.c.connection_pid):
            self.channels[row.pid] = row.connection_pid
        opening = [e.get("connection") for e in self.events if e.kind == "channel.created"]
        wanted = {pid for pid in [*self.channels.values(), *opening] if pid} - self.connections.keys()
        columns = [broker_connections.c[name] for name in ("pid", "name", "client_name", "peer_host", "user")]
        for row in self._rows(broker_connections, sorted(wanted), *columns):
            self.connections[row.pid] = {
                "name": row.name,
                "client_name": row.client_name,
                "peer_host": row.peer_host,
                "user": row.user,
            }
        # detachments stored before their attachment: a recorder that takes over may be handed the newest event
        # first (docs/retirement-audit.md#restarts-standby-and-the-buffer)
        tags = sorted({e.get("consumer_tag") or "" for e in self.events if e.kind == "consumer.created"})
        for start in range(0, len(tags), 500):
            query = select(reader_sessions).where(
                reader_sessions.c.source == "orphan",
                reader_sessions.c.attached_at.is_(None),
                reader_sessions.c.consumer_tag.in_(tags[start : start + 500]),
            )
            for found in self.conn.execute(query).mappings():
                key = _identity(dict(found))
                self.orphans.setdefault(key, []).append((found["id"], found["detached_at"]))

    def _one(self, event: BrokerEvent) -> None:
        kind, f = event.kind, event.get
        if kind == "connection.created" and f("pid"):
            who = {"name": f("name"), "client_name": f("client_name"), "peer_host": f("peer_host"), "user": f("user")}
            self.connections[f("pid") or ""] = who
            self.new_connections[f("pid") or ""] = {
                **who,
                "vhost": event.vhost,
                "opened_at": event.at,
                "closed_at": None,
            }
        elif kind == "connection.closed" and f("pid"):
            self._close(self.new_connections, self.closed_connections, f("pid") or "", event.at)
        elif kind == "channel.created" and f("pid"):
            self.channels[f("pid") or ""] = f("connection")
            self.new_channels[f("pid") or ""] = {
                "connection_pid": f("connection"),
                "opened_at": event.at,
                "closed_at": None,
            }
        elif kind == "channel.closed" and f("pid"):
            self._close(self.new_channels, self.closed_channels, f("pid") or "", event.at)
        elif kind == "consumer.created" and f("queue") is not None:
            row = {**self._who(event), "attached_at": event.at, "detached_at": None, "source": "event"}
            if not self._adopt(row, event.at):
                self.sessions.append(row)
                self.open[_identity(row)] = row
        elif kind == "consumer.deleted" and f("queue") is not None:
            row = self._who(event)
            attached = self.open.pop(_identity(row), None)
            if attached is not None:
                attached["detached_at"] = event.at
            else:
                self.detached.append({**row, "detached_at": event.at})
        elif kind in _CHANGES and f("name") is not None:
            self.changes.append(
                {"kind": kind, "vhost": event.vhost, "name": f("name"), "detail": f("detail") or "", "at": event.at}
            )

    def _adopt(self, row: dict[str, Any], at: datetime) -> bool:
        """The detachment of this consumer came first (in this batch, or stored as an orphan): one session."""
        key = _identity(row)
        for index, early in enumerate(self.detached):
            if _identity(early) == key and early["detached_at"] >= at:
                del self.detached[index]
                self.sessions.append({**row, "detached_at": early["detached_at"]})
                return True
        for index, (orphan, detached_at) in enumerate(self.orphans.get(key, [])):
            if detached_at is not None and detached_at >= at:
                del self.orphans[key][index]
                self.adopted.append({"b_id": orphan, "b_at": at})
                return True
        return False

    @staticmethod
    def _close(new: dict[str, dict[str, Any]], closed: list[dict[str, Any]], pid: str, at: datetime) -> None:
        if pid in new:
            new[pid]["closed_at"] = at
        else:
            closed.append({"b_pid": pid, "b_at": at})

    def _who(self, event: BrokerEvent) -> dict[str, Any]:
        """Who a consumer event belongs to: its channel's connection, as the broker announced it."""
        channel = event.get("channel") or ""
        who = self.connections.get(self.channels.get(channel) or "")
        return {
            "vhost": event.vhost,
            "queue": event.get("queue"),
            "consumer_tag": event.get("consumer_tag") or "",
            "channel": channel,
            "connection_name": (who.get("client_name") or who.get("name")) if who else None,
            "peer_host": who.get("peer_host") if who else None,
            "user": event.get("user") or (who.get("user") if who else None),
        }

    def _detach_stored(self, row: dict[str, Any]) -> None:
        open_session = and_(
            reader_sessions.c.vhost == row["vhost"],
            reader_sessions.c.queue == row["queue"],
            reader_sessions.c.channel == row["channel"],
            reader_sessions.c.consumer_tag == row["consumer_tag"],
            reader_sessions.c.detached_at.is_(None),
        )
        updated = self.conn.execute(update(reader_sessions).where(open_session).values(detached_at=row["detached_at"]))
        if updated.rowcount == 0:
            # attached before the recorder saw it (or in a gap): a reader all the same, since some unknown moment
            self.conn.execute(insert(reader_sessions).values(**row, attached_at=None, source="orphan"))


def _identity(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return (row["vhost"], row["queue"], row["channel"], row["consumer_tag"])


def close_open_sessions(conn: Connection, at: datetime, until: datetime) -> int:
    """Events from ``at`` to ``until`` are lost: a session open then is known only until ``at``, and one that
    attached in between only at its attachment. Sessions attached after ``until`` stay open."""
    still_open = reader_sessions.c.detached_at.is_(None)
    before = or_(reader_sessions.c.attached_at.is_(None), reader_sessions.c.attached_at <= at)
    closed = conn.execute(update(reader_sessions).where(still_open, before).values(detached_at=at)).rowcount or 0
    inside = and_(reader_sessions.c.attached_at > at, reader_sessions.c.attached_at <= until)
    closed += (
        conn.execute(
            update(reader_sessions).where(still_open, inside).values(detached_at=reader_sessions.c.attached_at)
        ).rowcount
        or 0
    )
    return int(closed)


def events_since(conn: Connection, since: datetime) -> tuple[int, datetime | None]:
    """How many events with a moment after ``since`` are stored, and the newest moment stored."""
    count, newest = conn.execute(
        select(func.count(), func.max(broker_events_seen.c.at)).where(broker_events_seen.c.at >= since)
    ).one()
    if isinstance(newest, datetime) and newest.tzinfo is None:
        newest = newest.replace(tzinfo=UTC)
    return int(count or 0), newest


def sessions_of(
    conn: Connection, queues: Iterable[tuple[str, str]], since: datetime, until: datetime
) -> list[ReaderSession]:
    """Sessions on any of ``queues`` ((vhost, queue) pairs) that overlap ``since``..``until``."""
    pairs = list(dict.fromkeys(queues))
    if not pairs:
        return []
    found: list[ReaderSession] = []
    for start in range(0, len(pairs), 200):
        chunk = pairs[start : start + 200]
        which = or_(*(and_(reader_sessions.c.vhost == v, reader_sessions.c.queue == q) for v, q in chunk))
        overlapping = and_(
            or_(reader_sessions.c.attached_at.is_(None), reader_sessions.c.attached_at <= until),
            or_(reader_sessions.c.detached_at.is_(None), reader_sessions.c.detached_at >= since),
        )
        query = select(reader_sessions).where(which, overlapping).order_by(reader_sessions.c.id)
        found += [_session(row._mapping) for row in conn.execute(query)]
    return found


def _session(row: Mapping[Any, Any]) -> ReaderSession:
    return ReaderSession(
        vhost=row["vhost"],
        queue=row["queue"],
        consumer_tag=row["consumer_tag"],
        channel=row["channel"],
        attached_at=row["attached_at"],
        detached_at=row["detached_at"],
        connection_name=row["connection_name"],
        peer_host=row["peer_host"],
        user=row["user"],
        source=row["source"],
    )


def changes_of(conn: Connection, queues: Iterable[tuple[str, str]], since: datetime) -> list[BrokerChange]:
    pairs = list(dict.fromkeys(queues))
    found: list[BrokerChange] = []
    for start in range(0, len(pairs), 200):
        chunk = pairs[start : start + 200]
        which = or_(*(and_(broker_changes.c.vhost == v, broker_changes.c.name == q) for v, q in chunk))
        query = select(broker_changes).where(which, broker_changes.c.at >= since).order_by(broker_changes.c.at)
        found += [BrokerChange(row.kind, row.vhost, row.name, row.at, row.detail) for row in conn.execute(query)]
    return sorted(found, key=lambda change: change.at)


def segments_between(conn: Connection, since: datetime) -> list[CoverageSegment]:
    """Segments that covered anything after ``since`` (and any still open), oldest first."""
    query = (
        select(coverage_segments)
        .where(or_(coverage_segments.c.covered_until.is_(None), coverage_segments.c.covered_until >= since))
        .order_by(coverage_segments.c.started_at)
    )
    return [segment(row._mapping) for row in conn.execute(query)]


def segment(row: Mapping[Any, Any]) -> CoverageSegment:
    return CoverageSegment(
        id=row["id"],
        started_at=row["started_at"],
        covered_from=row["covered_from"],
        covered_until=row["covered_until"],
        ended_at=row["ended_at"],
        end_reason=row["end_reason"],
        host=row["host"],
    )


def gaps_between(conn: Connection, since: datetime) -> list[CoverageGap]:
    query = select(coverage_gaps).where(coverage_gaps.c.end >= since).order_by(coverage_gaps.c.start)
    return [CoverageGap(row.start, row.end, row.reason) for row in conn.execute(query)]


def insert_counters(conn: Connection, rows: Sequence[QueueCounters]) -> None:
    if rows:
        conn.execute(
            insert(queue_counters),
            [
                {
                    "message_type": r.message_type,
                    "vhost": r.vhost,
                    "queue": r.queue,
                    "observed_at": r.observed_at,
                    "present": r.present,
                    "deliver_get": r.deliver_get,
                    "get_empty": r.get_empty,
                    "ack": r.ack,
                    "redeliver": r.redeliver,
                    "own_deliver_get": r.own_deliver_get,
                    "own_get_empty": r.own_get_empty,
                    "own_redeliver": r.own_redeliver,
                    "run_id": r.run_id,
                    "publish": r.publish,
                    "idle_since": r.idle_since,
                    "own_until": r.own_until,
                }
                for r in rows
            ],
        )


def counters_of(conn: Connection, message_type: str, since: datetime) -> list[QueueCounters]:
    query = (
        select(queue_counters)
        .where(queue_counters.c.message_type == message_type, queue_counters.c.observed_at >= since)
        .order_by(queue_counters.c.observed_at, queue_counters.c.id)
    )
    return [
        QueueCounters(
            message_type=row.message_type,
            vhost=row.vhost,
            queue=row.queue,
            observed_at=row.observed_at,
            present=bool(row.present),
            deliver_get=row.deliver_get,
            get_empty=row.get_empty,
            ack=row.ack,
            redeliver=row.redeliver,
            own_deliver_get=row.own_deliver_get,
            own_get_empty=row.own_get_empty,
            own_redeliver=row.own_redeliver,
            run_id=row.run_id,
            publish=row.publish,
            idle_since=row.idle_since,
            own_until=row.own_until,
        )
        for row in conn.execute(query)
    ]


def prune(conn: Connection, before: datetime) -> int:
    """Forget what ended before ``before``: closed sessions, channels, connections, changes, seen digests."""
    removed = 0
    for statement in (
        delete(reader_sessions).where(reader_sessions.c.detached_at < before),
        delete(broker_channels).where(broker_channels.c.closed_at < before),
        delete(broker_connections).where(broker_connections.c.closed_at < before),
        delete(broker_changes).where(broker_changes.c.at < before),
        delete(broker_events_seen).where(broker_events_seen.c.at < before),
        delete(coverage_gaps).where(coverage_gaps.c.end < before),
        delete(coverage_segments).where(coverage_segments.c.covered_until < before),
    ):
        removed += int(conn.execute(statement).rowcount or 0)
    return removed

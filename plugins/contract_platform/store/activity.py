"""The SQL of broker activity: events applied in order, reader sessions, coverage and queue counters.

Called only by ``store.registry.SqlRegistry`` inside its transactions (docs/retirement-audit.md#continuous-reader-evidence).
An event is applied once: its digest goes to ``cp_broker_events_seen`` in the same transaction, so a batch
stored again after a crash (the broker redelivers what was not acked) changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, replace
from datetime import datetime
from typing import Any

from contract_platform.evidence.records import (
    BrokerChange,
    BrokerEvent,
    CoverageGap,
    CoverageSegment,
    Delivery,
    DeliveryWatch,
    QueueCounters,
    ReaderSession,
)
from contract_platform.store.rows import record_of
from contract_platform.store.sql import Row, Transaction, marks

__all__ = [
    "apply_events",
    "changes_of",
    "close_open_sessions",
    "confirm_watches",
    "counters_of",
    "events_since",
    "gaps_between",
    "insert_counters",
    "prune",
    "request_watches",
    "restart_watches",
    "segments_between",
    "sessions_of",
    "store_deliveries",
    "watches_of",
]

_CHANGES = frozenset({"queue.created", "queue.deleted", "binding.created", "binding.deleted"})


def apply_events(tx: Transaction, events: Sequence[BrokerEvent]) -> int:
    """Apply ``events`` in order; returns how many were new (not stored before).

    One batch costs a handful of statements whatever its size: who each channel belongs to is read once,
    sessions that attach and detach inside the batch are written once, the rest go as executemany.
    """
    keys = [event.key for event in events]
    seen: set[str] = set()
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        query = f'SELECT "key" FROM cp_broker_events_seen WHERE "key" IN ({marks(len(chunk))})'
        seen |= {str(row["key"]) for row in tx.rows(query, chunk)}
    fresh = []
    for event in events:
        if event.key not in seen:
            seen.add(event.key)
            fresh.append(event)
    if fresh:
        tx.insert_many("cp_broker_events_seen", [{"key": e.key, "at": e.at} for e in fresh])
        _Batch(tx, fresh).apply()
    return len(fresh)


class _Batch:
    """The effects of one batch of new events, gathered in memory and written together."""

    def __init__(self, tx: Transaction, events: Sequence[BrokerEvent]) -> None:
        self.tx, self.events = tx, events
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
        tx = self.tx
        if self.new_connections:
            known = self._existing("cp_broker_connections", list(self.new_connections))
            rows = [{"pid": pid, **row} for pid, row in self.new_connections.items() if pid not in known]
            tx.insert_many("cp_broker_connections", rows)
        if self.new_channels:
            known = self._existing("cp_broker_channels", list(self.new_channels))
            rows = [{"pid": pid, **row} for pid, row in self.new_channels.items() if pid not in known]
            tx.insert_many("cp_broker_channels", rows)
        for table, closed in (
            ("cp_broker_connections", self.closed_connections),
            ("cp_broker_channels", self.closed_channels),
        ):
            tx.execute_many(
                f"UPDATE {table} SET closed_at = ? WHERE pid = ?", [(c["b_at"], c["b_pid"]) for c in closed]
            )
        tx.insert_many("cp_reader_sessions", self.sessions)
        tx.execute_many(
            "UPDATE cp_reader_sessions SET attached_at = ?, source = 'event' WHERE id = ?",
            [(adopted["b_at"], adopted["b_id"]) for adopted in self.adopted],
        )
        for row in self.detached:
            self._detach_stored(row)
        tx.insert_many("cp_broker_changes", self.changes)

    def _existing(self, table: str, pids: list[str]) -> set[str]:
        return {str(row["pid"]) for row in self._rows(table, pids, "pid")}

    def _rows(self, table: str, pids: list[str], *columns: str) -> list[Row]:
        """``columns`` of the rows of ``table`` whose pid is one of ``pids`` (500 to a statement)."""
        found: list[Row] = []
        names = ", ".join(f'"{column}"' for column in columns)
        for start in range(0, len(pids), 500):
            chunk = pids[start : start + 500]
            found += self.tx.rows(f"SELECT {names} FROM {table} WHERE pid IN ({marks(len(chunk))})", chunk)
        return found

    def _load(self) -> None:
        """Who the batch's consumers are, as far as earlier batches stored it: the channels its consumer
        events name, then the connections of those channels and of the channels opening in the batch."""
        channels = {e.get("channel") or "" for e in self.events if e.kind.startswith("consumer.")} - {""}
        for row in self._rows("cp_broker_channels", list(channels), "pid", "connection_pid"):
            self.channels[row["pid"]] = row["connection_pid"]
        opening = [e.get("connection") for e in self.events if e.kind == "channel.created"]
        wanted = {pid for pid in [*self.channels.values(), *opening] if pid} - self.connections.keys()
        columns = ("pid", "name", "client_name", "peer_host", "user")
        for row in self._rows("cp_broker_connections", sorted(wanted), *columns):
            self.connections[row["pid"]] = {
                "name": row["name"],
                "client_name": row["client_name"],
                "peer_host": row["peer_host"],
                "user": row["user"],
            }
        # detachments stored before their attachment: a recorder that takes over may be handed the newest event
        # first (docs/retirement-audit.md#restarts-standby-and-the-buffer)
        tags = sorted({e.get("consumer_tag") or "" for e in self.events if e.kind == "consumer.created"})
        for start in range(0, len(tags), 500):
            chunk = tags[start : start + 500]
            query = (
                "SELECT * FROM cp_reader_sessions WHERE source = 'orphan' AND attached_at IS NULL "
                f"AND consumer_tag IN ({marks(len(chunk))})"
            )
            for found in self.tx.rows(query, chunk):
                key = _identity(found)
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
        updated = self.tx.execute(
            "UPDATE cp_reader_sessions SET detached_at = ? "
            "WHERE vhost = ? AND queue = ? AND channel = ? AND consumer_tag = ? AND detached_at IS NULL",
            [row["detached_at"], row["vhost"], row["queue"], row["channel"], row["consumer_tag"]],
        )
        if updated == 0:
            # attached before the recorder saw it (or in a gap): a reader all the same, since some unknown moment
            self.tx.insert("cp_reader_sessions", {**row, "attached_at": None, "source": "orphan"})


def _identity(row: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (row["vhost"], row["queue"], row["channel"], row["consumer_tag"])


def close_open_sessions(tx: Transaction, at: datetime, until: datetime) -> int:
    """Events from ``at`` to ``until`` are lost: a session open then is known only until ``at``, and one that
    attached in between only at its attachment. Sessions attached after ``until`` stay open."""
    closed = tx.execute(
        "UPDATE cp_reader_sessions SET detached_at = ? "
        "WHERE detached_at IS NULL AND (attached_at IS NULL OR attached_at <= ?)",
        [at, at],
    )
    closed += tx.execute(
        "UPDATE cp_reader_sessions SET detached_at = attached_at "
        "WHERE detached_at IS NULL AND attached_at > ? AND attached_at <= ?",
        [at, until],
    )
    return closed


def events_since(tx: Transaction, since: datetime) -> tuple[int, datetime | None]:
    """How many events with a moment after ``since`` are stored, and the newest moment stored."""
    found = tx.first("SELECT COUNT(*) AS count, MAX(at) AS at FROM cp_broker_events_seen WHERE at >= ?", [since])
    assert found is not None
    return int(found["count"] or 0), found["at"]


def sessions_of(
    tx: Transaction, queues: Iterable[tuple[str, str]], since: datetime, until: datetime
) -> list[ReaderSession]:
    """Sessions on any of ``queues`` ((vhost, queue) pairs) that overlap ``since``..``until``."""
    pairs = list(dict.fromkeys(queues))
    found: list[ReaderSession] = []
    for start in range(0, len(pairs), 200):
        chunk = pairs[start : start + 200]
        which = " OR ".join(["(vhost = ? AND queue = ?)"] * len(chunk))
        query = (
            f"SELECT * FROM cp_reader_sessions WHERE ({which}) "
            "AND (attached_at IS NULL OR attached_at <= ?) AND (detached_at IS NULL OR detached_at >= ?) ORDER BY id"
        )
        params = [value for pair in chunk for value in pair]
        found += [_session(row) for row in tx.rows(query, [*params, until, since])]
    return _named(tx, found)


def _named(tx: Transaction, sessions: list[ReaderSession]) -> list[ReaderSession]:
    """Traced deliveries name their connection as the broker does (``peer -> broker``): the connection's own
    announcement, stored from the event exchange, gives its client-provided name, peer host and user."""
    wanted = sorted({s.connection_name for s in sessions if s.source == "delivery" and s.connection_name})
    known: dict[str, Row] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        query = f'SELECT name, client_name, peer_host, "user" FROM cp_broker_connections WHERE name IN ({marks(len(chunk))})'
        known |= {str(row["name"]): row for row in tx.rows(query, chunk)}
    if not known:
        return sessions
    named = []
    for session in sessions:
        row = known.get(session.connection_name or "") if session.source == "delivery" else None
        if row is not None:
            session = replace(
                session,
                connection_name=row["client_name"] or session.connection_name,
                peer_host=row["peer_host"] or session.peer_host,
                user=session.user or row["user"],
            )
        named.append(session)
    return named


def store_deliveries(tx: Transaction, deliveries: Sequence[Delivery]) -> int:
    """Traced deliveries as reader sessions (``source`` "delivery"): one that continues the latest session of the
    same channel (it ended where this one starts) extends it, so a steady reader keeps one row. Returns the rows
    written."""
    written = 0
    for d in deliveries:
        extended = tx.execute(
            "UPDATE cp_reader_sessions SET detached_at = ?, deliveries = deliveries + ? "
            "WHERE source = 'delivery' AND vhost = ? AND queue = ? AND channel = ? AND connection_name = ? "
            "AND detached_at = ?",
            [d.before, d.count, d.vhost, d.queue, d.channel, d.connection or "", d.after],
        )
        if extended:
            continue
        tx.insert(
            "cp_reader_sessions",
            {
                "vhost": d.vhost,
                "queue": d.queue,
                "consumer_tag": "",
                "channel": d.channel,
                "attached_at": d.after,
                "detached_at": d.before,
                "connection_name": d.connection or "",
                "peer_host": _peer_of(d.connection),
                "user": d.user,
                "source": "delivery",
                "deliveries": d.count,
            },
        )
        written += 1
    return written


def _peer_of(connection: str | None) -> str | None:
    """The peer host of a broker connection name, ``10.0.0.7:51234 -> 10.0.0.2:5672``."""
    if not connection or " -> " not in connection:
        return None
    peer = connection.split(" -> ", 1)[0]
    return peer.rsplit(":", 1)[0].strip("[]") or None


def request_watches(tx: Transaction, queues: Iterable[tuple[str, str]], at: datetime, traced_from: datetime) -> None:
    """The recording audit asks for the deliveries of ``queues`` to be traced, with the trace in place since
    ``traced_from`` for those not watched yet (a watched queue keeps its own, and its ``requested_at`` moves)."""
    for vhost, queue in dict.fromkeys(queues):
        moved = tx.execute(
            "UPDATE cp_delivery_watches SET requested_at = ? WHERE vhost = ? AND queue = ?", [at, vhost, queue]
        )
        if not moved:
            tx.insert(
                "cp_delivery_watches",
                {"vhost": vhost, "queue": queue, "requested_at": at, "traced_from": traced_from},
            )


def restart_watches(tx: Transaction, vhost: str, traced_from: datetime, reason: str) -> None:
    """The trace of ``vhost`` was lost (its queue was not there): every watch there is traced anew from
    ``traced_from``; what was delivered before is unknown, and ``reason`` says why."""
    tx.execute(
        "UPDATE cp_delivery_watches SET traced_from = ?, confirmed_until = NULL, problem = ? WHERE vhost = ?",
        [traced_from, reason, vhost],
    )


def confirm_watches(tx: Transaction, vhost: str, until: datetime | None, problem: str | None) -> None:
    """Every delivery traced in ``vhost`` up to ``until`` is stored (None: nothing new confirmed); ``problem``
    says why the trace cannot be confirmed (None: it can)."""
    if until is None:
        tx.execute("UPDATE cp_delivery_watches SET problem = ? WHERE vhost = ?", [problem, vhost])
        return
    tx.execute(
        "UPDATE cp_delivery_watches SET confirmed_until = ?, problem = ? "
        "WHERE vhost = ? AND traced_from IS NOT NULL AND traced_from <= ?",
        [until, problem, vhost, until],
    )


def watches_of(tx: Transaction, queues: Iterable[tuple[str, str]] | None = None) -> list[DeliveryWatch]:
    """The watches of ``queues`` ((vhost, queue) pairs; None: every watch)."""
    if queues is None:
        rows = tx.rows("SELECT * FROM cp_delivery_watches ORDER BY vhost, queue")
    else:
        pairs = list(dict.fromkeys(queues))
        rows = []
        for start in range(0, len(pairs), 200):
            chunk = pairs[start : start + 200]
            which = " OR ".join(["(vhost = ? AND queue = ?)"] * len(chunk))
            rows += tx.rows(f"SELECT * FROM cp_delivery_watches WHERE {which}", [v for pair in chunk for v in pair])
    return [record_of(DeliveryWatch, row) for row in rows]


def _session(row: Mapping[str, Any]) -> ReaderSession:
    return record_of(ReaderSession, row, deliveries=row.get("deliveries"))


def changes_of(tx: Transaction, queues: Iterable[tuple[str, str]], since: datetime) -> list[BrokerChange]:
    pairs = list(dict.fromkeys(queues))
    found: list[BrokerChange] = []
    for start in range(0, len(pairs), 200):
        chunk = pairs[start : start + 200]
        which = " OR ".join(["(vhost = ? AND name = ?)"] * len(chunk))
        query = f"SELECT * FROM cp_broker_changes WHERE ({which}) AND at >= ? ORDER BY at"
        params = [value for pair in chunk for value in pair]
        found += [record_of(BrokerChange, row) for row in tx.rows(query, [*params, since])]
    return sorted(found, key=lambda change: change.at)


def segments_between(tx: Transaction, since: datetime) -> list[CoverageSegment]:
    """Segments that covered anything after ``since`` (and any still open), oldest first."""
    query = "SELECT * FROM cp_coverage_segments WHERE covered_until IS NULL OR covered_until >= ? ORDER BY started_at"
    return [segment(row) for row in tx.rows(query, [since])]


def segment(row: Mapping[str, Any]) -> CoverageSegment:
    return record_of(CoverageSegment, row)


def gaps_between(tx: Transaction, since: datetime) -> list[CoverageGap]:
    query = 'SELECT * FROM cp_coverage_gaps WHERE "end" >= ? ORDER BY "start"'
    return [record_of(CoverageGap, row) for row in tx.rows(query, [since])]


def insert_counters(tx: Transaction, rows: Sequence[QueueCounters]) -> None:
    tx.insert_many("cp_queue_counters", [asdict(r) for r in rows])  # one column per field, of the same name


def counters_of(tx: Transaction, message_type: str, since: datetime) -> list[QueueCounters]:
    query = "SELECT * FROM cp_queue_counters WHERE message_type = ? AND observed_at >= ? ORDER BY observed_at, id"
    return [
        record_of(QueueCounters, row, present=bool(row["present"])) for row in tx.rows(query, [message_type, since])
    ]


def prune(tx: Transaction, before: datetime) -> int:
    """Forget what ended before ``before``: closed sessions, channels, connections, changes, seen digests."""
    removed = 0
    for table, column in (
        ("cp_reader_sessions", "detached_at"),
        ("cp_broker_channels", "closed_at"),
        ("cp_broker_connections", "closed_at"),
        ("cp_broker_changes", "at"),
        ("cp_broker_events_seen", "at"),
        ("cp_coverage_gaps", '"end"'),
        ("cp_coverage_segments", "covered_until"),
        ("cp_delivery_watches", "requested_at"),  # no audit asked for it within the retention: not traced now
    ):
        removed += tx.execute(f"DELETE FROM {table} WHERE {column} < ?", [before])
    return removed

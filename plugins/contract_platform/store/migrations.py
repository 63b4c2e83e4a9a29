"""The registry creates and upgrades its own schema: an ordered list of steps, applied at open.

``cp_schema_version`` holds one row per applied step. ``ensure_current`` reads it through the driver (``sql``);
only when it is missing or behind does it import SQLAlchemy, which creates and alters the tables of ``tables``
on a connection ``sql.Database`` makes. ``upgrade`` takes a lock (``BEGIN IMMEDIATE``
on SQLite, an advisory lock on PostgreSQL), applies every missing step in order and records it, all
in the caller's transaction, so two processes opening the same database at once upgrade it once.

Rules for a new step:

- append it; never edit or reorder a released step;
- make it idempotent: check before creating or altering (``_create_missing``, ``_add_missing_columns``),
  so a fresh database and an old one end in the same schema, which is ``tables.metadata``;
- a step creates a new table from ``tables``; version 1 is frozen below, because later steps alter it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from contract_platform.store.sql import Database, Transaction, store_error

if TYPE_CHECKING:
    from sqlalchemy import Connection, Table

__all__ = [
    "LATEST_VERSION",
    "MIGRATIONS",
    "Migration",
    "current_version",
    "ensure_current",
    "upgrade",
]

_ADVISORY_LOCK_KEY = 0x63705F7265  # "cp_re": any constant shared by every platform process


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    apply: Callable[[Connection], None]


def _create_missing(conn: Connection, *wanted: Table) -> None:
    from sqlalchemy import inspect

    existing = set(inspect(conn).get_table_names())
    for table in wanted:
        if table.name not in existing:
            table.create(conn)


def _add_missing_columns(conn: Connection, table: Table, *names: str) -> None:
    from sqlalchemy import inspect, text
    from sqlalchemy.schema import CreateColumn

    present = {column["name"] for column in inspect(conn).get_columns(table.name)}
    for name in names:
        if name not in present:
            ddl = CreateColumn(table.c[name]).compile(dialect=conn.dialect)
            conn.execute(text(f"ALTER TABLE {table.name} ADD COLUMN {ddl}"))


def _create_missing_indexes(conn: Connection, table: Table, *names: str) -> None:
    from sqlalchemy import inspect

    present = {index["name"] for index in inspect(conn).get_indexes(table.name)}
    for index in table.indexes:
        if index.name in names and index.name not in present:
            index.create(conn)


def _v1_tables() -> list[Table]:
    """The schema as version 1 shipped it (frozen: later steps upgrade these tables in place)."""
    from sqlalchemy import JSON, Column, ForeignKey, Index, Integer, MetaData, String, Table, Text, UniqueConstraint

    from contract_platform.store.tables import NAME, STATUS, UtcDateTime

    v1 = MetaData()
    evidence = Table(
        "cp_evidence",
        v1,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("message_type", NAME, nullable=False),
        Column("contract_version", String(64), nullable=False),
        Column("kind", String(64), nullable=False),
        Column("collected_at", UtcDateTime, nullable=False),
        Column("verdict", String(16), nullable=False),
        Column("figures", JSON, nullable=False),
        Column("reference", Text, nullable=True),
    )
    contract_versions = Table(
        "cp_contract_versions",
        v1,
        Column("message_type", NAME, primary_key=True),
        Column("effective_status", STATUS, nullable=False),
        Column("contract_version", String(64), nullable=False),
        Column("revision", Integer, nullable=False),
        Column("updated_at", UtcDateTime, nullable=False),
    )
    transitions = Table(
        "cp_transitions",
        v1,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("message_type", NAME, nullable=False),
        Column("revision", Integer, nullable=False),
        Column("from_status", STATUS, nullable=True),
        Column("to_status", STATUS, nullable=False),
        Column("at", UtcDateTime, nullable=False),
        Column("actor", NAME, nullable=False),
        Column("run_id", NAME, nullable=True),
        Column("reason", Text, nullable=False),
        Column("evidence_id", Integer, ForeignKey("cp_evidence.id"), nullable=True),
        UniqueConstraint("message_type", "revision", name="uq_cp_transitions_revision"),
    )
    refusals = Table(
        "cp_refusals",
        v1,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("message_type", NAME, nullable=False),
        Column("from_status", STATUS, nullable=True),
        Column("to_status", STATUS, nullable=False),
        Column("at", UtcDateTime, nullable=False),
        Column("actor", NAME, nullable=False),
        Column("run_id", NAME, nullable=True),
        Column("reasons", JSON, nullable=False),
        Index("ix_cp_refusals_message_type", "message_type"),
    )
    schema_snapshots = Table(
        "cp_schema_snapshots",
        v1,
        Column("message_type", NAME, primary_key=True),
        Column("contract_version", String(64), primary_key=True),
        Column("schema", JSON, nullable=False),
        Column("fingerprint", String(64), nullable=False),
        Column("recorded_at", UtcDateTime, nullable=False),
    )
    return [evidence, contract_versions, transitions, refusals, schema_snapshots]


def _v1_lifecycle(conn: Connection) -> None:
    _create_missing(conn, *_v1_tables())


def _v2_observations(conn: Connection) -> None:
    from contract_platform.store import tables

    _add_missing_columns(conn, tables.evidence, "run_id")
    _create_missing_indexes(conn, tables.evidence, "ix_cp_evidence_lookup")
    _create_missing(conn, tables.observations, tables.fingerprints)


def _v3_broker_activity(conn: Connection) -> None:
    from contract_platform.store import tables

    _create_missing(
        conn,
        tables.broker_events_seen,
        tables.broker_connections,
        tables.broker_channels,
        tables.reader_sessions,
        tables.broker_changes,
        tables.coverage_segments,
        tables.coverage_gaps,
        tables.queue_counters,
    )


# The broker activity columns version 3 made String(255) that hold names broker clients chose (frozen: the step's)
_V4_BROKER_NAMES = {
    "cp_reader_sessions": ("vhost", "queue", "consumer_tag", "channel", "peer_host", "user"),
    "cp_broker_connections": ("pid", "peer_host", "user", "vhost"),
    "cp_broker_channels": ("pid", "connection_pid"),
    "cp_broker_changes": ("vhost", "name"),
    "cp_queue_counters": ("vhost", "queue"),
    "cp_coverage_segments": ("host",),
}


def _v4_broker_names(conn: Connection) -> None:
    """Names broker clients chose become text of any length (``tables.BROKER_NAME``): an escaped name is longer
    than 255. PostgreSQL: ``varchar(255)`` to ``text`` is binary-coercible, so neither the table nor its indexes
    are rewritten. SQLite holds any length in either."""
    if conn.dialect.name != "postgresql":
        return
    from sqlalchemy import String, inspect, text

    inspector = inspect(conn)
    for table, names in _V4_BROKER_NAMES.items():
        kinds = {column["name"]: column["type"] for column in inspector.get_columns(table)}
        for name in names:
            kind = kinds[name]
            if isinstance(kind, String) and kind.length is not None:
                conn.execute(text(f'ALTER TABLE {table} ALTER COLUMN "{name}" TYPE TEXT'))


def _v5_delivery_tracing(conn: Connection) -> None:
    from contract_platform.store import tables

    _add_missing_columns(conn, tables.reader_sessions, "deliveries")
    _create_missing(conn, tables.delivery_watches)


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "lifecycle: effective status, transitions, refusals, evidence, schema snapshots", _v1_lifecycle),
    Migration(2, "evidence run ids and lookup index; queue observations; catalogue fingerprints", _v2_observations),
    Migration(
        3, "broker activity: reader sessions, broker changes, recorder coverage, queue counters", _v3_broker_activity
    ),
    Migration(4, "broker activity: names broker clients chose held as text of any length", _v4_broker_names),
    Migration(
        5, "delivery tracing: the queues whose deliveries are traced, deliveries per reader", _v5_delivery_tracing
    ),
)
LATEST_VERSION = MIGRATIONS[-1].version


def current_version(tx: Transaction) -> int:
    """The highest applied step, 0 for a database the platform has never opened."""
    if tx.dialect == "sqlite":
        exists = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    else:
        exists = "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?"
    if tx.first(exists, ["cp_schema_version"]) is None:
        return 0
    return int(tx.scalar("SELECT MAX(version) AS version FROM cp_schema_version") or 0)


def ensure_current(database: Database) -> None:
    """Create or upgrade the schema of ``database`` unless it is current; ``ValueError`` when it is newer."""
    with database.transaction("checking the schema") as tx:
        current = current_version(tx)
    if current > LATEST_VERSION:
        raise ValueError(_newer(current))
    if current == LATEST_VERSION:
        return
    from sqlalchemy import create_engine, event
    from sqlalchemy.exc import SQLAlchemyError
    from sqlalchemy.pool import NullPool

    dialect = "sqlite://" if database.dialect == "sqlite" else "postgresql+psycopg2://"
    engine = create_engine(dialect, creator=database.connect, poolclass=NullPool)
    if database.dialect == "sqlite":  # the connection runs without implicit transactions: BEGIN is ours
        event.listen(engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"))
    errors: tuple[type[BaseException], ...] = (SQLAlchemyError, *database.errors)
    try:
        with engine.begin() as conn:
            upgrade(conn)
    except errors as exc:
        raise store_error(database.url, "upgrading the schema", exc) from exc
    finally:
        engine.dispose()


def _newer(current: int) -> str:
    return (
        f"the registry schema is at version {current}, newer than this platform knows ({LATEST_VERSION}): "
        "upgrade contract-lifecycle-platform before opening it"
    )


def _lock(conn: Connection) -> None:
    from sqlalchemy import text

    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _ADVISORY_LOCK_KEY})
    # SQLite: the caller's BEGIN IMMEDIATE already holds the database's one write lock.


def upgrade(conn: Connection, target: int | None = None) -> list[int]:
    """Apply every step above the database's version up to ``target`` (default: the latest), in the transaction
    of the SQLAlchemy connection ``conn``; returns them."""
    from sqlalchemy import insert

    from contract_platform.store import tables

    target = LATEST_VERSION if target is None else target
    _lock(conn)
    _create_missing(conn, tables.schema_version)
    current = current_version(Transaction(conn.connection.driver_connection, conn.dialect.name))
    if current > LATEST_VERSION:
        raise ValueError(_newer(current))
    applied = []
    for step in MIGRATIONS:
        if current < step.version <= target:
            step.apply(conn)
            conn.execute(
                insert(tables.schema_version).values(
                    version=step.version, description=step.description, applied_at=datetime.now(UTC)
                )
            )
            applied.append(step.version)
    return applied

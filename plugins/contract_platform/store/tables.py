"""The registry's tables as they are now (SQLAlchemy Core). ``migrations`` gets an old database here.

Only creating and upgrading the schema imports this; the queries (``registry``, ``activity``) name the same
tables and columns in SQL and run on the driver (``sql``), whose column kinds a test checks against these.

Every name starts with ``cp_`` so the registry can share a database with Airflow or anything else.
Change a table here only together with a new step in ``migrations.MIGRATIONS``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.types import TypeDecorator

__all__ = [
    "UtcDateTime",
    "broker_changes",
    "broker_channels",
    "broker_connections",
    "broker_events_seen",
    "coverage_gaps",
    "coverage_segments",
    "delivery_watches",
    "queue_counters",
    "reader_sessions",
    "contract_versions",
    "evidence",
    "fingerprints",
    "metadata",
    "observations",
    "refusals",
    "schema_snapshots",
    "schema_version",
    "transitions",
]

NAME = String(255)
STATUS = String(32)
# A name a client of the broker chose, or the broker made (queue, consumer tag, user, host, pid): any text, held
# escaped where the database cannot hold it as it is (store.sql.hold_text), so longer than the 255 bytes an AMQP
# short string has. Since schema version 4; NAME before.
BROKER_NAME = Text


class UtcDateTime(TypeDecorator[datetime]):
    """Aware UTC in and out. SQLite keeps naive UTC text (so it sorts); PostgreSQL a timestamptz."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value.isoformat()}: the registry stores aware UTC datetimes only")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


metadata = MetaData()

schema_version = Table(
    "cp_schema_version",  # read without SQLAlchemy by migrations.current_version
    metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("description", Text, nullable=False),
    Column("applied_at", UtcDateTime, nullable=False),
)

contract_versions = Table(
    "cp_contract_versions",
    metadata,
    Column("message_type", NAME, primary_key=True),
    Column("effective_status", STATUS, nullable=False),
    Column("contract_version", String(64), nullable=False),
    Column("revision", Integer, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
)

evidence = Table(
    "cp_evidence",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("message_type", NAME, nullable=False),
    Column("contract_version", String(64), nullable=False),
    Column("kind", String(64), nullable=False),
    Column("collected_at", UtcDateTime, nullable=False),
    Column("verdict", String(16), nullable=False),
    Column("figures", JSON, nullable=False),
    Column("reference", Text, nullable=True),
    Column("run_id", NAME, nullable=True),  # since schema version 2
    Index("ix_cp_evidence_lookup", "message_type", "kind", "collected_at"),  # since schema version 2
)

transitions = Table(
    "cp_transitions",
    metadata,
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
    # A second run that slipped past the revision check still cannot record the same step twice.
    UniqueConstraint("message_type", "revision", name="uq_cp_transitions_revision"),
)

refusals = Table(
    "cp_refusals",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("message_type", NAME, nullable=False, index=True),
    Column("from_status", STATUS, nullable=True),
    Column("to_status", STATUS, nullable=False),
    Column("at", UtcDateTime, nullable=False),
    Column("actor", NAME, nullable=False),
    Column("run_id", NAME, nullable=True),
    Column("reasons", JSON, nullable=False),
)

schema_snapshots = Table(
    "cp_schema_snapshots",
    metadata,
    Column("message_type", NAME, primary_key=True),
    Column("contract_version", String(64), primary_key=True),
    Column("schema", JSON, nullable=False),
    Column("fingerprint", String(64), nullable=False),
    Column("recorded_at", UtcDateTime, nullable=False),
)

observations = Table(  # since schema version 2
    "cp_observations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("message_type", NAME, nullable=False),
    Column("queue", NAME, nullable=False),
    Column("observed_at", UtcDateTime, nullable=False),
    Column("consumers", Integer, nullable=True),
    Column("ready", Integer, nullable=True),
    Column("unacked", Integer, nullable=True),
    Column("source", String(16), nullable=False),
    Column("run_id", NAME, nullable=True),
    Index("ix_cp_observations_series", "message_type", "observed_at"),
)

fingerprints = Table(  # since schema version 2
    "cp_fingerprints",
    metadata,
    Column("message_type", NAME, primary_key=True),
    Column("fingerprint", String(64), nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
)


# -- broker activity, since schema version 3 (contract_platform.activity; docs/retirement-audit.md) ----------------

broker_events_seen = Table(  # every broker event stored, by its digest: storing one twice changes nothing
    "cp_broker_events_seen",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("at", UtcDateTime, nullable=False, index=True),
)

broker_connections = Table(
    "cp_broker_connections",
    metadata,
    Column("pid", BROKER_NAME, primary_key=True),
    Column("name", Text, nullable=True),  # the broker's "peer -> broker" name
    Column("client_name", Text, nullable=True),  # the client-provided connection_name
    Column("peer_host", BROKER_NAME, nullable=True),
    Column("user", BROKER_NAME, nullable=True),
    Column("vhost", BROKER_NAME, nullable=True),
    Column("opened_at", UtcDateTime, nullable=True),
    Column("closed_at", UtcDateTime, nullable=True, index=True),
)

broker_channels = Table(
    "cp_broker_channels",
    metadata,
    Column("pid", BROKER_NAME, primary_key=True),
    Column("connection_pid", BROKER_NAME, nullable=True),
    Column("opened_at", UtcDateTime, nullable=True),
    Column("closed_at", UtcDateTime, nullable=True, index=True),
)

reader_sessions = Table(
    "cp_reader_sessions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("vhost", BROKER_NAME, nullable=False),
    Column("queue", BROKER_NAME, nullable=False),
    Column("consumer_tag", BROKER_NAME, nullable=False),
    Column("channel", BROKER_NAME, nullable=False),
    Column("attached_at", UtcDateTime, nullable=True),
    Column("detached_at", UtcDateTime, nullable=True),
    Column("connection_name", Text, nullable=True),
    Column("peer_host", BROKER_NAME, nullable=True),
    Column("user", BROKER_NAME, nullable=True),
    Column("source", String(16), nullable=False),
    Column("deliveries", Integer, nullable=True),  # since schema version 5: a traced reader's deliveries
    Index("ix_cp_reader_sessions_queue", "vhost", "queue", "detached_at"),
)

broker_changes = Table(
    "cp_broker_changes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(32), nullable=False),
    Column("vhost", BROKER_NAME, nullable=False),
    Column("name", BROKER_NAME, nullable=False),
    Column("detail", Text, nullable=False),
    Column("at", UtcDateTime, nullable=False),
    Index("ix_cp_broker_changes_queue", "vhost", "name", "at"),
)

coverage_segments = Table(
    "cp_coverage_segments",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("started_at", UtcDateTime, nullable=False, index=True),
    Column("covered_from", UtcDateTime, nullable=True),
    Column("covered_until", UtcDateTime, nullable=True),
    Column("ended_at", UtcDateTime, nullable=True),
    Column("end_reason", Text, nullable=True),
    Column("host", BROKER_NAME, nullable=True),
)

coverage_gaps = Table(
    "cp_coverage_gaps",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("start", UtcDateTime, nullable=False),
    Column("end", UtcDateTime, nullable=False),
    Column("reason", Text, nullable=False),
    UniqueConstraint("start", "end", name="uq_cp_coverage_gaps_interval"),
)

queue_counters = Table(
    "cp_queue_counters",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("message_type", NAME, nullable=False),
    Column("vhost", BROKER_NAME, nullable=False),
    Column("queue", BROKER_NAME, nullable=False),
    Column("observed_at", UtcDateTime, nullable=False),
    Column("present", Boolean, nullable=False),
    Column("deliver_get", Integer, nullable=True),
    Column("get_empty", Integer, nullable=True),
    Column("ack", Integer, nullable=True),
    Column("redeliver", Integer, nullable=True),
    Column("own_deliver_get", Integer, nullable=False),
    Column("own_get_empty", Integer, nullable=False),
    Column("own_redeliver", Integer, nullable=False),
    Column("run_id", NAME, nullable=True),
    Column("publish", Integer, nullable=True),
    Column("idle_since", UtcDateTime, nullable=True),
    Column("own_until", UtcDateTime, nullable=True),
    Index("ix_cp_queue_counters_series", "message_type", "observed_at"),
)


# -- delivery tracing, since schema version 5 (contract_platform.amqp.tracing; docs/retirement-audit.md) ----------

delivery_watches = Table(  # the queues whose every delivery the recorder traces (those of versions under retirement)
    "cp_delivery_watches",
    metadata,
    Column("vhost", Text, primary_key=True),
    Column("queue", Text, primary_key=True),
    Column("requested_at", UtcDateTime, nullable=False),  # the latest recording audit that asked for it
    Column("traced_from", UtcDateTime, nullable=True),  # every delivery since is traced
    Column("confirmed_until", UtcDateTime, nullable=True),  # every traced delivery until then is stored
    Column("problem", Text, nullable=True),  # why the trace cannot be confirmed now (None: it can)
)

"""The registry's tables as they are now (SQLAlchemy Core). ``migrations`` gets an old database here.

Every name starts with ``cp_`` so the registry can share a database with Airflow or anything else.
Change a table here only together with a new step in ``migrations.MIGRATIONS``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
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
    "SCHEMA_VERSION_TABLE",
    "UtcDateTime",
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
SCHEMA_VERSION_TABLE = "cp_schema_version"


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
    SCHEMA_VERSION_TABLE,
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

"""The registry creates its schema and upgrades an old one in place, keeping the data."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, inspect, make_url, text
from tests.support.databases import scratch_database

from contract_platform.catalog.model import Status
from contract_platform.errors import StoreError
from contract_platform.evidence.records import BrokerEvent
from contract_platform.store import LATEST_VERSION, SqlRegistry
from contract_platform.store.migrations import MIGRATIONS, upgrade
from contract_platform.store.tables import metadata

MT = "billing.invoice-issued.v1"


def shape(engine: Engine) -> dict[str, object]:
    """Tables, columns (name, nullable) and named indexes, as the database reports them."""
    inspector = inspect(engine)
    return {
        table: (
            sorted((c["name"], c["nullable"]) for c in inspector.get_columns(table)),
            sorted(i["name"] for i in inspector.get_indexes(table) if i["name"]),
        )
        for table in sorted(inspector.get_table_names())
    }


def wanted_shape() -> dict[str, object]:
    return {
        table.name: (
            sorted((c.name, bool(c.nullable)) for c in table.columns),
            sorted(str(i.name) for i in table.indexes),
        )
        for table in sorted(metadata.tables.values(), key=lambda t: t.name)
    }


def v1_database(url: str) -> Engine:
    """A database as version 1 of the platform left it, with some history in it."""
    Path(make_url(url).database or "").parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url)
    with engine.begin() as conn:
        assert upgrade(conn, target=1) == [1]
        conn.execute(
            text(
                "INSERT INTO cp_contract_versions VALUES (:mt, 'experimental', '1.0.0', 2, '2026-06-01 10:00:00.000000')"
            ),
            {"mt": MT},
        )
        conn.execute(
            text(
                "INSERT INTO cp_evidence (id, message_type, contract_version, kind, collected_at, verdict, figures) "
                "VALUES (1, :mt, '1.0.0', 'lint', '2026-06-01 09:00:00.000000', 'pass', '{\"rules\": 42}')"
            ),
            {"mt": MT},
        )
        for revision, source, target in ((1, None, "proposed"), (2, "proposed", "experimental")):
            conn.execute(
                text(
                    "INSERT INTO cp_transitions (message_type, revision, from_status, to_status, at, actor, reason, "
                    "evidence_id) VALUES (:mt, :rev, :src, :dst, '2026-06-01 10:00:00.000000', 'alice', 'v1', 1)"
                ),
                {"mt": MT, "rev": revision, "src": source, "dst": target},
            )
    return engine


def test_a_fresh_database_gets_the_current_schema(sqlite_url: str) -> None:
    with SqlRegistry.open(sqlite_url) as registry:
        assert registry.schema_version() == LATEST_VERSION
    assert shape(create_engine(sqlite_url)) == wanted_shape()


def test_an_old_schema_is_upgraded_in_place_and_keeps_its_data(sqlite_url: str) -> None:
    engine = v1_database(sqlite_url)
    assert "cp_observations" not in inspect(engine).get_table_names()
    with SqlRegistry.open(sqlite_url) as registry:
        assert registry.schema_version() == LATEST_VERSION
        state = registry.effective(MT)
        assert state is not None and (state.status, state.revision) == (Status.EXPERIMENTAL, 2)
        assert state.updated_at == datetime(2026, 6, 1, 10, 0, tzinfo=UTC)
        assert [(t.from_status, t.to_status, t.evidence_id) for t in registry.transitions(MT)] == [
            (None, Status.PROPOSED, 1),
            (Status.PROPOSED, Status.EXPERIMENTAL, 1),
        ]
        old = registry.latest_evidence(MT, "lint")
        assert old is not None and old.figures == {"rules": 42} and old.run_id is None
        # what version 2 added works on the upgraded database
        registry.add_evidence(MT, contract_version="1.0.0", kind="fixtures", verdict="pass", figures={}, run_id="r2")
        registry.record_observation(MT, "q", consumers=0, ready=0, unacked=0, source="amqp")
        registry.set_fingerprint(MT, "abc")
        assert registry.latest_evidence(MT, "fixtures").run_id == "r2"  # type: ignore[union-attr]
        assert registry.apply_transition(MT, expected=state, to=Status.ACTIVE, actor="a", reason="r").revision == 3
    assert shape(engine) == wanted_shape()
    with engine.connect() as conn:
        applied = conn.execute(text("SELECT version FROM cp_schema_version ORDER BY version")).scalars().all()
        assert applied == list(range(1, LATEST_VERSION + 1))


def test_opening_again_applies_nothing(sqlite_url: str) -> None:
    SqlRegistry.open(sqlite_url).close()
    SqlRegistry.open(sqlite_url).close()
    with create_engine(sqlite_url).connect() as conn:
        applied = conn.execute(text("SELECT version FROM cp_schema_version ORDER BY version")).scalars().all()
    assert applied == list(range(1, LATEST_VERSION + 1))


def test_a_schema_newer_than_the_code_is_refused(sqlite_url: str) -> None:
    SqlRegistry.open(sqlite_url).close()
    with create_engine(sqlite_url).begin() as conn:
        conn.execute(text("INSERT INTO cp_schema_version VALUES (99, 'future', '2030-01-01 00:00:00.000000')"))
    with pytest.raises(StoreError, match="newer than this platform knows"):
        SqlRegistry.open(sqlite_url)


# -- version 4: broker names as text, on a real PostgreSQL (SQLite enforces no length) -----------------------------

V3_NAMES = {  # what version 3 made String(255)
    "cp_reader_sessions": ("vhost", "queue", "consumer_tag", "channel", "peer_host", "user"),
    "cp_broker_connections": ("pid", "peer_host", "user", "vhost"),
    "cp_broker_channels": ("pid", "connection_pid"),
    "cp_broker_changes": ("vhost", "name"),
    "cp_queue_counters": ("vhost", "queue"),
    "cp_coverage_segments": ("host",),
}


def v3_database(url: str) -> Engine:
    """A database as version 3 of the platform left it: its broker names varchar(255), one reader stored."""
    engine = create_engine(url)
    with engine.begin() as conn:
        assert upgrade(conn, target=3) == [1, 2, 3]
        for table, names in V3_NAMES.items():  # step 3 creates today's tables: back to what it made then
            for name in names:
                conn.execute(text(f'ALTER TABLE {table} ALTER COLUMN "{name}" TYPE VARCHAR(255)'))
        conn.execute(
            text(
                "INSERT INTO cp_reader_sessions (vhost, queue, consumer_tag, channel, source, attached_at) "
                "VALUES ('/', :queue, 'ctag-old', '<rabbit@h.1.2.3>', 'event', '2026-06-01T10:00:00Z')"
            ),
            {"queue": MT},
        )
    return engine


def column_types(engine: Engine) -> dict[tuple[str, str], str]:
    inspector = inspect(engine)
    return {
        (table, column["name"]): str(column["type"])
        for table in V3_NAMES
        for column in inspector.get_columns(table)
        if column["name"] in V3_NAMES[table]
    }


def files(engine: Engine) -> dict[str, int]:
    """Each broker activity table's and index's file: a rewrite gives it a new one."""
    with engine.connect() as conn:
        found = conn.execute(
            text("SELECT relname, relfilenode FROM pg_class WHERE relname LIKE 'cp\\_%' AND relkind IN ('r', 'i')")
        )
        return {str(name): int(node) for name, node in found}


@pytest.mark.integration
def test_a_version_3_database_on_postgresql_holds_names_of_any_length_after_the_upgrade(postgres_url: str) -> None:
    with scratch_database(postgres_url, "store_v4") as url:
        engine = v3_database(url)
        assert set(column_types(engine).values()) == {"VARCHAR(255)"}
        before = files(engine)
        with SqlRegistry.open(url) as registry:
            assert registry.schema_version() == LATEST_VERSION
            [old] = registry.reader_sessions(
                [("/", MT)], since=datetime(2026, 6, 1, tzinfo=UTC), until=datetime.now(UTC)
            )
            assert old.consumer_tag == "ctag-old"
            queue = "\x00" * 255  # an AMQP short string's most, six times longer escaped
            tag = "\udcff" * 255 + "-" + "x" * 300
            when = datetime.now(UTC)
            event = BrokerEvent(
                "k-v4", "consumer.created", when, "/", {"queue": queue, "consumer_tag": tag, "channel": "c"}
            )
            assert registry.store_broker_events([event]) == 1
            [new] = registry.reader_sessions([("/", queue)], since=when, until=when)
            assert (new.queue, new.consumer_tag) == (queue, tag)
        assert set(column_types(engine).values()) == {"TEXT"}
        assert {name: node for name, node in files(engine).items() if name in before} == before  # none rewritten
        with engine.begin() as conn:  # idempotent: a second run alters nothing
            [step] = [step for step in MIGRATIONS if step.version == 4]
            step.apply(conn)
        assert {name: node for name, node in files(engine).items() if name in before} == before
        engine.dispose()

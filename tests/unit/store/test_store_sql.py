"""The store's edge to the database driver (``store/sql.py``), on real SQLite files: placeholders, the values
it writes and reads back, the error mapping, and the retry of a write that lost a unique-key race."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from contract_platform.errors import StoreError
from contract_platform.store import SqlRegistry
from contract_platform.store.sql import (
    BOOLEAN_COLUMNS,
    DATETIME_COLUMNS,
    JSON_COLUMNS,
    Database,
    Transaction,
    is_integrity_error,
)

MT = "billing.invoice-issued.v1"


def test_the_column_kinds_are_those_of_the_tables() -> None:
    from sqlalchemy import JSON, Boolean

    from contract_platform.store.tables import UtcDateTime, metadata

    columns = [column for table in metadata.tables.values() for column in table.columns]
    assert {c.name for c in columns if isinstance(c.type, UtcDateTime)} == DATETIME_COLUMNS
    assert {c.name for c in columns if isinstance(c.type, JSON)} == JSON_COLUMNS
    assert {c.name for c in columns if isinstance(c.type, Boolean)} == BOOLEAN_COLUMNS
    kinds = DATETIME_COLUMNS | JSON_COLUMNS | BOOLEAN_COLUMNS
    plain = {c.name for c in columns if not isinstance(c.type, UtcDateTime | JSON | Boolean)}
    assert not plain & kinds, "a name read as a datetime, JSON or boolean is a plain column elsewhere"


def test_sql_is_written_once_with_question_marks_and_a_percent_sign_stays_literal(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'r.db'}")
    with database.transaction("testing") as tx:
        assert tx.scalar("SELECT ? || '%' AS v WHERE 'a%b' LIKE 'a%'", ["50"]) == "50%"
    database.close()


def test_a_moment_is_stored_as_the_naive_utc_text_sqlalchemy_wrote_and_read_back_aware(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    at = datetime(2026, 7, 1, 14, 30, 5, 120, tzinfo=timezone(timedelta(hours=2)))
    on_the_hour = datetime(2026, 7, 1, 13, 0, tzinfo=UTC)
    with SqlRegistry.open(url) as registry:
        registry.add_evidence(MT, contract_version="1.0.0", kind="compatibility", verdict="pass", figures={},
                              collected_at=at)  # fmt: skip
        registry.add_evidence(MT, contract_version="1.0.0", kind="compatibility", verdict="pass", figures={},
                              collected_at=on_the_hour)  # fmt: skip
        newest, oldest = registry.evidence(MT)
    assert (oldest.collected_at, newest.collected_at) == (at, on_the_hour)
    assert oldest.collected_at.tzinfo is UTC
    with sqlite3.connect(tmp_path / "r.db") as conn:
        stored = [row[0] for row in conn.execute("SELECT collected_at FROM cp_evidence ORDER BY id")]
    assert stored == ["2026-07-01 12:30:05.000120", "2026-07-01 13:00:00.000000"]


def test_a_file_written_through_sqlalchemy_reads_and_compares_the_same(tmp_path: Path) -> None:
    from sqlalchemy import create_engine, insert

    from contract_platform.store import tables

    url = f"sqlite:///{tmp_path / 'r.db'}"
    SqlRegistry.open(url).close()  # the schema
    at = datetime(2026, 7, 1, 12, 0, 0, 5, tzinfo=UTC)
    engine = create_engine(url)
    with engine.begin() as conn:  # as the store wrote rows before it ran on the driver
        conn.execute(
            insert(tables.evidence).values(
                message_type=MT, contract_version="1.0.0", kind="compatibility", collected_at=at,
                verdict="pass", figures={"pairs": [1, 2]}, reference=None, run_id="r1",
            )
        )  # fmt: skip
        conn.execute(
            insert(tables.queue_counters).values(
                message_type=MT, vhost="/", queue="q", observed_at=at, present=True,
                own_deliver_get=0, own_get_empty=0, own_redeliver=0,
            )
        )  # fmt: skip
    engine.dispose()
    with SqlRegistry.open(url) as registry:
        [record] = registry.evidence(MT, since=at)
        assert (record.collected_at, record.figures, record.run_id) == (at, {"pairs": [1, 2]}, "r1")
        assert registry.evidence(MT, since=at + timedelta(microseconds=1)) == []
        [counters] = registry.queue_counters(MT, since=at)
        assert counters.present is True and counters.observed_at == at
        assert registry.run_times("nobody", ["compatibility"]) == {"r1": at}


def test_a_naive_moment_is_refused_before_it_reaches_the_database(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'r.db'}")
    with pytest.raises(ValueError, match="naive"), database.transaction("testing") as tx:
        tx.scalar("SELECT ? AS at", [datetime(2026, 7, 1)])
    database.close()


def test_an_unreachable_database_is_a_store_error_without_its_password() -> None:
    database = Database("postgresql://platform:s3cr%40t-pw@127.0.0.1:1/registry?connect_timeout=3")
    with pytest.raises(StoreError) as caught, database.transaction("reading"):
        pass
    message = str(caught.value)
    assert "s3cr" not in message and "postgresql://platform:***@127.0.0.1:1/registry" in message
    assert "reading failed" in message and "check CONTRACT_REGISTRY_URL" in message
    database.close()


def test_a_file_that_cannot_be_opened_is_a_store_error_with_the_hint(tmp_path: Path) -> None:
    (tmp_path / "folder.db").mkdir()
    database = Database(f"sqlite:///{tmp_path / 'folder.db'}")
    with pytest.raises(StoreError, match="unable to open.*check CONTRACT_REGISTRY_URL"), database.transaction("x"):
        pass


def test_an_unknown_database_kind_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="'mysql' is not a database the registry runs on"):
        Database("mysql://root:pw@localhost/registry")


def test_a_failed_transaction_is_rolled_back_and_its_connection_serves_the_next(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'r.db'}")
    with database.transaction("setting up", write=True) as tx:
        tx.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
    with pytest.raises(StoreError) as caught, database.transaction("inserting", write=True) as tx:
        tx.insert("t", {"k": "a"})
        tx.insert("t", {"k": "a"})
    assert is_integrity_error(caught.value) and "UNIQUE constraint failed" in str(caught.value)
    with database.transaction("reading") as tx:
        assert tx.rows("SELECT k FROM t") == []
    database.close()
    with pytest.raises(StoreError, match="the registry is closed"), database.transaction("reading"):
        pass


def test_a_write_that_lost_a_unique_key_race_runs_once_more(registry: SqlRegistry) -> None:
    registry.set_fingerprint(MT, "theirs")  # what another process inserted first
    attempts: list[int] = []

    def insert_once(tx: Transaction) -> str:
        attempts.append(1)
        if len(attempts) == 1:  # read nothing (before the other's commit), so insert: the key is taken
            tx.insert("cp_fingerprints", {"message_type": MT, "fingerprint": "ours", "updated_at": datetime.now(UTC)})
        tx.execute("UPDATE cp_fingerprints SET fingerprint = ? WHERE message_type = ?", ["ours", MT])
        return "done"

    assert registry._write_retrying("recording", insert_once) == "done"
    assert len(attempts) == 2 and registry.fingerprint(MT) == "ours"


def test_other_errors_are_not_retried(registry: SqlRegistry) -> None:
    attempts: list[int] = []

    def broken(tx: Transaction) -> None:
        attempts.append(1)
        tx.execute("SELECT * FROM no_such_table")

    with pytest.raises(StoreError, match="no such table") as caught:
        registry._write_retrying("reading", broken)
    assert len(attempts) == 1 and not is_integrity_error(caught.value)

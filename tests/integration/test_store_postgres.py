"""The registry store on a real PostgreSQL: round trips, time zones, a race between processes, an upgrade.

Tables live in the shared ``test`` database (names start with ``cp_``); each run uses its own
message-type prefix and deletes its rows at the end. The upgrade test uses a scratch database.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import create_engine, make_url, text
from tests.support.databases import scratch_database
from tests.support.races import assert_one_winner_per_round, run_race

from contract_platform.catalog.model import Status
from contract_platform.errors import ConcurrentTransition, SnapshotConflict, StoreError
from contract_platform.store import LATEST_VERSION, SqlRegistry
from contract_platform.store.migrations import upgrade

pytestmark = pytest.mark.integration

PREFIX = f"it{uuid.uuid4().hex[:10]}"
T0 = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
CP_TABLES = (
    "cp_transitions", "cp_evidence", "cp_refusals", "cp_contract_versions",
    "cp_schema_snapshots", "cp_observations", "cp_fingerprints",
)  # fmt: skip


def mt(name: str) -> str:
    return f"{PREFIX}.{name}.v1"


@pytest.fixture(scope="module")
def pg_url(postgres_url: str) -> Iterator[str]:
    yield postgres_url
    engine = create_engine(postgres_url)
    with engine.begin() as conn:  # our rows only: other runs may share these tables
        for table in CP_TABLES:
            conn.execute(text(f"DELETE FROM {table} WHERE message_type LIKE :prefix"), {"prefix": f"{PREFIX}.%"})
    engine.dispose()


@pytest.fixture()
def registry(pg_url: str) -> Iterator[SqlRegistry]:
    with SqlRegistry.open(pg_url) as opened:
        yield opened


def test_open_creates_the_schema(registry: SqlRegistry) -> None:
    assert registry.schema_version() == LATEST_VERSION


def test_status_history_and_optimistic_concurrency(registry: SqlRegistry) -> None:
    name = mt("orders")
    proposed = registry.register(name, "1.0.0", actor="alice", run_id="r0")
    assert registry.register(name, "1.0.0", actor="bob") == proposed
    lint = registry.add_evidence(name, contract_version="1.0.0", kind="lint", verdict="pass", figures={"rules": 12})
    state = registry.apply_transition(
        name, expected=proposed, to=Status.EXPERIMENTAL, actor="dag:x", reason="guards passed", evidence_id=lint.id
    )
    with pytest.raises(ConcurrentTransition, match="by dag:x"):
        registry.apply_transition(name, expected=proposed, to=Status.EXPERIMENTAL, actor="bob", reason="late")
    assert registry.effective(name) == state
    history = registry.transitions(name)
    assert [(t.from_status, t.to_status, t.evidence_id) for t in history] == [
        (None, Status.PROPOSED, None),
        (Status.PROPOSED, Status.EXPERIMENTAL, lint.id),
    ]
    registry.record_refusal(name, from_status=state.status, to_status=Status.ACTIVE, reasons=["a", "b"], actor="dag:x")
    assert registry.refusals(name)[0].reasons == ("a", "b")
    assert registry.transitions(name) == history


def test_evidence_snapshots_observations_and_fingerprints_round_trip(registry: SqlRegistry) -> None:
    name = mt("invoices")
    figures = {"invalid": 2, "total": 1000, "reasons": {"PAYLOAD_INVALID": 2}, "ratio": 0.002, "note": "ünïcode"}
    added = registry.add_evidence(
        name, contract_version="1.0.0", kind="archive_validation", verdict="fail", figures=figures,
        reference="s3://reports/av.json", run_id="run-1", collected_at=T0,
    )  # fmt: skip
    registry.add_evidence(name, contract_version="1.0.0", kind="archive_validation", verdict="pass", figures={},
                          collected_at=T0 - timedelta(days=2))  # fmt: skip
    assert registry.latest_evidence(name, "archive_validation") == added
    assert len(registry.evidence(name, "archive_validation", since=T0 - timedelta(days=1))) == 1

    assert registry.snapshot_schema(name, "1.10.0", {"type": "object", "title": "b"}) is True
    assert registry.snapshot_schema(name, "1.2.0", {"type": "object", "title": "a"}) is True
    assert registry.snapshot_schema(name, "1.2.0", {"title": "a", "type": "object"}) is False
    with pytest.raises(SnapshotConflict):
        registry.snapshot_schema(name, "1.2.0", {"type": "string"})
    assert [v for v, _ in registry.schema_history(name)] == ["1.2.0", "1.10.0"]

    registry.record_observation(name, "q", consumers=1, ready=3, unacked=None, source="management", observed_at=T0)
    [observation] = registry.observations(name)
    assert (observation.consumers, observation.ready, observation.unacked, observation.observed_at) == (1, 3, None, T0)

    registry.set_fingerprint(name, "abc")
    registry.set_fingerprint(name, "def")
    assert registry.fingerprint(name) == "def"


def test_datetimes_come_back_in_utc_whatever_the_session_time_zone(
    pg_url: str, registry: SqlRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = mt("zones")
    registry.add_evidence(name, contract_version="1.0.0", kind="lint", verdict="pass", figures={}, collected_at=T0)
    monkeypatch.setenv("PGTZ", "Asia/Tokyo")  # libpq sets the session time zone from it
    with SqlRegistry.open(pg_url) as tokyo:
        read = tokyo.latest_evidence(name, "lint")
    assert read is not None and read.collected_at == T0
    assert read.collected_at.tzinfo is UTC and read.collected_at.hour == 12


def test_wrong_credentials_are_a_store_error_without_the_password(pg_url: str) -> None:
    url = make_url(pg_url).set(username="nobody-here", password="hunter2-secret", database="no_such_database_cp")
    with pytest.raises(StoreError) as caught:
        SqlRegistry.open(url.render_as_string(hide_password=False))
    assert "hunter2-secret" not in str(caught.value)
    assert "nobody-here:***@" in str(caught.value)


# -- two processes, one transition ----------------------------------------------------------------------


def test_two_processes_racing_for_one_transition(pg_url: str, registry: SqlRegistry) -> None:
    rounds = [mt(f"race-{n}") for n in range(5)]
    for message_type in rounds:
        registry.register(message_type, "1.0.0", actor="setup")
    outcomes = run_race(pg_url, rounds)
    assert_one_winner_per_round(registry, outcomes, rounds)


# -- upgrade, in a scratch database ---------------------------------------------------------------------


@pytest.fixture()
def scratch_url(pg_url: str) -> Iterator[str]:
    with scratch_database(pg_url, "store_upgrade") as url:
        yield url


def test_an_old_schema_is_upgraded_in_place_and_keeps_its_data(scratch_url: str) -> None:
    name = mt("legacy")
    engine = create_engine(scratch_url)
    with engine.begin() as conn:
        assert upgrade(conn, target=1) == [1]
        conn.execute(
            text("INSERT INTO cp_contract_versions VALUES (:mt, 'active', '1.4.0', 3, '2026-06-01T10:00:00Z')"),
            {"mt": name},
        )
        conn.execute(
            text(
                "INSERT INTO cp_evidence (message_type, contract_version, kind, collected_at, verdict, figures) "
                "VALUES (:mt, '1.4.0', 'compatibility', '2026-06-01T09:00:00Z', 'pass', '{\"changes\": []}')"
            ),
            {"mt": name},
        )
    with SqlRegistry.open(scratch_url) as registry:
        assert registry.schema_version() == LATEST_VERSION
        state = registry.effective(name)
        assert state is not None and (state.status, state.contract_version, state.revision) == (
            Status.ACTIVE,
            "1.4.0",
            3,
        )
        old = registry.latest_evidence(name, "compatibility")
        assert old is not None and old.figures == {"changes": []} and old.run_id is None
        registry.add_evidence(name, contract_version="1.4.0", kind="lint", verdict="pass", figures={}, run_id="r")
        registry.record_observation(name, "q", consumers=0, ready=0, unacked=0, source="amqp")
        assert registry.latest_evidence(name, "lint").run_id == "r"  # type: ignore[union-attr]
        # what version 3 added (broker activity) works on the upgraded database
        from contract_platform.evidence.records import BrokerEvent

        when = datetime.now(UTC)
        event = BrokerEvent(
            f"k-{name}", "consumer.deleted", when, "/", {"queue": name, "channel": "c", "consumer_tag": "t"}
        )
        assert registry.store_broker_events([event]) == 1
        assert len(registry.reader_sessions([("/", name)], since=when, until=when)) == 1
    with engine.connect() as conn:
        applied = conn.execute(text("SELECT version FROM cp_schema_version ORDER BY version")).scalars().all()
        assert applied == list(range(1, LATEST_VERSION + 1))
    engine.dispose()


def _backends(url: str, application: str) -> int:
    engine = create_engine(url)
    with engine.connect() as conn:
        count = conn.execute(
            text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :name"), {"name": application}
        ).scalar()
    engine.dispose()
    return int(count or 0)


def test_a_registry_keeps_its_connection_reconnects_when_it_died_and_closes_it(pg_url: str) -> None:
    application = f"cp-{PREFIX}"
    url = f"{pg_url}{'&' if '?' in pg_url else '?'}application_name={application}"
    registry = SqlRegistry.open(url)
    name = mt("kept")
    registry.register(name, "1.0.0", actor="alice")
    assert registry.effective(name) is not None
    assert _backends(pg_url, application) == 1  # one connection, kept for every call
    engine = create_engine(pg_url)
    with engine.begin() as conn:  # the server ends it (a restart, an idle timeout)
        conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = :n"),
                     {"n": application})  # fmt: skip
    engine.dispose()
    state = registry.effective(name)
    assert state is not None and state.revision == 1
    registry.close()
    assert _backends(pg_url, application) == 0


def test_a_percent_sign_in_a_value_and_a_unique_race_on_postgresql(registry: SqlRegistry) -> None:
    name = mt("100%-sure")
    registry.set_fingerprint(name, "50% off")
    assert registry.fingerprint(name) == "50% off"
    attempts: list[int] = []

    def insert_once(tx: Any) -> None:
        attempts.append(1)
        if len(attempts) == 1:
            tx.insert("cp_fingerprints", {"message_type": name, "fingerprint": "x", "updated_at": T0})
        tx.execute("UPDATE cp_fingerprints SET fingerprint = ? WHERE message_type = ?", ["ours", name])

    registry._write_retrying("recording", insert_once)
    assert len(attempts) == 2 and registry.fingerprint(name) == "ours"

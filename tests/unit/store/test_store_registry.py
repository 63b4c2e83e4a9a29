"""The registry store on SQLite: what callers read back after they write, and how it fails."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from contract_platform.catalog.model import Status
from contract_platform.errors import ConcurrentTransition, SnapshotConflict, StoreError
from contract_platform.store import EvidenceKind, ObservationSource, SqlRegistry, Verdict, schema_fingerprint
from contract_platform.store.sql import Database

MT = "billing.invoice-issued.v1"
T0 = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def walk(registry: SqlRegistry, message_type: str, *statuses: Status, actor: str = "alice") -> None:
    state = registry.effective(message_type)
    assert state is not None
    for status in statuses:
        state = registry.apply_transition(message_type, expected=state, to=status, actor=actor, reason="test")


# -- opening -------------------------------------------------------------------------------------------


def test_default_store_is_a_wal_sqlite_file_under_the_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CONTRACT_REGISTRY_URL", raising=False)
    monkeypatch.setenv("CONTRACT_PLATFORM_HOME", str(tmp_path / "not" / "yet" / "there"))
    with SqlRegistry.open() as registry:
        registry.register(MT, "1.0.0", actor="alice")
    database = tmp_path / "not" / "yet" / "there" / "registry.db"
    assert database.is_file()
    with sqlite3.connect(database) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("SELECT message_type FROM cp_contract_versions").fetchall() == [(MT,)]


def test_open_maps_an_unreachable_database_to_a_store_error_without_the_password() -> None:
    with pytest.raises(StoreError) as caught:
        SqlRegistry.open("postgresql+psycopg2://platform:s3cr3t-pw@127.0.0.1:1/registry")
    message = str(caught.value)
    assert "s3cr3t-pw" not in message
    assert "postgresql+psycopg2://platform:***@127.0.0.1:1/registry" in message
    assert caught.value.exit_code == 3


def test_open_maps_an_unusable_path_to_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="a-file"):
        SqlRegistry.open(f"sqlite:///{blocker / 'registry.db'}")


def test_a_closed_registry_says_so(sqlite_url: str) -> None:
    registry = SqlRegistry.open(sqlite_url)
    registry.close()
    with pytest.raises(StoreError, match="closed"):
        registry.effective(MT)


# -- effective status and history ----------------------------------------------------------------------


def test_register_makes_a_new_type_proposed_and_records_the_registration(registry: SqlRegistry) -> None:
    state = registry.register(MT, "1.0.0", actor="dag:contract_change", run_id="manual__1")
    assert (state.status, state.contract_version, state.revision) == (Status.PROPOSED, "1.0.0", 1)
    assert registry.effective(MT) == state
    [registration] = registry.transitions(MT)
    assert (registration.from_status, registration.to_status) == (None, Status.PROPOSED)
    assert (registration.actor, registration.run_id) == ("dag:contract_change", "manual__1")


def test_register_again_changes_only_the_contract_version(registry: SqlRegistry) -> None:
    registry.register(MT, "1.0.0", actor="alice")
    walk(registry, MT, Status.EXPERIMENTAL)
    assert registry.register(MT, "1.0.0", actor="bob") == registry.effective(MT)
    bumped = registry.register(MT, "1.1.0", actor="bob")
    assert (bumped.status, bumped.contract_version, bumped.revision) == (Status.EXPERIMENTAL, "1.1.0", 3)
    assert registry.effective(MT) == bumped
    assert [t.to_status for t in registry.transitions(MT)] == [Status.PROPOSED, Status.EXPERIMENTAL]


def test_apply_transition_moves_the_status_and_records_why(registry: SqlRegistry) -> None:
    proposed = registry.register(MT, "1.0.0", actor="alice")
    lint = registry.add_evidence(MT, contract_version="1.0.0", kind="lint", verdict="pass", figures={})
    state = registry.apply_transition(
        MT, expected=proposed, to=Status.EXPERIMENTAL, actor="dag:contract_change", reason="guards passed",
        run_id="scheduled__2026-07-01", evidence_id=lint.id,
    )  # fmt: skip
    assert (state.status, state.revision) == (Status.EXPERIMENTAL, 2)
    assert registry.effective(MT) == state
    last = registry.transitions(MT)[-1]
    assert (last.from_status, last.to_status, last.reason) == (Status.PROPOSED, Status.EXPERIMENTAL, "guards passed")
    assert (last.run_id, last.evidence_id, last.revision) == ("scheduled__2026-07-01", lint.id, 2)
    assert registry.transition(MT, 2) == last


def test_a_stale_expected_state_is_a_concurrent_transition_naming_the_winner(registry: SqlRegistry) -> None:
    proposed = registry.register(MT, "1.0.0", actor="alice")
    registry.apply_transition(MT, expected=proposed, to=Status.EXPERIMENTAL, actor="dag:x", reason="r", run_id="run-7")
    with pytest.raises(ConcurrentTransition) as caught:
        registry.apply_transition(MT, expected=proposed, to=Status.EXPERIMENTAL, actor="bob", reason="r")
    assert "dag:x" in str(caught.value) and "run-7" in str(caught.value)
    assert [t.actor for t in registry.transitions(MT)] == ["alice", "dag:x"]
    assert registry.effective(MT).revision == 2  # type: ignore[union-attr]


def test_history_is_append_only(registry: SqlRegistry) -> None:
    registry.register(MT, "1.0.0", actor="alice")
    walk(registry, MT, Status.EXPERIMENTAL)
    before = registry.transitions(MT)
    walk(registry, MT, Status.ACTIVE)
    registry.register(MT, "1.1.0", actor="bob")
    registry.record_refusal(MT, from_status=Status.ACTIVE, to_status=Status.RETIRED, reasons=["no"], actor="bob")
    after = registry.transitions(MT)
    assert after[: len(before)] == before
    assert [(t.from_status, t.to_status) for t in after] == [
        (None, Status.PROPOSED),
        (Status.PROPOSED, Status.EXPERIMENTAL),
        (Status.EXPERIMENTAL, Status.ACTIVE),
    ]
    assert [t.revision for t in after] == [1, 2, 3]


def test_all_effective_lists_every_type(registry: SqlRegistry) -> None:
    registry.register("b.second.v1", "1.0.0", actor="alice")
    registry.register("a.first.v1", "1.0.0", actor="alice")
    assert [s.message_type for s in registry.all_effective()] == ["a.first.v1", "b.second.v1"]


def test_refusals_come_back_newest_first_with_every_reason(registry: SqlRegistry) -> None:
    for n in range(3):
        registry.record_refusal(
            MT, from_status=Status.ACTIVE, to_status=Status.SUPERSEDED, reasons=[f"reason {n}", "second"],
            actor="dag:contract_change", run_id=f"run-{n}",
        )  # fmt: skip
    latest = registry.refusals(MT, limit=2)
    assert [r.run_id for r in latest] == ["run-2", "run-1"]
    assert latest[0].reasons == ("reason 2", "second")
    assert (latest[0].from_status, latest[0].to_status) == (Status.ACTIVE, Status.SUPERSEDED)


# -- evidence ------------------------------------------------------------------------------------------


def test_evidence_round_trips_its_json_figures(registry: SqlRegistry, sqlite_url: str) -> None:
    figures = {
        "invalid": 3,
        "total": 1000,
        "rate": 0.003,
        "reasons": {"PAYLOAD_INVALID": 3},
        "note": "zürich",
        "x": None,
    }
    added = registry.add_evidence(
        MT, contract_version="1.2.0", kind=EvidenceKind.ARCHIVE_VALIDATION, verdict=Verdict.FAIL, figures=figures,
        reference="/data/reports/av.json", run_id="run-1", collected_at=T0,
    )  # fmt: skip
    registry.close()
    with SqlRegistry.open(sqlite_url) as reopened:
        read = reopened.latest_evidence(MT, "archive_validation")
    assert read == added
    assert read is not None and read.figures == figures and read.verdict is Verdict.FAIL
    assert (read.reference, read.run_id, read.contract_version) == ("/data/reports/av.json", "run-1", "1.2.0")


def test_latest_evidence_is_by_collection_time_not_insertion_order(registry: SqlRegistry) -> None:
    def add(kind: str, at: datetime, version: str = "1.0.0") -> int:
        record = registry.add_evidence(
            MT, contract_version=version, kind=kind, verdict="pass", figures={}, collected_at=at
        )
        return record.id

    newest = add("lint", T0)
    older = add("lint", T0 - timedelta(days=1))
    other_version = add("lint", T0 - timedelta(hours=1), version="0.9.0")
    add("fixtures", T0 + timedelta(hours=1))
    assert registry.latest_evidence(MT, "lint").id == newest  # type: ignore[union-attr]
    assert registry.latest_evidence(MT, "lint", contract_version="0.9.0").id == other_version  # type: ignore[union-attr]
    assert [e.id for e in registry.evidence(MT, "lint")] == [newest, other_version, older]
    assert [e.id for e in registry.evidence(MT, "lint", since=T0 - timedelta(hours=2))] == [newest, other_version]
    assert [e.id for e in registry.evidence(MT, "lint", limit=1)] == [newest]
    assert len(registry.evidence(MT)) == 4
    assert registry.latest_evidence(MT, "topology") is None


@pytest.mark.parametrize(
    ("changes", "error", "match"),
    [
        ({"kind": "lnt"}, ValueError, "unknown evidence kind 'lnt'; known: lint, fixtures"),
        ({"verdict": "ok"}, ValueError, "unknown verdict 'ok'"),
        ({"figures": {"when": T0}}, TypeError, "figures cannot be stored as JSON"),
        ({"figures": {"rate": float("nan")}}, TypeError, "figures cannot be stored as JSON"),
        ({"figures": [1, 2]}, TypeError, "figures must be a JSON object"),
        ({"collected_at": datetime(2026, 7, 1, 12, 0)}, ValueError, "naive"),
    ],
)
def test_bad_evidence_is_refused_before_it_reaches_the_database(
    registry: SqlRegistry, changes: dict[str, Any], error: type[Exception], match: str
) -> None:
    arguments: dict[str, Any] = {"contract_version": "1.0.0", "kind": "lint", "verdict": "pass", "figures": {}}
    with pytest.raises(error, match=match):
        registry.add_evidence(MT, **{**arguments, **changes})
    assert registry.evidence(MT) == []


def test_datetimes_come_back_aware_utc_whatever_went_in(registry: SqlRegistry, sqlite_url: str) -> None:
    cest = timezone(timedelta(hours=2))
    registry.register(MT, "1.0.0", actor="alice")
    registry.add_evidence(
        MT, contract_version="1.0.0", kind="lint", verdict="pass", figures={},
        collected_at=datetime(2026, 7, 1, 14, 0, tzinfo=cest),
    )  # fmt: skip
    registry.record_observation(MT, "q", consumers=0, ready=0, unacked=0, source="amqp", observed_at=T0)
    registry.close()
    with SqlRegistry.open(sqlite_url) as reopened:
        stamps = [
            reopened.effective(MT).updated_at,  # type: ignore[union-attr]
            reopened.transitions(MT)[0].at,
            reopened.latest_evidence(MT, "lint").collected_at,  # type: ignore[union-attr]
            reopened.observations(MT)[0].observed_at,
        ]
        evidence_at = reopened.latest_evidence(MT, "lint").collected_at  # type: ignore[union-attr]
    assert all(stamp.tzinfo is UTC for stamp in stamps)
    assert evidence_at == T0 and evidence_at.hour == 12


# -- schema snapshots, observations, fingerprints -------------------------------------------------------


def test_schema_snapshots_are_recorded_once_and_listed_by_semver(registry: SqlRegistry) -> None:
    for version in ("1.10.0", "1.2.0", "1.9.1"):
        assert registry.snapshot_schema(MT, version, {"type": "object", "title": version}) is True
    assert registry.snapshot_schema(MT, "1.2.0", {"title": "1.2.0", "type": "object"}) is False  # same, keys reordered
    assert [version for version, _ in registry.schema_history(MT)] == ["1.2.0", "1.9.1", "1.10.0"]
    assert registry.schema_history(MT)[0][1] == {"type": "object", "title": "1.2.0"}


def test_a_changed_schema_under_a_recorded_version_is_a_conflict(registry: SqlRegistry) -> None:
    registry.snapshot_schema(MT, "1.2.0", {"type": "object"})
    with pytest.raises(SnapshotConflict, match="bump `version`"):
        registry.snapshot_schema(MT, "1.2.0", {"type": "object", "required": ["invoiceId"]})
    assert registry.schema_history(MT) == [("1.2.0", {"type": "object"})]


def test_schema_fingerprint_ignores_key_order_only() -> None:
    assert schema_fingerprint({"a": 1, "b": [1, 2]}) == schema_fingerprint({"b": [1, 2], "a": 1})
    assert schema_fingerprint({"a": 1, "b": [1, 2]}) != schema_fingerprint({"a": 1, "b": [2, 1]})
    assert len(schema_fingerprint({})) == 64


def test_observations_are_a_time_series(registry: SqlRegistry) -> None:
    queue = "accounting-service.billing.invoice-issued.v1"
    for hours, consumers in ((2, 1), (0, 0), (1, 0)):
        registry.record_observation(
            MT, queue, consumers=consumers, ready=0, unacked=None, source=ObservationSource.AMQP, run_id="r",
            observed_at=T0 + timedelta(hours=hours),
        )  # fmt: skip
    series = registry.observations(MT)
    assert [o.observed_at for o in series] == [T0, T0 + timedelta(hours=1), T0 + timedelta(hours=2)]
    assert [o.consumers for o in series] == [0, 0, 1]
    assert series[0].unacked is None and series[0].source is ObservationSource.AMQP
    assert len(registry.observations(MT, since=T0 + timedelta(minutes=30))) == 2
    with pytest.raises(ValueError, match="unknown observation source"):
        registry.record_observation(MT, queue, consumers=0, ready=0, unacked=0, source="snmp")


def test_fingerprints_remember_the_last_one_set(registry: SqlRegistry) -> None:
    assert registry.fingerprint(MT) is None
    registry.set_fingerprint(MT, "aaa")
    registry.set_fingerprint(MT, "bbb")
    assert registry.fingerprint(MT) == "bbb"
    assert registry.fingerprint("other.type.v1") is None


# -- every database failure is a StoreError --------------------------------------------------------------

CALLS: dict[str, Callable[[SqlRegistry], object]] = {
    "effective": lambda r: r.effective(MT),
    "all_effective": lambda r: r.all_effective(),
    "register": lambda r: r.register(MT, "1.0.0", actor="a"),
    "apply_transition": lambda r: r.apply_transition(
        MT, expected=_state(), to=Status.EXPERIMENTAL, actor="a", reason="r"
    ),
    "transitions": lambda r: r.transitions(MT),
    "transition": lambda r: r.transition(MT, 1),
    "record_refusal": lambda r: r.record_refusal(
        MT, from_status=None, to_status=Status.PROPOSED, reasons=[], actor="a"
    ),
    "refusals": lambda r: r.refusals(MT),
    "add_evidence": lambda r: r.add_evidence(MT, contract_version="1", kind="lint", verdict="pass", figures={}),
    "latest_evidence": lambda r: r.latest_evidence(MT, "lint"),
    "evidence": lambda r: r.evidence(MT),
    "latest_transitions": lambda r: r.latest_transitions(),
    "latest_refusals": lambda r: r.latest_refusals(),
    "latest_evidence_of": lambda r: r.latest_evidence_of(["lint"], message_types=[MT]),
    "transitions_by": lambda r: r.transitions_by("dag:x", ["run"]),
    "refusals_by": lambda r: r.refusals_by("dag:x"),
    "evidence_of_runs": lambda r: r.evidence_of_runs(["lint"], ["run"]),
    "run_times": lambda r: r.run_times("dag:x", ["lint"]),
    "snapshot_schema": lambda r: r.snapshot_schema(MT, "1.0.0", {}),
    "schema_history": lambda r: r.schema_history(MT),
    "record_observation": lambda r: r.record_observation(MT, "q", consumers=0, ready=0, unacked=0, source="amqp"),
    "observations": lambda r: r.observations(MT),
    "fingerprint": lambda r: r.fingerprint(MT),
    "set_fingerprint": lambda r: r.set_fingerprint(MT, "x"),
    "schema_version": lambda r: r.schema_version(),
    "store_broker_events": lambda r: r.store_broker_events([_event()]),
    "open_coverage_segment": lambda r: r.open_coverage_segment("s", started_at=T0, host=None),
    "last_confirmation": lambda r: r.last_confirmation(),
    "extend_coverage": lambda r: r.extend_coverage("s", covered_from=T0, until=T0),
    "end_coverage_segment": lambda r: r.end_coverage_segment("s", at=T0, reason="stopped"),
    "coverage": lambda r: r.coverage(T0),
    "record_gap": lambda r: r.record_gap(T0, T0, "unstorable"),
    "broker_events_since": lambda r: r.broker_events_since(T0),
    "reader_sessions": lambda r: r.reader_sessions([("/", "q")], since=T0, until=T0),
    "broker_changes": lambda r: r.broker_changes([("/", "q")], since=T0),
    "record_queue_counters": lambda r: r.record_queue_counters([_counters()]),
    "queue_counters": lambda r: r.queue_counters(MT, since=T0),
    "prune_broker_activity": lambda r: r.prune_broker_activity(T0),
    "store_deliveries": lambda r: r.store_deliveries([_delivery()]),
    "request_delivery_watches": lambda r: r.request_delivery_watches([("/", "q")], at=T0, traced_from=T0),
    "restart_delivery_watches": lambda r: r.restart_delivery_watches("/", traced_from=T0, reason="lost"),
    "confirm_delivery_watches": lambda r: r.confirm_delivery_watches("/", until=T0),
    "delivery_watches": lambda r: r.delivery_watches(),
    "prune_evidence": lambda r: r.prune_evidence(T0),
    "reclaim_space": lambda r: r.reclaim_space(min_free_ratio=0.25),
}


def _delivery() -> Any:
    from contract_platform.evidence.records import Delivery

    return Delivery("/", "q", "127.0.0.1:1 -> 127.0.0.1:5672", "1", "guest", T0, T0, 1)


def _event() -> Any:
    from contract_platform.evidence.records import BrokerEvent

    return BrokerEvent("k", "queue.created", T0, "/", {"name": "q"})


def _counters() -> Any:
    from contract_platform.evidence.records import QueueCounters

    return QueueCounters(MT, "/", "q", T0, True, 0, 0, 0, 0)


def _state() -> Any:
    from contract_platform.store import VersionState

    return VersionState(MT, Status.PROPOSED, "1.0.0", 1, T0)


def test_every_public_call_is_covered_by_the_error_mapping_test() -> None:
    public = {name for name in dir(SqlRegistry) if not name.startswith("_") and callable(getattr(SqlRegistry, name))}
    assert public - {"open", "close"} == set(CALLS)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_call_maps_database_errors_to_store_error(tmp_path: Path, name: str) -> None:
    database = tmp_path / "registry.db"
    database.write_bytes(b"this is not an SQLite database, it only has its name" * 100)
    url = f"sqlite:///{database}"
    broken = SqlRegistry(Database(url))  # skip open(): it would refuse the file already
    with pytest.raises(StoreError) as caught:
        CALLS[name](broken)
    assert str(database) in str(caught.value) and "not a database" in str(caught.value)
    broken.close()


def test_open_maps_a_corrupt_file_to_a_store_error(tmp_path: Path) -> None:
    database = tmp_path / "registry.db"
    database.write_bytes(b"garbage" * 1000)
    with pytest.raises(StoreError, match="checking the schema failed: file is not a database"):
        SqlRegistry.open(f"sqlite:///{database}")

"""A migration per consumer (impact.moves): which fields each v<N-1> consumer must stop reading as they are,
and whether it has moved, judged from reader sessions on both versions' queues."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.support.cli import run_cli

from contract_platform.catalog.model import Catalog, Consumer
from contract_platform.evidence.records import BrokerEvent, ReaderSession
from contract_platform.impact.moves import ReadHistory, consumer_moves, fates_of, judge_move, still_on_source
from contract_platform.migration import parse_spec
from contract_platform.retirement.readers_seen import observed_moves
from contract_platform.store import SqlRegistry

V1, V2 = "billing.invoice-issued.v1", "billing.invoice-issued.v2"
SOURCE = {"type": "object", "properties": {k: {"type": "string"} for k in ("id", "amount", "code", "kind", "legacy")}}
SPEC = parse_spec(
    {
        "from": V1,
        "to": V2,
        "description": "d",
        "payload": [
            {"op": "copy", "from": "/id", "to": "/id"},
            {"op": "copy", "from": "/code", "to": "/reference"},
            {"op": "toString", "from": "/amount", "to": "/amountText"},
            {"op": "drop", "from": "/legacy", "reason": "nobody needs it"},
            {"op": "constant", "to": "/schema", "value": 2},
        ],
    },
    "migration.yaml",
)


@pytest.mark.parametrize(
    ("reads", "fates"),
    [
        (["/payload/id", "/metadata/messageId"], []),  # carried unchanged; metadata is the bridge's
        (["/payload/code"], [("/payload/code", "renamed")]),
        (["/payload/amount"], [("/payload/amount", "transformed")]),
        (["/payload/legacy"], [("/payload/legacy", "dropped")]),
        (["/payload/kind"], [("/payload/kind", "not-carried")]),  # no op carries it
        (
            ["/payload"],
            [("/payload/code", "renamed"), ("/payload/amount", "transformed"), ("/payload/legacy", "dropped")],
        ),
        (
            None,  # reads everything
            [
                ("/payload/code", "renamed"),
                ("/payload/amount", "transformed"),
                ("/payload/legacy", "dropped"),
                ("/payload/kind", "not-carried"),
            ],
        ),
    ],
)
def test_what_a_consumer_must_change_follows_the_ops_on_what_it_reads(reads, fates) -> None:
    assert [(f.field, f.fate) for f in fates_of(reads, SPEC, SOURCE)] == fates


def test_a_rename_names_where_the_field_went() -> None:
    [fate] = fates_of(["/payload/code"], SPEC, SOURCE)
    assert fate.detail == "renamed to /payload/reference by op /payload/1"


NOW = datetime(2026, 11, 28, 4, 30, tzinfo=UTC)
WINDOW = NOW - timedelta(minutes=5)
OLD, NEW = "accounting-service.billing.invoice-issued.v1", "accounting-service.billing.invoice-issued.v2"


def _session(queue: str, attached: datetime | None = None, detached: datetime | None = None) -> ReaderSession:
    return ReaderSession("/", queue, "ctag", "ch", attached, detached, connection_name="app")


def _read(queue: str, minutes_ago: float, for_minutes: float = 1) -> ReaderSession:
    start = NOW - timedelta(minutes=minutes_ago)
    return _session(queue, start, start + timedelta(minutes=for_minutes))


def history(*sessions: ReaderSession, covered_from: datetime = NOW - timedelta(days=1), gap: bool = False):
    covered = (
        [(covered_from, NOW - timedelta(minutes=8)), (NOW - timedelta(minutes=7), NOW)]
        if gap
        else [(covered_from, NOW)]
    )
    return ReadHistory(sessions=sessions, covered=covered, window_start=WINDOW, now=NOW)


@pytest.mark.parametrize(
    ("sessions", "gap", "state", "says"),
    [
        # the main job's shape: v1 last read at 04:22, v2 read from 04:24, nobody attached in the last window
        ((_read(OLD, 10), _read(NEW, 8, 0.5)), False, "moved", f"reads {NEW} since 2026-11-28T04:22:00Z"),
        ((_read(NEW, 2),), False, "moved", f"never read {OLD}"),
        ((_read(OLD, 10), _read(NEW, 8, 0.5)), True, "unknown", "gap since"),  # it could have gone back meanwhile
        ((_read(NEW, 4), _read(OLD, 3)), False, "moving", "reads both"),
        ((_read(OLD, 3),), False, "not-moved", f"still reads {OLD}"),
        ((_session(OLD, NOW - timedelta(hours=1), None), _read(NEW, 2)), False, "moving", "reads both"),
        ((_read(OLD, 60),), False, "idle", f"{OLD} last at 2026-11-28T03:31:00Z, {NEW} last at never"),
        ((), False, "idle", "read neither queue since 2026-11-28T04:25:00Z"),
    ],
)
def test_moved_is_a_fact_of_history_not_of_the_latest_window(sessions, gap, state, says) -> None:
    found, why = judge_move(OLD, NEW, history(*sessions, gap=gap))

    assert (found, says in why) == (state, True), why


@pytest.fixture(scope="module")
def pair(catalog: Catalog):
    v1, v2 = catalog.get(V1), catalog.get(V2)
    return catalog, v1, v2, parse_spec(v2.migration, str(v2.migration_file))


def test_each_declared_consumer_is_judged_on_its_own_queues(pair) -> None:
    catalog, v1, v2, spec = pair
    accounting, notification = v1.consumers
    extra = Consumer("ledger-service", "ledger-service.billing.invoice-issued.v1", reads=("/payload/invoiceId",))
    v1 = replace(v1, consumers=(*v1.consumers, extra))
    sessions = [
        _read(accounting.queue.replace(".v1", ".v2"), 2),  # accounting reads v2 only
        _read(notification.queue.replace(".v1", ".v2"), 4),  # notification reads both, v1 last
        _read(notification.queue, 3),
    ]

    moves = {m.service: m for m in consumer_moves(catalog, v1, v2, spec, history=history(*sessions))}

    assert moves["accounting-service"].state == "moved"
    assert moves["notification-service"].state == "moving"
    assert moves["ledger-service"].state == "not-declared"
    assert moves["ledger-service"].unchanged  # reads only invoiceId, which the migration copies
    assert [f.field for f in moves["accounting-service"].must_change] == ["/payload/amount"]
    assert moves["accounting-service"].team == "finance-systems"
    assert [m.service for m in still_on_source(list(moves.values()))] == ["notification-service", "ledger-service"]
    unknown = consumer_moves(catalog, v1, v2, spec, history=None, unknown="recorder gap")
    assert {m.state for m in unknown if m.service != "ledger-service"} == {"unknown"}
    assert "recorder gap" in unknown[0].why


def test_observed_moves_read_the_recorders_sessions_and_say_when_there_are_none(pair, tmp_path) -> None:
    catalog, v1, v2, spec = pair
    now = datetime.now(UTC)
    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as registry:
        assert {m.state for m in observed_moves(catalog, v1, v2, registry, now=now)} == {"unknown"}
        since = now - v1.retirement.observation_span - timedelta(hours=1)
        registry.open_coverage_segment("s", started_at=since, host="t")
        registry.extend_coverage("s", covered_from=since, until=now)
        v2_queue = v2.consumers[0].queue
        fields = {"queue": v2_queue, "consumer_tag": "c1", "channel": "<ch1>"}
        registry.store_broker_events([BrokerEvent("e1", "consumer.created", now - timedelta(hours=2), "/", fields)])

        moves = observed_moves(catalog, v1, v2, registry, now=now)

    assert [(m.service, m.state) for m in moves] == [
        ("accounting-service", "moved"),  # read v2 two hours ago: outside the window, still moved
        ("notification-service", "idle"),  # read neither
    ]


def test_migration_status_shows_each_consumer_with_its_owner_and_what_it_must_change(capsys, tmp_path) -> None:
    registry = f"sqlite:///{tmp_path / 'registry.db'}"

    code, out, _ = run_cli(capsys, "migration", "status", V1, "--registry", registry)

    assert code == 0
    assert "accounting-service (finance-systems, finance-systems@example.com): unknown" in out
    assert "must change: reads /payload/amount: /payload/amount transformed by decimalToMinorUnits" in out
    code, out, _ = run_cli(capsys, "migration", "status", V2, "--registry", registry, "--format", "json")
    moves = json.loads(out)["consumerMoves"]
    assert [(m["service"], m["canMoveUnchanged"]) for m in moves] == [
        ("accounting-service", False),
        ("notification-service", False),
    ]


def test_the_retirement_report_lists_the_consumers_still_on_the_old_version(pair, tmp_path: Path) -> None:
    from contract_platform.retirement.model import AuditResult
    from contract_platform.retirement.policy import check_successor_consumers
    from contract_platform.retirement.report import render_audit_page

    catalog, v1, v2, spec = pair
    notification_v1 = v1.consumers[1].queue
    moves = consumer_moves(
        catalog, v1, v2, spec, history=history(_read(v2.consumers[0].queue, 2), _read(notification_v1, 1))
    )

    check = check_successor_consumers(v1, catalog, moves)
    page = render_audit_page(AuditResult(V1, v1.version, datetime.now(UTC), (check,), "run"))

    assert check.figures["stillOnSource"][0]["service"] == "notification-service"
    assert "| `notification-service` | customer-comms | customer-comms@example.com | not-moved |" in page
    assert "accounting-service` |" not in page.split("Consumers still on this version")[1]

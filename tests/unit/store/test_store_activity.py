"""Broker activity in the registry store: events applied once, sessions with who they were, coverage and gaps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from contract_platform.evidence.records import BrokerEvent
from contract_platform.store import SqlRegistry

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def ev(kind: str, at: timedelta, vhost: str = "/", **fields: str | None) -> BrokerEvent:
    return BrokerEvent(f"{kind}|{at}|{sorted(fields.items())}", kind, T0 + at, vhost, fields)


@pytest.fixture
def registry(tmp_path: Path) -> SqlRegistry:
    store = SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}")
    yield store  # type: ignore[misc]
    store.close()


def batch_reader(start: timedelta, end: timedelta) -> list[BrokerEvent]:
    who = {"channel": "<ch.1>", "queue": "q1", "consumer_tag": "ctag"}
    return [
        ev(
            "connection.created",
            start,
            pid="<conn.1>",
            name="10.0.0.7:1 -> 10.0.0.1:5672",
            client_name="nightly-ledger-batch",
            peer_host="10.0.0.7",
            user="ledger",
        ),
        ev("channel.created", start, pid="<ch.1>", connection="<conn.1>"),
        ev("consumer.created", start, **who, user="ledger"),
        ev("consumer.deleted", end, **who),
    ]


def test_a_session_is_stored_once_with_its_connection_however_often_the_batch_arrives(registry: SqlRegistry) -> None:
    events = batch_reader(timedelta(minutes=1), timedelta(minutes=21))
    assert registry.store_broker_events(events) == 4
    assert registry.store_broker_events(events) == 0  # redelivered after a crash before the ack
    sessions = registry.reader_sessions([("/", "q1")], since=T0, until=T0 + timedelta(hours=1))
    assert len(sessions) == 1
    found = sessions[0]
    assert (found.connection_name, found.peer_host, found.user) == ("nightly-ledger-batch", "10.0.0.7", "ledger")
    assert (found.attached_at, found.detached_at) == (T0 + timedelta(minutes=1), T0 + timedelta(minutes=21))
    assert registry.reader_sessions([("/", "q1")], since=T0 + timedelta(hours=1), until=T0 + timedelta(hours=2)) == []
    assert registry.reader_sessions([("other", "q1")], since=T0, until=T0 + timedelta(hours=1)) == []


def test_a_detachment_without_its_attachment_is_a_reader_since_an_unknown_moment(registry: SqlRegistry) -> None:
    registry.store_broker_events(
        [ev("consumer.deleted", timedelta(minutes=5), channel="<ch.9>", queue="q1", consumer_tag="t")]
    )
    (found,) = registry.reader_sessions([("/", "q1")], since=T0, until=T0 + timedelta(hours=1))
    assert found.attached_at is None and found.detached_at == T0 + timedelta(minutes=5)


def test_queue_changes_are_kept_in_order(registry: SqlRegistry) -> None:
    registry.store_broker_events(
        [ev("queue.deleted", timedelta(minutes=2), name="q1"), ev("queue.created", timedelta(minutes=3), name="q1")]
    )
    kinds = [c.kind for c in registry.broker_changes([("/", "q1")], since=T0)]
    assert kinds == ["queue.deleted", "queue.created"]


def test_a_new_segment_records_the_gap_since_the_last_confirmed_coverage(registry: SqlRegistry) -> None:
    registry.open_coverage_segment("a", started_at=T0, host="h")
    assert registry.extend_coverage("a", covered_from=T0, until=T0 + timedelta(minutes=10)) is None  # the first ever
    # a consumer attaches; then the recorder is killed (no end reason) and comes back 5 minutes later
    registry.store_broker_events(batch_reader(timedelta(minutes=9), timedelta(hours=5))[:3])
    registry.open_coverage_segment("b", started_at=T0 + timedelta(minutes=15), host="h")
    gap = registry.extend_coverage("b", covered_from=T0 + timedelta(minutes=15), until=T0 + timedelta(minutes=16))
    assert gap is not None and (gap.start, gap.end) == (T0 + timedelta(minutes=10), T0 + timedelta(minutes=15))
    assert "killed" in gap.reason
    segments, gaps = registry.coverage(T0)
    assert [s.id for s in segments] == ["a", "b"] and gaps == [gap]
    # what the consumer did after the last confirmed moment is unknown: its session ends there
    (session,) = registry.reader_sessions([("/", "q1")], since=T0, until=T0 + timedelta(hours=1))
    assert session.detached_at == T0 + timedelta(minutes=10)
    # the second extension of the same segment records no second gap
    assert (
        registry.extend_coverage("b", covered_from=T0 + timedelta(minutes=15), until=T0 + timedelta(minutes=20)) is None
    )
    registry.end_coverage_segment("b", at=T0 + timedelta(minutes=21), reason="the recorder was stopped")
    assert registry.coverage(T0)[0][-1].end_reason == "the recorder was stopped"


def test_pruning_forgets_only_what_ended_before_the_retention(registry: SqlRegistry) -> None:
    registry.store_broker_events(batch_reader(timedelta(minutes=1), timedelta(minutes=2)))
    registry.store_broker_events([ev("consumer.created", timedelta(days=2), channel="c", queue="q2", consumer_tag="t")])
    assert registry.prune_broker_activity(T0 + timedelta(days=1)) > 0
    assert registry.reader_sessions([("/", "q1")], since=T0, until=T0 + timedelta(days=3)) == []
    assert len(registry.reader_sessions([("/", "q2")], since=T0, until=T0 + timedelta(days=3))) == 1


def test_a_batch_with_connections_opened_and_closed_inside_it_and_before_it(registry: SqlRegistry) -> None:
    early = [
        ev("connection.created", timedelta(0), pid="<c.0>", name="n0"),
        ev("channel.created", timedelta(0), pid="<ch.0>", connection="<c.0>"),
    ]
    registry.store_broker_events(early)
    batch = [
        ev("connection.created", timedelta(minutes=1), pid="<c.1>", name="n1", client_name="short-lived"),
        ev("channel.created", timedelta(minutes=1), pid="<ch.1>", connection="<c.1>"),
        ev("consumer.created", timedelta(minutes=1), channel="<ch.1>", queue="q1", consumer_tag="a"),
        ev("consumer.deleted", timedelta(minutes=2), channel="<ch.1>", queue="q1", consumer_tag="a"),
        ev("channel.closed", timedelta(minutes=2), pid="<ch.1>"),
        ev("connection.closed", timedelta(minutes=2), pid="<c.1>"),
        ev("consumer.created", timedelta(minutes=3), channel="<ch.0>", queue="q1", consumer_tag="b"),
        ev("channel.closed", timedelta(minutes=4), pid="<ch.0>"),
        ev("connection.closed", timedelta(minutes=4), pid="<c.0>"),
    ]
    assert registry.store_broker_events(batch) == len(batch)
    sessions = registry.reader_sessions([("/", "q1")], since=T0, until=T0 + timedelta(hours=1))
    assert {(s.connection_name, s.detached_at) for s in sessions} == {
        ("short-lived", T0 + timedelta(minutes=2)),
        ("n0", None),
    }


def test_a_channel_opened_in_a_later_batch_than_its_connection_still_names_its_reader(registry: SqlRegistry) -> None:
    registry.store_broker_events(
        [ev("connection.created", timedelta(0), pid="<c.7>", name="peer -> broker", client_name="nightly", user="u")]
    )
    registry.store_broker_events(
        [
            ev("channel.created", timedelta(seconds=1), pid="<ch.7>", connection="<c.7>"),
            ev("consumer.created", timedelta(seconds=1), channel="<ch.7>", queue="q7", consumer_tag="t"),
        ]
    )
    (session,) = registry.reader_sessions([("/", "q7")], since=T0, until=T0 + timedelta(minutes=1))
    assert session.connection_name == "nightly"


def test_a_segment_that_proved_continuity_starts_at_the_last_confirmed_moment_with_no_gap(
    registry: SqlRegistry,
) -> None:
    registry.open_coverage_segment("a", started_at=T0, host="h:1")
    registry.extend_coverage("a", covered_from=T0, until=T0 + timedelta(minutes=10))
    registry.store_broker_events(batch_reader(timedelta(minutes=9), timedelta(hours=5))[:3])  # still attached
    # the recorder was killed; another takes over five minutes later and proves nothing was lost
    continued = T0 + timedelta(minutes=10)
    assert registry.last_confirmation() is not None and registry.last_confirmation().covered_until == continued  # type: ignore[union-attr]
    assert (
        registry.open_coverage_segment(
            "b", started_at=continued + timedelta(minutes=5), host="h:2", covered_from=continued
        )
        is None
    )
    registry.extend_coverage("b", covered_from=continued, until=T0 + timedelta(minutes=16))
    segments, gaps = registry.coverage(T0)
    assert gaps == [] and [(s.covered_from, s.covered_until) for s in segments] == [
        (T0, continued),
        (continued, T0 + timedelta(minutes=16)),
    ]
    assert segments[0].ended_at == continued and "killed" in (segments[0].end_reason or "")  # replaced
    (session,) = registry.reader_sessions([("/", "q1")], since=T0, until=T0 + timedelta(hours=1))
    assert session.detached_at is None  # its detachment is still in the queue: the session stays open


def test_a_segment_that_could_not_prove_continuity_records_the_gap_it_was_given(registry: SqlRegistry) -> None:
    registry.open_coverage_segment("a", started_at=T0, host="h")
    registry.extend_coverage("a", covered_from=T0, until=T0 + timedelta(minutes=10))
    registry.store_broker_events(batch_reader(timedelta(minutes=9), timedelta(hours=5))[:3])
    start = T0 + timedelta(minutes=15)
    gap = registry.open_coverage_segment(
        "b", started_at=start, host="h", covered_from=start, gap_reason="broker node rabbit@x restarted at ..."
    )
    assert gap is not None and (gap.start, gap.end, gap.reason) == (
        T0 + timedelta(minutes=10),
        start,
        "broker node rabbit@x restarted at ...",
    )
    assert registry.coverage(T0)[1] == [gap]
    (session,) = registry.reader_sessions([("/", "q1")], since=T0, until=T0 + timedelta(hours=1))
    assert session.detached_at == T0 + timedelta(minutes=10)  # known only until the gap


def test_the_first_segment_ever_records_no_gap_whatever_it_was_told(registry: SqlRegistry) -> None:
    assert registry.open_coverage_segment("a", started_at=T0, host="h", covered_from=T0, gap_reason="x") is None
    assert registry.coverage(T0 - timedelta(days=1))[1] == []


def test_a_dropped_interval_closes_the_sessions_it_may_have_ended_and_keeps_later_ones(registry: SqlRegistry) -> None:
    before = [ev("consumer.created", timedelta(minutes=1), channel="c", queue="q1", consumer_tag="before")]
    inside = [ev("consumer.created", timedelta(minutes=3), channel="c", queue="q1", consumer_tag="inside")]
    after = [ev("consumer.created", timedelta(minutes=6), channel="c", queue="q1", consumer_tag="after")]
    registry.store_broker_events(before + inside + after)
    registry.record_gap(T0 + timedelta(minutes=2), T0 + timedelta(minutes=5), "dropped", close_sessions=True)
    sessions = registry.reader_sessions([("/", "q1")], since=T0, until=T0 + timedelta(hours=1))
    assert {s.consumer_tag: s.detached_at for s in sessions} == {
        "before": T0 + timedelta(minutes=2),
        "inside": T0 + timedelta(minutes=3),
        "after": None,
    }


def test_a_detachment_delivered_before_its_attachment_makes_one_session(registry: SqlRegistry) -> None:
    # a recorder that takes over may be handed the newest event first, then the older ones
    who = {"channel": "<ch.5>", "queue": "q1", "consumer_tag": "late"}
    registry.store_broker_events([ev("consumer.deleted", timedelta(minutes=4), **who)])
    registry.store_broker_events([ev("consumer.created", timedelta(minutes=2), **who)])
    inside = {"channel": "<ch.6>", "queue": "q1", "consumer_tag": "same-batch"}
    registry.store_broker_events(
        [ev("consumer.deleted", timedelta(minutes=8), **inside), ev("consumer.created", timedelta(minutes=7), **inside)]
    )
    sessions = registry.reader_sessions([("/", "q1")], since=T0, until=T0 + timedelta(hours=1))
    assert sorted((s.consumer_tag, s.attached_at, s.detached_at) for s in sessions) == [
        ("late", T0 + timedelta(minutes=2), T0 + timedelta(minutes=4)),
        ("same-batch", T0 + timedelta(minutes=7), T0 + timedelta(minutes=8)),
    ]


def test_stored_events_are_counted_with_the_newest_moment(registry: SqlRegistry) -> None:
    registry.store_broker_events(batch_reader(timedelta(minutes=1), timedelta(minutes=21)))
    assert registry.broker_events_since(T0) == (4, T0 + timedelta(minutes=21))
    assert registry.broker_events_since(T0 + timedelta(minutes=2)) == (1, T0 + timedelta(minutes=21))

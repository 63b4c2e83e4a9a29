"""A recorder that starts continues from the last confirmed moment only when it can prove nothing was lost.

The facts are those a recorder gathers on the broker (docs/retirement-audit.md#restarts-standby-and-the-buffer):
the queue as it was before anything declared it, its sentinel, the nodes' start times, what was dropped.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from pika import BasicProperties

from contract_platform.activity.continuity import MARGIN, Drop, Found, Sentinel, decide, dropped

LAST = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)  # the last moment the store confirmed, by segment "seg-a"
START = LAST + timedelta(minutes=7)  # the new recorder starts reading
QUEUE = "contract-platform.broker-activity.0123456789"

HELD = Found(
    queue=QUEUE,
    limits=(50_000, 16 * 1024 * 1024),
    existed=True,
    incarnation="inc-1",
    sentinel=Sentinel("seg-a", "inc-1", LAST),
    node_starts={"rabbit@a": LAST - timedelta(days=3), "rabbit@b": LAST - timedelta(days=9)},
    drop=None,
)


def test_when_everything_held_the_coverage_goes_on_from_the_last_confirmed_moment() -> None:
    decision = decide("seg-a", LAST, HELD, START)
    assert (decision.covered_from, decision.gap_reason, decision.continued) == (LAST, None, True)


def test_the_first_recorder_ever_simply_starts_now() -> None:
    decision = decide(None, None, replace(HELD, existed=False, sentinel=None), START)
    assert (decision.covered_from, decision.gap_reason) == (START, None)


def test_a_node_that_restarted_since_is_a_gap_naming_it() -> None:
    restarted = {"rabbit@a": LAST + timedelta(minutes=2), "rabbit@b": LAST - timedelta(days=9)}
    decision = decide("seg-a", LAST, replace(HELD, node_starts=restarted), START)
    assert decision.covered_from == START and not decision.continued
    assert "broker node rabbit@a restarted at 2026-11-25T12:02:00.000+00:00" in (decision.gap_reason or "")
    assert "rabbit@b" not in (decision.gap_reason or "")


def test_a_restart_of_the_application_alone_is_seen_by_the_missing_sentinel() -> None:
    # rabbitmqctl stop_app / start_app: the node's uptime goes on, but its transient messages are gone
    decision = decide("seg-a", LAST, replace(HELD, sentinel=None), START)
    assert decision.covered_from == START
    assert f"its sentinel in {QUEUE}.alive is gone: the broker restarted" in (decision.gap_reason or "")


def test_a_queue_deleted_and_declared_again_is_not_the_same_queue() -> None:
    decision = decide("seg-a", LAST, replace(HELD, incarnation="inc-2"), START)
    assert f"{QUEUE} was deleted and declared again since" in (decision.gap_reason or "")
    absent = decide("seg-a", LAST, replace(HELD, existed=False, incarnation="inc-3"), START)
    assert f"its queue {QUEUE} was not on the broker" in (absent.gap_reason or "")


def test_a_queue_without_an_identity_cannot_be_told_from_another() -> None:
    unnamed = replace(HELD, incarnation="", sentinel=Sentinel("seg-a", "", LAST))
    assert "carries no x-contract-platform-incarnation argument" in (
        decide("seg-a", LAST, unnamed, START).gap_reason or ""
    )


def test_a_sentinel_that_was_not_renewed_at_the_last_confirmation_proves_nothing() -> None:
    stale = Sentinel("seg-a", "inc-1", LAST - timedelta(seconds=5))
    assert "its sentinel was last renewed at" in (
        decide("seg-a", LAST, replace(HELD, sentinel=stale), START).gap_reason or ""
    )
    forged = Sentinel("guessed", "inc-1", LAST)
    assert decide("seg-a", LAST, replace(HELD, sentinel=forged), START).gap_reason is not None


def test_without_the_management_api_nothing_can_be_proven() -> None:
    reason = decide("seg-a", LAST, replace(HELD, node_starts=None, incarnation=None), START).gap_reason or ""
    assert "start times" in reason and "which queue" in reason


def test_every_failure_is_named_in_one_gap() -> None:
    broken = replace(
        HELD,
        sentinel=None,
        node_starts={"rabbit@a": LAST + timedelta(seconds=30)},
        problems=("the broker cancelled the recorder's consumer",),
    )
    reason = decide("seg-a", LAST, broken, START).gap_reason or ""
    assert reason.startswith("the recorder could not prove that no broker event was lost after 2026-11-25T12:00:00")
    assert "sentinel" in reason and "rabbit@a" in reason and "cancelled" in reason


def test_events_dropped_at_the_limit_are_a_gap_up_to_the_latest_dropped_and_the_rest_is_kept() -> None:
    drop = Drop(LAST + timedelta(minutes=4), "a consumer.created event")
    decision = decide("seg-a", LAST, replace(HELD, drop=drop), START)
    assert decision.continued and decision.covered_from == drop.at + MARGIN
    reason = decision.gap_reason or ""
    assert f"{QUEUE} reached its limit (50,000 messages or 16,777,216 bytes) while no recorder read it" in reason
    assert "a consumer.created event at 2026-11-25T12:04:00.000+00:00" in reason


def test_a_dropped_event_is_timed_by_the_broker_a_marker_by_its_sender_anything_else_by_its_drop() -> None:
    found_at = LAST + timedelta(hours=1)
    death = {"count": 1, "reason": "maxlen", "queue": QUEUE, "time": LAST + timedelta(minutes=9)}
    event = BasicProperties(
        headers={
            "timestamp_in_ms": int((LAST + timedelta(minutes=3)).timestamp() * 1000),
            "x-death": [{**death, "routing-keys": ["consumer.deleted"]}],
        }
    )
    assert dropped(event, found_at) == Drop(LAST + timedelta(minutes=3), "a consumer.deleted event")
    marker = BasicProperties(
        headers={
            "x-contract-platform-marker": f"seg:nonce:{(LAST + timedelta(minutes=5)).isoformat()}",
            "x-death": [death],
        }
    )
    assert dropped(marker, found_at).at == LAST + timedelta(minutes=5)
    foreign = BasicProperties(headers={"x-death": [{**death, "routing-keys": [QUEUE]}]})
    assert dropped(foreign, found_at).at == LAST + timedelta(minutes=9)
    assert dropped(BasicProperties(), found_at).at == found_at


def test_a_sentinel_reads_back_and_anything_else_in_its_queue_is_none() -> None:
    sentinel = Sentinel("seg-a", "inc-1", LAST)
    assert Sentinel.decode(sentinel.encode()) == sentinel
    for body in (
        b"",
        b"{}",
        b"not json",
        b'{"segment": 1, "incarnation": "i", "confirmed": "2026-11-25"}',
        b"x" * 10_000,
    ):
        assert Sentinel.decode(body) is None

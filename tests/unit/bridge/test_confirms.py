"""ConfirmTracker: a delivery is acknowledged only once its republication is confirmed, in batches."""

from __future__ import annotations

from contract_platform.amqp.confirms import ConfirmTracker, Settle, SettleKind

ACK, REQUEUE = SettleKind.ACK, SettleKind.REQUEUE


def tracker_with(count: int) -> ConfirmTracker:
    """``count`` deliveries (tags 1..count) republished as publishes 1..count."""
    tracker = ConfirmTracker()
    for number in range(1, count + 1):
        tracker.published(number, number, f"m-{number}", "published")
    return tracker


def test_nothing_is_settled_before_a_confirm() -> None:
    tracker = tracker_with(5)
    assert tracker.settle() == []
    assert (tracker.in_flight, tracker.unsettled) == (5, 5)


def test_a_multiple_confirm_is_one_multiple_ack_up_to_the_highest_tag() -> None:
    tracker = tracker_with(5)
    tracker.answered(3, multiple=True, ok=True)
    assert tracker.settle() == [Settle(ACK, 3, 3)]
    assert tracker.in_flight == 2
    assert tracker.settle() == []  # each delivery settled once


def test_a_gap_stops_the_acknowledgement_frontier_until_it_is_confirmed() -> None:
    tracker = tracker_with(5)
    for sequence in (1, 2, 4, 5):
        tracker.answered(sequence, multiple=False, ok=True)
    assert tracker.settle() == [Settle(ACK, 2, 2)]  # 4 and 5 wait for 3
    tracker.answered(3, multiple=False, ok=True)
    assert tracker.settle() == [Settle(ACK, 5, 3)]
    assert tracker.unsettled == 0
    assert tracker.confirmed == {"published": 5}


def test_a_returned_publish_is_requeued_alone_and_the_rest_acknowledged() -> None:
    tracker = tracker_with(5)
    assert tracker.returned("m-3") == 1
    tracker.answered(5, multiple=True, ok=True)  # the broker acks a returned message too
    assert tracker.settle() == [Settle(ACK, 2, 2), Settle(REQUEUE, 3, 1), Settle(ACK, 5, 2)]
    assert (tracker.refused, tracker.confirmed["published"]) == (1, 4)


def test_an_unknown_returned_message_marks_everything_in_flight() -> None:
    tracker = tracker_with(3)
    tracker.answered(1, multiple=False, ok=True)
    assert tracker.returned(None) == 2
    tracker.answered(3, multiple=True, ok=True)
    assert tracker.settle() == [Settle(ACK, 1, 1), Settle(REQUEUE, 2, 1), Settle(REQUEUE, 3, 1)]


def test_a_broker_nack_requeues() -> None:
    tracker = tracker_with(2)
    tracker.answered(2, multiple=True, ok=False)
    assert tracker.settle() == [Settle(REQUEUE, 1, 1), Settle(REQUEUE, 2, 1)]


def test_labels_are_counted_only_when_confirmed() -> None:
    tracker = ConfirmTracker()
    tracker.published(1, 1, "a", "published")
    tracker.published(2, 2, "b", "not-migratable")
    tracker.published(3, 3, "c", "not-migratable")
    tracker.answered(2, multiple=True, ok=True)
    assert tracker.confirmed == {"published": 1, "not-migratable": 1}


def test_publish_sequences_and_delivery_tags_may_differ() -> None:
    tracker = ConfirmTracker()
    tracker.published(10, 1, "a", "published")  # e.g. after other publishes on the channel
    tracker.published(11, 2, "b", "published")
    tracker.answered(11, multiple=True, ok=True)
    assert tracker.settle() == [Settle(ACK, 2, 2)]


def test_a_long_run_of_single_confirms_keeps_no_stale_entries() -> None:
    tracker = tracker_with(10_000)
    for sequence in range(1, 10_001):
        tracker.answered(sequence, multiple=False, ok=True)
    assert tracker.settle() == [Settle(ACK, 10_000, 10_000)]
    assert tracker.unsettled == 0 and not tracker._order  # the internal queue is drained too

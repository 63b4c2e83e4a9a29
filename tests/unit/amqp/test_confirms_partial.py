"""ConfirmTracker for a consumer that republishes only some deliveries (the guard's dead letters): the others are
acknowledged in the same runs, and one the consumer answered itself is never the end of an acknowledgement."""

from __future__ import annotations

from contract_platform.amqp.confirms import ConfirmTracker, Settle, SettleKind

ACK, REQUEUE = SettleKind.ACK, SettleKind.REQUEUE


def test_handled_deliveries_are_acknowledged_in_one_run() -> None:
    tracker = ConfirmTracker()
    for tag in (1, 2, 3):
        tracker.done(tag)

    assert tracker.settle() == [Settle(ACK, 3, 3)]
    assert tracker.unsettled == 0


def test_a_dead_letter_waiting_for_its_confirm_holds_back_the_deliveries_after_it() -> None:
    tracker = ConfirmTracker()
    tracker.done(1)
    tracker.published(1, 2, "m-2", "PAYLOAD_INVALID")  # delivery 2's copy goes to the dead-letter exchange
    tracker.done(3)

    assert tracker.settle() == [Settle(ACK, 1, 1)]  # 3 waits: acknowledging it would acknowledge 2 as well
    tracker.answered(1, multiple=False, ok=True)
    assert tracker.settle() == [Settle(ACK, 3, 2)]
    assert tracker.confirmed == {"PAYLOAD_INVALID": 1}


def test_a_delivery_answered_elsewhere_is_passed_over_but_never_ends_a_run() -> None:
    tracker = ConfirmTracker()
    tracker.done(1)
    tracker.settled_elsewhere(2)  # nacked back to the queue by the consumer itself

    assert tracker.settle() == [Settle(ACK, 1, 1)]  # not ACK(2): the broker no longer holds tag 2
    tracker.done(3)
    assert tracker.settle() == [Settle(ACK, 3, 1)]
    assert tracker.settled_up_to == 3


def test_a_refused_dead_letter_is_settled_alone_between_the_runs_around_it() -> None:
    tracker = ConfirmTracker()
    tracker.done(1)
    tracker.published(1, 2, "m-2", "MALFORMED")
    tracker.done(3)
    tracker.returned("m-2")  # unroutable: no queue bound to the dead-letter exchange
    tracker.answered(1, multiple=False, ok=True)

    assert tracker.settle() == [Settle(ACK, 1, 1), Settle(REQUEUE, 2, 1), Settle(ACK, 3, 1)]
    assert tracker.refused == 1

"""Which earlier days an incremental run reads from the state, which from the archive, which nobody can see."""

from __future__ import annotations

from datetime import date, timedelta

from contract_platform.validation.lookback import Incomplete, plan_lookback

D = {n: date(2026, 7, n) for n in range(1, 11)}  # D[5] is 2026-07-05


def test_a_daily_run_after_the_day_before_reads_only_the_state() -> None:
    plan = plan_lookback(D[5], 1, archived=[D[1], D[2], D[3], D[4]], seen=[D[1], D[2], D[3], D[4]], last_day=D[4])
    assert plan.window == (D[4],)
    assert plan.seen_from_state == (D[4],) and plan.from_archive == ()
    assert plan.missing.complete


def test_the_first_run_over_an_existing_archive_reads_the_window_and_names_the_days_before_it() -> None:
    plan = plan_lookback(D[5], 2, archived=[D[1], D[2], D[3], D[4]], seen=[], last_day=None)
    assert plan.seen_from_archive == (D[3], D[4]) and plan.order_from_archive == (D[3], D[4])
    assert plan.from_archive == (D[3], D[4])  # never D[1] or D[2]: outside the window
    assert plan.missing == Incomplete(duplicates=(), ordering=(D[1], D[2]))


def test_a_day_never_run_after_the_last_run_is_read_for_both_rules() -> None:
    plan = plan_lookback(D[5], 1, archived=[D[3], D[4]], seen=[D[3]], last_day=D[3])
    assert plan.seen_from_archive == (D[4],) and plan.order_from_archive == (D[4],)
    assert plan.missing.complete


def test_a_day_run_out_of_order_still_has_its_sequences_read_from_the_archive() -> None:
    # D[4] was run as part of a later range: its first copies are kept, its sequences are in a later state
    plan = plan_lookback(D[5], 1, archived=[D[3], D[4]], seen=[D[3], D[4]], last_day=D[3])
    assert plan.seen_from_state == (D[4],) and plan.seen_from_archive == ()
    assert plan.order_from_archive == (D[4],) and plan.missing.complete


def test_a_day_with_neither_state_nor_partition_after_the_archive_began_is_missing_for_both() -> None:
    plan = plan_lookback(D[5], 2, archived=[D[1], D[3]], seen=[], last_day=None)
    assert plan.seen_from_archive == (D[3],)
    assert plan.missing == Incomplete(duplicates=(D[4],), ordering=(D[1], D[2], D[4]))


def test_a_day_a_run_found_empty_is_no_gap() -> None:
    plan = plan_lookback(D[5], 1, archived=[D[3]], seen=[D[3], D[4]], last_day=D[4])
    assert plan.missing.complete and plan.from_archive == ()


def test_days_before_the_archive_began_are_not_missing() -> None:
    first_day = plan_lookback(D[1], 3, archived=[], seen=[], last_day=None)
    assert first_day.missing.complete and first_day.from_archive == ()
    second_day = plan_lookback(D[2], 3, archived=[D[1]], seen=[], last_day=None)
    assert second_day.from_archive == (D[1],) and second_day.missing.complete


def test_what_the_ordering_state_lacked_stays_missing_until_it_is_rebuilt() -> None:
    plan = plan_lookback(D[6], 1, archived=[D[1], D[4], D[5]], seen=[D[4], D[5]], last_day=D[5], last_gaps=[D[1]])
    assert plan.from_archive == ()
    assert plan.missing == Incomplete(duplicates=(), ordering=(D[1],))


def test_a_partition_that_cannot_be_read_is_missing_for_the_rules_that_needed_it() -> None:
    plan = plan_lookback(D[5], 2, archived=[D[3], D[4]], seen=[D[3]], last_day=D[3])
    assert plan.seen_from_archive == (D[4],) and plan.order_from_archive == (D[4],)
    assert plan.with_unreadable([D[4]]) == Incomplete(duplicates=(D[4],), ordering=(D[4],))


def test_a_type_misses_only_the_days_of_its_own_window_and_ordering_only_if_it_has_one() -> None:
    missing = Incomplete(duplicates=(D[3], D[4]), ordering=(D[1],))
    assert missing.for_type(D[5], timedelta(hours=24), ordered=False) == Incomplete(duplicates=(D[4],))
    assert missing.for_type(D[5], timedelta(hours=48), ordered=True) == missing
    assert Incomplete.from_dict(missing.to_dict()) == missing
    assert Incomplete.from_dict(None).complete  # a report of an older version has none
    assert missing.describe() == (
        "duplicate checks miss the first copies of 2026-07-03, 2026-07-04; "
        "ordering checks miss the sequences of 2026-07-01"
    )

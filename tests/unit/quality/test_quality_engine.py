"""Where GX computes a run's metrics: in-process on pandas up to ``IN_PROCESS_ROWS`` envelopes, on Spark above."""

from __future__ import annotations

from contract_platform.quality.runner import IN_PROCESS, IN_PROCESS_ROWS, SPARK, choose_engine


def test_a_window_up_to_the_limit_is_judged_in_process_and_the_reason_gives_both_sizes():
    engine, why = choose_engine(IN_PROCESS_ROWS)
    assert engine == IN_PROCESS
    assert why.startswith(f"{IN_PROCESS_ROWS:,} envelopes, at most {IN_PROCESS_ROWS:,}") and "in-process" in why


def test_a_larger_window_stays_on_spark():
    engine, why = choose_engine(IN_PROCESS_ROWS + 1)
    assert engine == SPARK and f"over {IN_PROCESS_ROWS:,}" in why


def test_a_limit_of_zero_keeps_every_window_on_spark():
    assert choose_engine(1, limit=0)[0] == SPARK

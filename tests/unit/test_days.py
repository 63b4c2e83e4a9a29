"""Day ranges (contract_platform.days): one reading of a bound and one range check for jobs, CLI and DAGs;
one way of naming days in a sentence."""

from __future__ import annotations

from datetime import date

import pytest

from contract_platform.days import check_range, named_days, parse_day
from contract_platform.errors import UsageError


def test_a_bound_is_a_date_or_nothing() -> None:
    assert parse_day("2026-07-01") == date(2026, 7, 1)
    assert parse_day("") is None and parse_day(None) is None


@pytest.mark.parametrize("text", ["July", "2026-02-30", "2026/07/01", "x" * 10_000])
def test_a_bound_that_is_not_a_date_is_bad_input_naming_the_option_on_one_short_line(text: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_day(text, "--since")
    message = str(raised.value)
    assert message.startswith("--since ") and "YYYY-MM-DD" in message and len(message) < 120


def test_until_must_be_after_since_and_either_may_be_left_out() -> None:
    check_range(date(2026, 7, 1), date(2026, 7, 2))
    check_range(None, date(2026, 7, 2))
    check_range(date(2026, 7, 1), None)
    for until in (date(2026, 7, 1), date(2026, 6, 30)):
        with pytest.raises(UsageError, match="since <= day < until"):
            check_range(date(2026, 7, 1), until)


def test_days_are_named_in_order_with_consecutive_ones_as_one_range() -> None:
    year = [date(2025, 7, 1) + (date(2025, 7, 2) - date(2025, 7, 1)) * n for n in range(365)]
    assert named_days(["2026-07-05", date(2026, 7, 1), "2026-07-04", "2026-07-05"]) == (
        "2026-07-01, 2026-07-04, 2026-07-05"
    )
    assert named_days(year) == "2025-07-01 to 2026-06-30 (365 days)"
    assert named_days([]) == ""

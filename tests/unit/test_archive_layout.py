"""The archive's layout, one rule for the archiver and every reader (docs/design.md#archive-record)."""

from __future__ import annotations

from datetime import date

import pytest

from contract_platform.archive_layout import (
    GZIP_WEIGHT,
    file_work,
    is_archive_file,
    partition_day,
    partition_name,
)


def test_a_day_round_trips_through_its_partition_folder() -> None:
    day = date(2026, 7, 1)
    assert partition_name(day) == "date=2026-07-01"
    assert partition_day(partition_name(day)) == day
    assert partition_day("file:///archive/billing.events/date=2026-07-01/") == day  # a URI's last component


@pytest.mark.parametrize("name", ["date=", "date=yesterday", "date=2026-13-01", "Date=2026-07-01", "2026-07-01"])
def test_a_folder_that_names_no_day_is_no_partition(name: str) -> None:
    assert partition_day(name) is None


def test_only_json_lines_files_are_read_and_a_gzipped_byte_weighs_more() -> None:
    assert is_archive_file("h-1-2-000001.jsonl") and is_archive_file("x.jsonl.gz")
    assert not any(is_archive_file(n) for n in ("x.json", "x.JSONL", "x.jsonl.tmp", "x.gz"))
    assert file_work("x.jsonl", 1000) == 1000 and file_work("x.jsonl.gz", 1000) == 1000 * GZIP_WEIGHT

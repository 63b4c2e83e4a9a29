"""Incremental archive validation: a run for one day reads only that day's partitions, yet the
cross-record rules see across the boundary through the state the previous day's run kept."""

from __future__ import annotations

import copy
import json
import uuid
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from benchmarks.generate_archive import archive_record

from contract_platform.catalog import Catalog, load_catalog
from contract_platform.errors import UsageError
from contract_platform.evidence import Verdict
from contract_platform.evidence.figures import ArchiveValidationFigures
from contract_platform.store import SqlRegistry
from contract_platform.validation import Reason, ValidationReport, record_evidence
from contract_platform.validation.request import ValidationRequest
from spark_jobs import validate_archive as job

pytestmark = pytest.mark.spark

V1 = "billing.invoice-issued.v1"  # ordered by /metadata/partitionKey, sequence /payload/aggregateVersion
V2 = "billing.invoice-issued.v2"  # the same exchange and ordering
DAY1, DAY2, DAY3 = "2026-07-01", "2026-07-02", "2026-07-03"


def envelope(
    catalog: Catalog,
    key: str,
    sequence: int,
    message_id: str | None = None,
    amount: str = "10.00",
    message_type: str = V1,
) -> dict:
    contract = catalog.get(message_type)
    doc = copy.deepcopy(next(f.document for f in contract.fixtures if f.valid))
    doc["metadata"]["messageId"] = message_id or str(uuid.uuid4())
    doc["metadata"]["partitionKey"] = key
    doc["payload"]["aggregateVersion"] = sequence
    doc["payload"]["amount"] = amount
    return doc


def write_day(root: Path, catalog: Catalog, day: str, stamped: list[tuple[str, dict[str, Any]]]) -> None:
    folder = root / catalog.get(V1).transport.exchange / f"date={day}"
    folder.mkdir(parents=True)
    lines = [
        json.dumps(archive_record(catalog.get(doc["metadata"]["messageType"]), doc, f"{day}T{time}Z"))
        for time, doc in stamped
    ]
    (folder / "part-0000.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture()
def two_days(tmp_path: Path, catalog: Catalog) -> Path:
    root = tmp_path / "archive"
    first = envelope(catalog, "inv-1", 5, "msg-first")
    changed = envelope(catalog, "inv-3", 1, "msg-changed")
    write_day(
        root,
        catalog,
        DAY1,
        [("09:00:00.000", first), ("10:00:00.000", envelope(catalog, "inv-2", 1)), ("22:00:00.000", changed)],
    )
    write_day(
        root,
        catalog,
        DAY2,
        [
            ("01:00:00.000", first),  # the same message again: DUPLICATE of a day-one message
            ("02:00:00.000", envelope(catalog, "inv-1", 3)),  # below day one's 5 for inv-1: OUT_OF_ORDER
            ("03:00:00.000", envelope(catalog, "inv-2", 2)),  # in order across the boundary
            ("04:00:00.000", {**changed, "payload": {**changed["payload"], "amount": "99.00"}}),  # same id, new body
        ],
    )
    return root


def validate(spark, archive: Path, catalog_dir: Path, **options: Any) -> ValidationReport:
    """``run_validation`` with v1 taken as active (the catalogue deprecates it, which every record would count)."""
    return job.run_validation(
        spark, ValidationRequest(archive, catalog=catalog_dir, statuses={V1: "active"}, **options)
    )


def reasons(report: ValidationReport) -> dict[str, int]:
    return {str(reason): count for reason, count in report.by_reason.items() if count}


def test_a_day_two_run_reads_only_day_two_and_finds_copies_and_late_versions_of_day_one(
    spark, two_days: Path, catalog_dir: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    day1 = validate(
        spark,
        two_days,
        catalog_dir,
        since=date.fromisoformat(DAY1),
        until=date.fromisoformat(DAY2),
        state=state,
    )
    assert day1.totals.records == 3 and reasons(day1) == {}

    day2 = validate(
        spark,
        two_days,
        catalog_dir,
        since=date.fromisoformat(DAY2),
        until=date.fromisoformat("2026-07-03"),
        state=state,
        report=tmp_path / "day2.json",
        quarantine=tmp_path / "quarantine",
    )
    assert day2.totals.records == 4  # day two's messages only
    assert day2.input.files == 1
    assert reasons(day2) == {
        str(Reason.DUPLICATE): 1,
        str(Reason.OUT_OF_ORDER): 1,
        str(Reason.CONFLICTING_DUPLICATE): 1,
    }
    written = json.loads((tmp_path / "day2.json").read_text())
    assert written["interval"] == {
        "since": DAY2,
        "until": "2026-07-03",
        "partitions": 1,
        "lookback_days": 1,
        "state_from": DAY1,
        "rebuilt": [],
        "incomplete": {"duplicates": [], "ordering": []},
    }
    quarantined = [
        json.loads(line) for path in (tmp_path / "quarantine").glob("part-*") for line in path.read_text().splitlines()
    ]
    late = [r for r in quarantined if any(reason["code"] == str(Reason.OUT_OF_ORDER) for reason in r["reasons"])]
    assert len(late) == 1 and "lower than 5" in json.dumps(late[0]["reasons"])


def test_without_state_for_day_one_a_day_two_run_builds_it_from_day_ones_partition(
    spark, two_days: Path, catalog_dir: Path, tmp_path: Path
) -> None:
    state = tmp_path / "fresh-state"
    day2 = validate(spark, two_days, catalog_dir, since=date.fromisoformat(DAY2), state=state)
    assert day2.totals.records == 4 and day2.input.files == 1  # the counts are still day two's alone
    assert reasons(day2) == {
        str(Reason.DUPLICATE): 1,
        str(Reason.OUT_OF_ORDER): 1,
        str(Reason.CONFLICTING_DUPLICATE): 1,
    }
    assert day2.interval is not None and day2.interval.rebuilt == (date.fromisoformat(DAY1),)
    assert day2.interval.state_from is None and day2.incomplete.complete  # day one was all there was before


def test_a_day_outside_the_dedup_window_is_not_read_and_its_ordering_is_named_incomplete(
    spark, two_days: Path, catalog: Catalog, catalog_dir: Path, tmp_path: Path, capsys
) -> None:
    older = "2026-06-30"  # one day before day one: outside day two's 24 h window
    write_day(two_days, catalog, older, [("12:00:00.000", envelope(catalog, "inv-2", 9))])  # above day two's 2
    code = job.main(
        [
            str(two_days),
            "--catalog",
            str(catalog_dir),
            "--since",
            DAY2,
            "--state",
            str(tmp_path / "state"),
            "--status",
            f"{V1}=active",
            "--report",
            str(tmp_path / "day2.json"),
            "--no-fail-on-findings",
        ]
    )
    assert code == 0
    written = json.loads((tmp_path / "day2.json").read_text())
    assert written["interval"]["rebuilt"] == [DAY1]  # only the window's day was read
    assert written["interval"]["incomplete"] == {"duplicates": [], "ordering": [older]}
    # day one's copy and late version are found; inv-2's 9 of the older day was never read, so its 2 is no finding
    assert written["by_reason"][str(Reason.OUT_OF_ORDER)] == 1 and written["by_reason"][str(Reason.DUPLICATE)] == 1
    err = capsys.readouterr().err
    assert "incomplete, not clean" in err and f"ordering checks miss the sequences of {older}" in err
    # the ordering state day two kept lacks the older day, and says so to every run after it
    day3 = validate(
        spark,
        two_days,
        catalog_dir,
        since=date.fromisoformat(DAY3),
        until=date.fromisoformat("2026-07-04"),
        state=tmp_path / "state",
    )
    assert day3.interval is not None and day3.interval.state_from == date.fromisoformat(DAY2)
    assert day3.interval.rebuilt == () and day3.incomplete.duplicates == ()
    assert day3.incomplete.ordering == (date.fromisoformat(older),)


def test_a_lookback_day_with_neither_state_nor_partition_makes_both_checks_incomplete_until_it_is_run(
    spark, catalog: Catalog, catalog_copy: Path, tmp_path: Path
) -> None:
    root = tmp_path / "archive"
    first = envelope(catalog, "inv-1", 5, "msg-first")
    write_day(root, catalog, DAY1, [("20:00:00.000", first)])
    write_day(root, catalog, DAY3, [("02:00:00.000", first)])  # 30 h later; day two has no partition
    contract = catalog_copy / "billing" / "invoice-issued" / "v1" / "contract.yaml"
    contract.write_text(contract.read_text() + "validation: {dedupWindow: 48h}\n")
    d1, d2, d3 = (date.fromisoformat(day) for day in (DAY1, DAY2, DAY3))
    state = tmp_path / "state"

    gap = validate(spark, root, catalog_copy, since=d3, state=state)
    assert gap.interval is not None and gap.interval.rebuilt == (d1,)
    assert reasons(gap) == {str(Reason.DUPLICATE): 1}  # day one was read: within the 48 h window
    assert gap.incomplete.duplicates == (d2,) and gap.incomplete.ordering == (d2,)
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    with SqlRegistry.open(url) as registry:
        record_evidence(gap, load_catalog(catalog_copy), registry)
        recorded = registry.latest_evidence(V1, "archive_validation")
    assert recorded is not None and recorded.verdict is Verdict.UNKNOWN
    figures = ArchiveValidationFigures.of(recorded)
    assert figures.incomplete_duplicates == (DAY2,) and figures.incomplete_ordering == (DAY2,)

    validate(spark, root, catalog_copy, since=d1, until=d3, state=state)  # day two run: it had no traffic
    again = validate(spark, root, catalog_copy, since=d3, state=state)
    assert again.incomplete.complete and again.interval is not None and again.interval.rebuilt == ()
    assert reasons(again) == {str(Reason.DUPLICATE): 1}


def test_running_a_day_again_gives_the_same_findings(spark, two_days: Path, catalog_dir: Path, tmp_path: Path):
    state = tmp_path / "state"
    d1, d2 = date.fromisoformat(DAY1), date.fromisoformat(DAY2)
    validate(spark, two_days, catalog_dir, since=d1, until=d2, state=state)
    once = validate(spark, two_days, catalog_dir, since=d2, state=state)
    again = validate(spark, two_days, catalog_dir, since=d2, state=state)
    assert reasons(once) == reasons(again) and reasons(once)[str(Reason.OUT_OF_ORDER)] == 1


def test_the_whole_archive_at_once_finds_the_same_as_day_by_day(spark, two_days: Path, catalog_dir: Path) -> None:
    whole = validate(spark, two_days, catalog_dir)
    assert whole.totals.records == 7 and whole.interval is None
    assert reasons(whole) == {
        str(Reason.DUPLICATE): 1,
        str(Reason.OUT_OF_ORDER): 1,
        str(Reason.CONFLICTING_DUPLICATE): 1,
    }


def test_a_range_with_no_partitions_validates_nothing_and_a_reversed_one_is_bad_input(
    spark, two_days: Path, catalog_dir: Path, tmp_path: Path, capsys
) -> None:
    empty = validate(spark, two_days, catalog_dir, since=date.fromisoformat("2026-08-01"))
    assert empty.totals.records == 0 and empty.input.files == 0
    with pytest.raises(UsageError, match="not after"):
        validate(spark, two_days, catalog_dir, since=date.fromisoformat(DAY2), until=date.fromisoformat(DAY1))
    code = job.main([str(two_days), "--catalog", str(catalog_dir), "--since", "July"])
    assert code == 2 and "YYYY-MM-DD" in capsys.readouterr().err


def test_a_copy_30_hours_later_is_a_duplicate_within_a_48h_dedup_window_and_not_the_default(
    spark, catalog: Catalog, catalog_dir: Path, catalog_copy: Path, tmp_path: Path
) -> None:
    root = tmp_path / "archive"
    first = envelope(catalog, "inv-1", 1, "msg-30h")
    write_day(root, catalog, DAY1, [("20:00:00.000", first)])
    write_day(root, catalog, DAY2, [("12:00:00.000", envelope(catalog, "inv-2", 1))])
    write_day(root, catalog, DAY3, [("02:00:00.000", first)])  # 30 h after the first copy
    contract = catalog_copy / "billing" / "invoice-issued" / "v1" / "contract.yaml"
    contract.write_text(contract.read_text() + "validation: {dedupWindow: 48h}\n")
    d1, d3 = date.fromisoformat(DAY1), date.fromisoformat(DAY3)

    def day_three(catalogue: Path, state: Path) -> ValidationReport:
        validate(spark, root, catalogue, since=d1, until=d3, state=state)  # days one and two, kept in the state
        return validate(spark, root, catalogue, since=d3, state=state)

    default = day_three(catalog_dir, tmp_path / "state-24h")
    assert default.totals.records == 1 and reasons(default) == {}
    assert default.interval is not None and default.interval.lookback_days == 1
    wide = day_three(catalog_copy, tmp_path / "state-48h")
    assert reasons(wide) == {str(Reason.DUPLICATE): 1}
    assert wide.interval is not None and wide.interval.lookback_days == 2


def test_each_type_looks_back_its_own_dedup_window(
    spark, catalog: Catalog, catalog_dir: Path, catalog_copy: Path, tmp_path: Path
) -> None:
    root = tmp_path / "archive"
    first_v1 = envelope(catalog, "inv-1", 1, "msg-v1")
    first_v2 = envelope(catalog, "inv-1", 1, "msg-v2", message_type=V2)
    write_day(root, catalog, DAY1, [("20:00:00.000", first_v1), ("20:00:00.000", first_v2)])
    write_day(root, catalog, DAY2, [("12:00:00.000", envelope(catalog, "inv-2", 1))])
    write_day(root, catalog, DAY3, [("02:00:00.000", first_v1), ("02:00:00.000", first_v2)])  # both 30 h later
    contract = catalog_copy / "billing" / "invoice-issued" / "v1" / "contract.yaml"
    contract.write_text(contract.read_text() + "validation: {dedupWindow: 48h}\n")  # v2 keeps the default 24h
    d1, d3 = date.fromisoformat(DAY1), date.fromisoformat(DAY3)
    state = tmp_path / "state"
    validate(spark, root, catalog_copy, since=d1, until=d3, state=state)
    day_three = validate(spark, root, catalog_copy, since=d3, state=state)
    assert day_three.totals.records == 2 and day_three.interval is not None
    assert day_three.interval.lookback_days == 2  # the widest window decides the days read
    assert reasons(day_three) == {str(Reason.DUPLICATE): 1}
    duplicates = {name: figures.by_reason.get(Reason.DUPLICATE, 0) for name, figures in day_three.by_type.items()}
    assert duplicates == {V1: 1, V2: 0}

"""Incremental archive validation after archive retention deleted a partition and aged out the state behind it
(the shared session): the next day's run still finds a copy of the day before and a version lower than one only
the deleted day held, and says its cross-day checks are complete; a day run again finds what it found before."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.spark.test_incremental_validation import envelope, write_day

from contract_platform.archive_layout import validation_state_dir
from contract_platform.catalog import Catalog
from contract_platform.retention import apply_archive_retention
from contract_platform.store import SqlRegistry
from contract_platform.validation import Reason, ValidationReport
from contract_platform.validation.request import ValidationRequest
from spark_jobs import validate_archive as job

pytestmark = pytest.mark.spark

V1 = "billing.invoice-issued.v1"  # ordered by /metadata/partitionKey, sequence /payload/aggregateVersion
FIRST, SECOND, D1, D2, D3 = date(2026, 5, 1), date(2026, 5, 20), date(2026, 7, 1), date(2026, 7, 2), date(2026, 7, 3)
NOW = datetime(2026, 7, 2, 12, tzinfo=UTC)  # with a 1-day retention.archive: FIRST is past, D1 is not


def _one_day_archives(catalog: Catalog) -> Catalog:
    """The catalogue with every retention.archive at one day (what validation reads does not depend on it)."""
    shortened = {
        t: replace(c, retention=replace(c.retention, archive=timedelta(days=1))) for t, c in catalog.contracts.items()
    }
    return replace(catalog, contracts=shortened)


def _validate(spark: Any, root: Path, catalog_dir: Path, state: Path, since: date, until: date) -> ValidationReport:
    return job.run_validation(
        spark,
        ValidationRequest(root, catalog=catalog_dir, statuses={V1: "active"}, since=since, until=until, state=state),
    )


def _found(report: ValidationReport) -> dict[str, int]:
    return {str(reason): count for reason, count in report.by_reason.items() if count}


def test_validation_after_a_deletion_reads_the_state_and_stays_complete(
    spark: Any, catalog: Catalog, catalog_dir: Path, tmp_path: Path
) -> None:
    root = tmp_path / "archive"
    state = validation_state_dir(root, tmp_path / "data")
    b1 = envelope(catalog, "inv-2", 1, "msg-b1")
    b2 = envelope(catalog, "inv-2", 2, "msg-b2")
    write_day(root, catalog, FIRST.isoformat(), [("09:00:00.000", envelope(catalog, "inv-1", 5, "msg-a5"))])
    write_day(root, catalog, SECOND.isoformat(), [("09:00:00.000", envelope(catalog, "inv-3", 1))])
    write_day(root, catalog, D1.isoformat(), [("10:00:00.000", b1), ("11:00:00.000", envelope(catalog, "inv-1", 3))])
    write_day(root, catalog, D2.isoformat(), [("09:00:00.000", b1), ("10:00:00.000", b2)])  # b1 again: a copy
    write_day(
        root,
        catalog,
        D3.isoformat(),
        [("02:00:00.000", envelope(catalog, "inv-1", 4)), ("08:00:00.000", b2)],  # 4 < FIRST's 5; b2 again
    )
    # every day from FIRST to D1 in two runs: a run keeps the ordering state of its last day (SECOND, then D1)
    assert _found(_validate(spark, root, catalog_dir, state, FIRST, SECOND + timedelta(days=1))) == {}
    seeded = _validate(spark, root, catalog_dir, state, SECOND + timedelta(days=1), D2)
    assert seeded.totals.records == 2 and _found(seeded) == {str(Reason.OUT_OF_ORDER): 1}  # D1's 3 after 5
    day2 = _validate(spark, root, catalog_dir, state, D2, D3)
    assert _found(day2) == {str(Reason.DUPLICATE): 1}

    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as registry:
        run = apply_archive_retention(
            _one_day_archives(catalog), root, now=NOW, holds={}, registry=registry, validation_state=state
        )

    assert [(p.day, p.records) for p in run.deleted] == [(FIRST, 1), (SECOND, 1)]
    assert not (root / "billing.events" / f"date={FIRST}").exists()
    # the oldest partition left is D1: no run of it reads further back than 30 days (2026-06-01), nor does any
    # past the archive's window; the state before SECOND (the last ordering state before then: the base) goes
    assert run.pruned_state == tuple(FIRST + timedelta(days=n) for n in range(19))
    assert not (state / "seen" / f"date={FIRST}").exists() and (state / "last" / f"date={SECOND}").is_dir()

    rerun = _validate(spark, root, catalog_dir, state, D1, D2)  # starts ordering from SECOND's cumulative state
    assert _found(rerun) == {str(Reason.OUT_OF_ORDER): 1}
    assert rerun.interval is not None and rerun.interval.state_from == SECOND
    assert not rerun.incomplete.duplicates and not rerun.incomplete.ordering

    day3 = _validate(spark, root, catalog_dir, state, D3, D3 + timedelta(days=1))

    assert day3.totals.records == 2
    assert _found(day3) == {str(Reason.DUPLICATE): 1, str(Reason.OUT_OF_ORDER): 1}  # FIRST's 5 kept by the state
    assert day3.interval is not None
    assert (day3.interval.state_from, day3.interval.rebuilt) == (D2, ())
    assert not day3.incomplete.duplicates and not day3.incomplete.ordering
    again = _validate(spark, root, catalog_dir, state, D2, D3)
    assert _found(again) == _found(day2) and not again.incomplete.duplicates and not again.incomplete.ordering

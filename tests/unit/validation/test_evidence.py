"""Archive validation as registry evidence: one record per catalogued messageType, pass/fail on its target."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from contract_platform.catalog import Catalog
from contract_platform.evidence import Verdict
from contract_platform.evidence.figures import ArchiveValidationFigures
from contract_platform.store import SqlRegistry
from contract_platform.validation import Figures, Group, Reason, ValidationReport, record_evidence
from contract_platform.validation.lookback import Incomplete
from contract_platform.validation.report import InputFigures, Interval


def test_one_evidence_record_per_known_type_with_its_figures(catalog: Catalog, tmp_path: Path):
    groups = [
        Group("order.order-created.v1", None, 9_999, 0, 1782900000000000, 1782900900000000),
        Group("order.order-created.v1", Reason.PAYLOAD_INVALID.rank, 1, 0, 1782900100000000, 1782900100000000),
        Group("quote.quote-approved.v1", None, 98, 0, None, None),
        Group("quote.quote-approved.v1", Reason.HEADER_MISMATCH.rank, 2, 0, None, None),
        Group("billing.invoice-voided.v1", Reason.UNKNOWN_TYPE.rank, 5, 0, None, None),
        Group(None, Reason.MALFORMED.rank, 5, 0, None, None),
    ]
    report = ValidationReport("/a", "/c", "sha256:0", Figures.from_groups(groups), InputFigures(), 1.0)
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    with SqlRegistry.open(url) as registry:
        added = record_evidence(report, catalog, registry, reference="/reports/run.json", run_id="run-1")
    assert sorted(e.message_type for e in added) == ["order.order-created.v1", "quote.quote-approved.v1"]
    with SqlRegistry.open(url) as registry:
        order = registry.latest_evidence("order.order-created.v1", "archive_validation")
        quote = registry.latest_evidence("quote.quote-approved.v1", "archive_validation")
    assert order is not None and quote is not None
    assert order.passed and not quote.passed  # 1/10000 <= 0.001 target; 2/100 is not
    assert order.contract_version == "1.2.0" and order.reference == "/reports/run.json" and order.run_id == "run-1"
    assert order.figures["total"] == 10_000 and order.figures["invalid"] == 1
    assert order.figures["by_reason"] == {"PAYLOAD_INVALID": 1}
    assert order.figures["window"]["first_received_at"] == "2026-07-01T10:00:00.000000Z"


def test_incomplete_cross_day_checks_make_a_clean_run_unknown_naming_the_days_each_type_needed(
    catalog: Catalog, tmp_path: Path
):
    groups = [
        Group("order.order-created.v1", None, 1_000, 0, None, None),  # ordered by partitionKey, 24 h dedup window
        Group("quote.quote-approved.v1", None, 98, 0, None, None),  # no ordering
        Group("quote.quote-approved.v1", Reason.HEADER_MISMATCH.rank, 2, 0, None, None),  # above its target
    ]
    missing = Incomplete(duplicates=(date(2026, 7, 8), date(2026, 7, 9)), ordering=(date(2026, 7, 1),))
    interval = Interval(date(2026, 7, 10), date(2026, 7, 11), partitions=1, lookback_days=2, incomplete=missing)
    report = ValidationReport(
        "/a", "/c", "sha256:0", Figures.from_groups(groups), InputFigures(), 1.0, interval=interval
    )
    assert report.to_dict()["interval"]["incomplete"] == {
        "duplicates": ["2026-07-08", "2026-07-09"],
        "ordering": ["2026-07-01"],
    }
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    with SqlRegistry.open(url) as registry:
        record_evidence(report, catalog, registry)
        order = registry.latest_evidence("order.order-created.v1", "archive_validation")
        quote = registry.latest_evidence("quote.quote-approved.v1", "archive_validation")
    assert order is not None and quote is not None
    assert order.verdict is Verdict.UNKNOWN and not order.passed  # within target, but not everything was compared
    figures = ArchiveValidationFigures.of(order)
    assert figures.incomplete_duplicates == ("2026-07-09",)  # its 24 h window reaches one day back
    assert figures.incomplete_ordering == ("2026-07-01",)
    assert quote.verdict is Verdict.FAIL  # above target whatever was missed
    assert ArchiveValidationFigures.of(quote).incomplete_ordering == ()  # no ordering to miss
    assert "incomplete" not in order.figures["interval"]  # the figures carry it per type


def test_evidence_of_older_versions_reads_as_complete():
    old = ArchiveValidationFigures.from_json({"invalid": 0, "total": 10, "interval": {"since": "2026-07-01"}})
    assert old.complete and old.incomplete_duplicates == () and old.incomplete_ordering == ()
    odd = ArchiveValidationFigures.from_json({"invalid": 0, "total": 10, "incomplete_ordering": ["2026-07-01", 3]})
    assert not odd.complete and odd.incomplete_ordering == ("2026-07-01",)

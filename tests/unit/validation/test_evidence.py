"""Archive validation as registry evidence: one record per catalogued messageType, pass/fail on its target."""

from __future__ import annotations

from pathlib import Path

from contract_platform.catalog import Catalog
from contract_platform.store import Registry
from contract_platform.validation import Figures, Group, Reason, ValidationReport, record_evidence
from contract_platform.validation.report import InputFigures


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
    with Registry.open(url) as registry:
        added = record_evidence(report, catalog, registry, reference="/reports/run.json", run_id="run-1")
    assert sorted(e.message_type for e in added) == ["order.order-created.v1", "quote.quote-approved.v1"]
    with Registry.open(url) as registry:
        order = registry.latest_evidence("order.order-created.v1", "archive_validation")
        quote = registry.latest_evidence("quote.quote-approved.v1", "archive_validation")
    assert order is not None and quote is not None
    assert order.passed and not quote.passed  # 1/10000 <= 0.001 target; 2/100 is not
    assert order.contract_version == "1.2.0" and order.reference == "/reports/run.json" and order.run_id == "run-1"
    assert order.figures["total"] == 10_000 and order.figures["invalid"] == 1
    assert order.figures["by_reason"] == {"PAYLOAD_INVALID": 1}
    assert order.figures["window"]["first_received_at"] == "2026-07-01T10:00:00.000000Z"

"""The quality report as data and as registry evidence, read back by the lifecycle guard (no Spark)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from contract_platform.catalog import Catalog
from contract_platform.evidence import EvidenceKind, Verdict
from contract_platform.lifecycle import GuardContext
from contract_platform.lifecycle.guards import guard_envelope_quality
from contract_platform.quality import ExpectationResult, QualityReport, TypeQuality, record_quality
from contract_platform.store import SqlRegistry

QUOTE = "quote.quote-approved.v1"
GENERATE = "billing.generate-invoice.v1"
DOCS = "/data/gx/uncommitted/data_docs/local_site/index.html"


def result(
    expectation: str, unexpected: int = 0, *, judged: int = 40, mostly: float = 1.0, **changes
) -> ExpectationResult:  # type: ignore[no-untyped-def]
    observed = (judged - unexpected) / judged
    values = {
        "id": expectation,
        "gx_type": "expect_column_values_to_be_in_set",
        "mostly": mostly,
        "success": observed >= mostly,
        "judged": judged,
        "unexpected": unexpected,
        "observed": observed,
        "samples": tuple(f"m-{i:02d}" for i in range(min(unexpected, 12))),
    }
    return ExpectationResult(**{**values, **changes})


@pytest.fixture()
def report() -> QualityReport:
    return QualityReport(
        types=(
            TypeQuality(
                QUOTE,
                "1.1.0",
                40,
                (
                    result("producer-is-owner-service", 12),
                    result("routing-key-single-value", 2, mostly=0.9),
                    result("message-id-unique"),
                ),
                skipped={"partition-key-cardinality": "needs at least 20 envelopes in the window, found 8"},
            ),
            TypeQuality(GENERATE, "1.0.0", 40, (result("message-id-unique"),)),
            TypeQuality("marketing.campaign-sent.v1", "1.0.0", 3, (result("message-id-unique"),)),
        ),
        data_docs=DOCS,
        gx_root="/data/gx",
        unassigned={"(none)": 1},
    )


@pytest.fixture()
def registry(tmp_path: Path) -> Iterator[SqlRegistry]:
    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as opened:
        yield opened


def test_verdicts_and_exit_code(report: QualityReport):
    quote = report.of(QUOTE)
    assert quote.failed == ["producer-is-owner-service"]  # 2 of 40 is within mostly 0.9
    assert quote.verdict is Verdict.FAIL and report.of(GENERATE).verdict is Verdict.PASS
    assert (report.success, report.exit_code) == (False, 1)
    broken = TypeQuality(GENERATE, "1.0.0", 5, (result("message-id-unique", success=False, error="metric failed"),))
    assert broken.verdict is Verdict.UNKNOWN  # could not be evaluated: never a pass
    assert QualityReport((), None, "/gx").exit_code == 0


def test_the_report_round_trips_through_json(report: QualityReport):
    assert QualityReport.from_dict(report.to_dict()) == report


def test_record_quality_adds_one_evidence_per_catalogued_type(report: QualityReport, catalog: Catalog, registry):
    added = record_quality(report, catalog, registry, run_id="run-1")
    assert [(r.message_type, str(r.verdict)) for r in added] == [(QUOTE, "fail"), (GENERATE, "pass")]
    evidence = registry.latest_evidence(QUOTE, EvidenceKind.ENVELOPE_QUALITY)
    assert (evidence.contract_version, evidence.reference, evidence.run_id) == ("1.1.0", DOCS, "run-1")
    figures = evidence.figures
    assert {"evaluated", "failed", "failed_expectations", "unexpected", "samples", "rows"} <= set(figures)
    assert (figures["evaluated"], figures["failed"], figures["rows"]) == (3, 1, 40)
    assert figures["failed_expectations"] == ["producer-is-owner-service"]
    assert figures["unexpected"] == {
        "producer-is-owner-service": 12,
        "routing-key-single-value": 2,
        "message-id-unique": 0,
    }
    assert figures["samples"]["producer-is-owner-service"] == [f"m-{i:02d}" for i in range(10)]  # at most 10
    assert figures["skipped"] == {"partition-key-cardinality": "needs at least 20 envelopes in the window, found 8"}


def test_the_guard_names_the_failed_expectations_of_the_latest_evidence(report: QualityReport, catalog, registry):
    record_quality(report, catalog, registry)
    ctx = GuardContext(catalog.contracts[QUOTE], registry)
    [reason] = guard_envelope_quality(ctx)
    assert "producer-is-owner-service not met" in reason and DOCS in reason
    assert guard_envelope_quality(GuardContext(catalog.contracts[GENERATE], registry)) == []

    fixed = TypeQuality(QUOTE, "1.1.0", 40, (result("producer-is-owner-service"),))
    record_quality(QualityReport((fixed,), DOCS, "/data/gx"), catalog, registry)
    assert guard_envelope_quality(GuardContext(catalog.contracts[QUOTE], registry)) == []  # the latest counts

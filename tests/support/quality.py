"""An envelope quality report with one expectation of each outcome, for the results page's tests."""

from __future__ import annotations

from contract_platform.quality.report import ExpectationResult, QualityReport, TypeQuality


def quality_report(data_docs: str | None, gx_root: str, samples: tuple[str, ...]) -> QualityReport:
    """order.order-created.v1 over 500 envelopes: one expectation met, one missed (12 rows, with ``samples`` of
    their messageIds), one that could not be evaluated (a column missing), one skipped; 3 rows unassigned."""
    quality = TypeQuality(
        message_type="order.order-created.v1",
        contract_version="1.2.0",
        rows=500,
        results=(
            ExpectationResult("message-id-unique", "expect_column_values_to_be_unique", 1.0, True, 500, 0, 1.0),
            ExpectationResult(
                "published-after-occurred",
                "expect_column_pair_values_a_to_be_greater_than_b",
                0.999,
                False,
                500,
                12,
                0.976,
                samples=samples,
            ),
            ExpectationResult(
                "producer-is-owner-service",
                "expect_column_values_to_be_in_set",
                1.0,
                False,
                0,
                0,
                None,
                error="column producer missing",
            ),
        ),
        skipped={"tenant-id-present": "the contract does not require tenancy"},
        suite="envelope_quality.order.order-created.v1",
    )
    return QualityReport(types=(quality,), data_docs=data_docs, gx_root=gx_root, unassigned={"(none)": 3})

"""One rule decides when findings fail ``contractctl check``, with or without replay (docs/consumer-impact.md)."""

from __future__ import annotations

import pytest

from contract_platform.checks import CheckReport
from contract_platform.lint import Finding, RuleId


def report_with(rule: RuleId) -> CheckReport:
    return CheckReport(contracts=1, findings=[Finding("contract.yaml", "/consumers/0", rule, "example finding")])


@pytest.mark.parametrize(
    ("rule", "plain", "strict"),
    [
        (RuleId.CONSUMER_READS_EVERYTHING, True, True),  # info: worth knowing, never fails
        (RuleId.ENUM_UNKNOWN_POLICY, True, False),  # warning: fails only with --strict
        (RuleId.CONSUMER_READS, False, False),  # error: always fails
    ],
)
def test_findings_fail_a_check_by_severity_alone(rule: RuleId, plain: bool, strict: bool) -> None:
    report = report_with(rule)
    assert report.lint_ok() is plain and report.ok() is plain
    assert report.lint_ok(strict=True) is strict and report.ok(strict=True) is strict

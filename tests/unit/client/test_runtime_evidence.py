"""Runtime evidence: the guards' counts reach the registry as ``runtime_validation`` evidence through a reporter the
service never waits for, and a rejection rate over ``validation.invalidRateTarget`` refuses the step to active."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from contract_platform.catalog.model import Status
from contract_platform.client.runtime import EvidenceReporter, RuntimeCounters, RuntimeReport, registry_sink
from contract_platform.evidence import EvidenceKind, Verdict
from contract_platform.evidence.figures import RuntimeValidationFigures
from contract_platform.lifecycle import GuardContext, check_step
from contract_platform.store import SqlRegistry

INVOICE_V1, INVOICE_V2 = "billing.invoice-issued.v1", "billing.invoice-issued.v2"


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[SqlRegistry]:
    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as opened:
        yield opened


def consumed(counters: RuntimeCounters, *, valid: int, rejected: int, migrated: int = 0) -> None:
    for _ in range(valid):
        counters.valid(INVOICE_V2)
    for _ in range(rejected):
        counters.rejected(INVOICE_V2, "PAYLOAD_INVALID")
    for _ in range(migrated):
        counters.valid(INVOICE_V1)
        counters.migrated(INVOICE_V1, INVOICE_V2)


def test_a_period_of_counts_becomes_evidence_per_message_type(every_version, registry):
    counters = RuntimeCounters(every_version, service="accounting-service", side="consume")
    consumed(counters, valid=997, rejected=3, migrated=40)
    counters.business_rejected(INVOICE_V2)
    counters.rejected("shipping.parcel-sent.v1", "UNKNOWN_TYPE")  # no contract: not evidence of any

    sent = EvidenceReporter([counters], registry_sink(registry, every_version)).flush()

    record = registry.latest_evidence(INVOICE_V2, EvidenceKind.RUNTIME_VALIDATION)
    older = registry.latest_evidence(INVOICE_V1, EvidenceKind.RUNTIME_VALIDATION)
    figures = RuntimeValidationFigures.of(record)
    assert sent == 1
    assert (record.verdict, record.contract_version) == (Verdict.FAIL, "2.0.0")  # 0.3% > 0.1%
    assert (figures.service, figures.side, figures.checked, figures.rejected) == (
        "accounting-service",
        "consume",
        1000,
        3,
    )
    assert (figures.by_reason, figures.business_rejected, figures.invalid_rate_target) == (
        {"PAYLOAD_INVALID": 3},
        1,
        0.001,
    )
    assert RuntimeValidationFigures.of(older).migrated_to == {INVOICE_V2: 40}
    assert registry.latest_evidence("shipping.parcel-sent.v1", EvidenceKind.RUNTIME_VALIDATION) is None


def test_a_rejection_rate_over_target_refuses_the_step_to_active(every_version, registry):
    contract = every_version.contract(INVOICE_V2)
    over = RuntimeCounters(every_version, service="accounting-service", side="consume")
    consumed(over, valid=990, rejected=10)
    EvidenceReporter([over], registry_sink(registry, every_version)).flush()

    reasons = check_step(Status.EXPERIMENTAL, Status.ACTIVE, GuardContext(contract, registry))

    runtime = [reason for reason in reasons if reason.startswith("runtime rejection rate")]
    assert runtime == [
        "runtime rejection rate 1.000% (10 of 1000 messages judged by services' guards in the last 7 days; "
        "accounting-service (consume): 10) is above the target 0.100%: the dead-letter queues hold the rejected "
        "messages with their x-reject-* headers (docs/service-client.md#dead-letters)"
    ]


def test_a_rate_within_target_or_no_runtime_evidence_at_all_blocks_nothing(every_version, registry):
    contract = every_version.contract(INVOICE_V2)
    context = GuardContext(contract, registry)
    assert not [r for r in check_step(Status.EXPERIMENTAL, Status.ACTIVE, context) if "runtime" in r]

    within = RuntimeCounters(every_version, service="billing-service", side="publish")
    consumed(within, valid=9999, rejected=1)
    EvidenceReporter([within], registry_sink(registry, every_version)).flush()

    assert not [r for r in check_step(Status.EXPERIMENTAL, Status.ACTIVE, context) if "runtime" in r]


def test_a_registry_that_is_down_never_reaches_the_service_and_what_is_dropped_is_counted(every_version, registry):
    counters = RuntimeCounters(every_version, service="accounting-service", side="consume")
    down = True
    delivered: list[RuntimeReport] = []
    sink = registry_sink(registry, every_version)

    def flaky(report: RuntimeReport) -> None:
        if down:
            raise ConnectionError("registry unreachable")
        delivered.append(report)
        sink(report)

    reporter = EvidenceReporter([counters], flaky, max_pending=3)
    for period in range(4):  # three periods wait while the registry is down; a fourth pushes out the oldest
        consumed(counters, valid=10 * (period + 1), rejected=0)
        assert reporter.flush() == 0
    down = False
    consumed(counters, valid=1, rejected=0)
    sent = reporter.flush()

    assert (sent, reporter.dropped_periods, reporter.dropped_messages, reporter.failures) == (4, 1, 10, 4)
    assert [sum(t.checked for t in r.tallies.values()) for r in delivered] == [20, 30, 40, 1]
    assert delivered[0].dropped == 10 and delivered[1].dropped == 0  # reported once, with the next that got through
    assert RuntimeValidationFigures.of(registry.evidence(INVOICE_V2, EvidenceKind.RUNTIME_VALIDATION)[-1]).dropped == 10


def test_the_reporter_thread_sends_the_last_period_when_it_stops(every_version, registry):
    counters = RuntimeCounters(every_version, service="accounting-service", side="consume")
    reporter = EvidenceReporter([counters], registry_sink(registry, every_version), interval=3600).start()
    consumed(counters, valid=5, rejected=0)

    reporter.stop()

    record = registry.latest_evidence(INVOICE_V2, EvidenceKind.RUNTIME_VALIDATION)
    figures = RuntimeValidationFigures.of(record)
    assert (record.verdict, figures.checked, figures.valid) == (Verdict.PASS, 5, 5)
    assert datetime.fromisoformat(figures.until.replace("Z", "+00:00")) <= datetime.now(UTC)


def test_stopping_once_the_registry_is_back_sends_every_waiting_period_and_drops_none(every_version, registry):
    counters = RuntimeCounters(every_version, service="accounting-service", side="consume")
    down = True
    delivered: list[RuntimeReport] = []

    def flaky(report: RuntimeReport) -> None:
        if down:
            raise ConnectionError("registry unreachable")
        delivered.append(report)

    reporter = EvidenceReporter([counters], flaky, interval=3600, max_pending=3)
    for period in range(3):  # the queue fills while the registry is down
        consumed(counters, valid=10 * (period + 1), rejected=0)
        reporter.flush()
    reporter.start()
    down = False  # the registry comes back
    consumed(counters, valid=1, rejected=0)

    reporter.stop()  # the last period, with the queue still full

    assert [sum(t.checked for t in r.tallies.values()) for r in delivered] == [10, 20, 30, 1]
    assert (reporter.dropped_periods, reporter.dropped_messages) == (0, 0)
    assert [r.dropped for r in delivered] == [0, 0, 0, 0]

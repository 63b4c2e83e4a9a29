"""A registry store as the platform's DAGs would leave it, for the UI tests (tests/airflow/test_ui_api.py and
tests/e2e/test_ui_browser.py).

Every contract of the real catalogue is registered by a ``contract_change`` run and walked to its
declared status, except ``order.order-created.v1``: its step to *active* was refused (invalid rate
above target), so it is the one declared/effective mismatch. Archive validation, envelope quality,
migration parity and retirement audit evidence carry figures; queue observations show v1's
consumers moving to v2. ``record_readers_audit`` adds a retirement audit whose ``readers`` check saw
the reader sessions and coverage gaps a test names.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from contract_platform.catalog.model import Contract, Status
from contract_platform.evidence.records import CoverageGap, CoverageSegment, QueueCounters, ReaderSession
from contract_platform.retirement import ReaderEvidence, VersionQueue, check_readers
from contract_platform.retirement.model import AuditResult
from contract_platform.retirement.report import record_audit
from contract_platform.store import Registry

CHANGE_DAG = "contract_change"
MISMATCHED = "order.order-created.v1"
MIGRATED_FROM, MIGRATED_TO = "billing.invoice-issued.v1", "billing.invoice-issued.v2"
VALIDATION_RUN = "scheduled__2026-11-19T00:00:00+00:00"
VERSIONS = {
    "billing.generate-invoice.v1": ("1.0.0", Status.ACTIVE),
    "billing.invoice-issued.v1": ("1.3.0", Status.DEPRECATED),
    "billing.invoice-issued.v2": ("2.0.0", Status.ACTIVE),
    "order.create-order.v1": ("1.0.0", Status.ACTIVE),
    "order.order-created.v1": ("1.2.0", Status.EXPERIMENTAL),
    "quote.quote-approved.v1": ("1.1.0", Status.ACTIVE),
}
RATES = [0.0004, 0.0006, 0.0009, 0.0021, 0.0035]  # order-created: the last ones above its 0.1% target


@dataclass(frozen=True)
class Seeded:
    run_id: str  # the contract_change run that applied every transition
    now: datetime


def seed_registry(url: str, run_id: str) -> Seeded:
    now = datetime.now(UTC).replace(microsecond=0)
    actor = f"dag:{CHANGE_DAG}"
    with Registry.open(url) as registry:
        for message_type, (version, target) in VERSIONS.items():
            state = registry.register(message_type, version, actor=actor, run_id=run_id)
            for status in Status:
                if state.status.rank >= target.rank:
                    break
                if status.rank == state.status.rank + 1:
                    state = registry.apply_transition(
                        message_type,
                        expected=state,
                        to=status,
                        actor=actor,
                        reason=f"guards passed for {status}",
                        run_id=run_id,
                    )
        registry.record_refusal(
            MISMATCHED,
            from_status=Status.EXPERIMENTAL,
            to_status=Status.ACTIVE,
            reasons=[
                "invalid rate 0.350% (35 of 10000 archived messages in the last 7 days) is above the target 0.100%"
            ],
            actor=actor,
            run_id=run_id,
        )
        for days_ago, rate in zip(range(len(RATES), 0, -1), RATES, strict=True):
            total = 10_000
            invalid = round(rate * total)
            registry.add_evidence(
                MISMATCHED,
                contract_version="1.2.0",
                kind="archive_validation",
                verdict="pass" if rate <= 0.001 else "fail",
                figures={
                    "total": total,
                    "invalid": invalid,
                    "invalid_rate": invalid / total,
                    "invalid_rate_target": 0.001,
                },
                run_id=VALIDATION_RUN if days_ago == 1 else f"scheduled__day-{days_ago}",
                collected_at=now - timedelta(days=days_ago),
            )
        registry.add_evidence(
            MISMATCHED,
            contract_version="1.2.0",
            kind="envelope_quality",
            verdict="fail",
            figures={"evaluated": 12, "failed_expectations": ["publishedAt not before occurredAt"]},
            run_id="scheduled__2026-11-19T01:00:00+00:00",
            collected_at=now - timedelta(hours=20),
        )
        registry.add_evidence(
            "quote.quote-approved.v1",
            contract_version="1.1.0",
            kind="archive_validation",
            verdict="pass",
            figures={"total": 5200, "invalid": 0, "invalid_rate": 0.0, "invalid_rate_target": 0.001},
            run_id=VALIDATION_RUN,
            collected_at=now - timedelta(days=1),
        )
        registry.add_evidence(
            MIGRATED_FROM,
            contract_version="1.3.0",
            kind="migration_parity",
            verdict="pass",
            figures={"mode": "bridge", "v1_messages": 4200, "missing_in_v2": 0, "mismatched": 0, "max_lag_ms": 180},
            collected_at=now - timedelta(days=2),
        )
        registry.add_evidence(
            MIGRATED_FROM,
            contract_version="1.3.0",
            kind="retirement_audit",
            verdict="fail",
            figures={"failed_checks": ["no_consumers"], "consumers": 1},
            collected_at=now - timedelta(hours=6),
        )
        for days_ago, old, new in ((6, 2, 0), (4, 2, 1), (2, 1, 2), (0, 1, 2)):
            at = now - timedelta(days=days_ago, minutes=5)
            for service, count in (("accounting-service", min(old, 1)), ("notification-service", old - min(old, 1))):
                registry.record_observation(
                    MIGRATED_FROM,
                    f"{service}.{MIGRATED_FROM}",
                    consumers=count,
                    ready=0,
                    unacked=0,
                    source="management",
                    observed_at=at,
                )
            registry.record_observation(
                MIGRATED_TO,
                f"accounting-service.{MIGRATED_TO}",
                consumers=new,
                ready=0,
                unacked=0,
                source="management",
                observed_at=at,
            )
    return Seeded(run_id=run_id, now=now)


# -- a retirement audit with a readers check --------------------------------------------------------


@dataclass(frozen=True)
class ReaderSeed:
    """One consumer the broker activity recorder saw on a queue: ``attached``/``detached`` None as recorded."""

    queue: str
    connection: str | None
    attached: datetime | None
    detached: datetime | None
    consumer_tag: str = "amq.ctag-reader"
    peer_host: str | None = "10.1.2.3"
    user: str | None = "ledger"


def record_readers_audit(
    registry: Registry,
    contract: Contract,
    now: datetime,
    *,
    queues: tuple[str, ...],
    readers: tuple[ReaderSeed, ...] = (),
    gaps: tuple[tuple[datetime, datetime, str], ...] = (),
    audits: tuple[int, ...] = (8, 4, 0),
) -> None:
    """A ``retirement_audit`` as the audit records it, holding only the ``readers`` check, judged by the audit's
    own ``check_readers`` over what the recorder would have stored: coverage for 30 days but ``gaps``, the
    ``readers``' sessions, and unmoved delivery counters of every queue at audits ``audits`` days ago."""
    since = now - timedelta(days=30)
    segments, cursor = [], since
    for index, (start, end, reason) in enumerate(sorted(gaps)):
        segments.append(CoverageSegment(f"seg-{index}", cursor, cursor, start, start, reason))
        cursor = end
    segments.append(CoverageSegment(f"seg-{len(gaps)}", cursor, cursor, now))
    sessions = [
        ReaderSession(
            vhost="/",
            queue=r.queue,
            consumer_tag=r.consumer_tag,
            channel="<rabbit@broker.1.2>",
            attached_at=r.attached,
            detached_at=r.detached,
            connection_name=r.connection,
            peer_host=r.peer_host,
            user=r.user,
        )
        for r in readers
    ]
    counters = [
        QueueCounters(contract.message_type, "/", queue, now - timedelta(days=age), True, 0, 0, 0, 0)
        for age in audits
        for queue in queues
    ]
    evidence = ReaderEvidence(since, segments, [CoverageGap(*gap) for gap in gaps], sessions, [], counters)
    check = check_readers(contract, [VersionQueue("/", q, q) for q in queues], evidence, now=now)
    result = AuditResult(contract.message_type, contract.version, now, (check,), run_id="scheduled__readers")
    record_audit(result, registry)

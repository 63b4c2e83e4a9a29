"""One small function per lifecycle guard (docs/design.md#lifecycle-and-guards): ``guard(ctx) -> reasons``; no reasons = pass.

Guards read evidence only through ``GuardContext``, which remembers which evidence they consulted
so the applied transition can say what it rested on. Each reason is a sentence that says what is
missing or wrong and what to run next. ``states.TRANSITIONS`` says which guards guard which step.

Catalogue checks (lint, fixtures, topology, compatibility, migration spec) count only for the
contract's current ``version``; traffic evidence (archive validation, envelope quality, migration
parity, retirement audit) is about the message type on the wire, whatever version produced it.
Migration parity is recorded under the older message type (the one being superseded).

Figures are read typed (``contract_platform.evidence.figures``: ``XFigures.of(record)``), never by
string lookups into the stored JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

from contract_platform.catalog.model import Contract, Status
from contract_platform.days import named_days
from contract_platform.durations import format_duration
from contract_platform.evidence import EvidenceKind, Registry, Verdict
from contract_platform.evidence.figures import (
    ArchiveValidationFigures,
    EnvelopeQualityFigures,
    MigrationParityFigures,
    RetirementAuditFigures,
    RuntimeValidationFigures,
)
from contract_platform.evidence.records import EvidenceRecord, VersionState
from contract_platform.evidence.runtime import runtime_window

__all__ = [
    "Guard",
    "GuardContext",
    "guard_archive_validation",
    "guard_compatible",
    "guard_envelope_quality",
    "guard_fixtures_pass",
    "guard_lint_clean",
    "guard_migration_running",
    "guard_no_hold",
    "guard_parity_verified",
    "guard_retirement_audit_fresh",
    "guard_runtime_validation",
    "guard_successor_active",
    "guard_sunset_set",
    "guard_topology_provisioned",
]

_MANY = 10_000  # "every record in the window": far more than one contract collects in a window


@dataclass(frozen=True)
class GuardContext:
    """The contract being judged, where evidence comes from, and the moment of judgement (aware UTC)."""

    contract: Contract
    registry: Registry  # the guards only read: effective status and evidence
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    consulted: list[int] = field(default_factory=list, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.now.tzinfo is None:
            raise ValueError(f"GuardContext.now is naive ({self.now.isoformat()}): pass an aware UTC datetime")

    @property
    def today(self) -> date:
        return self.now.astimezone(UTC).date()

    def fresh(self, contract: Contract | None = None) -> GuardContext:
        """The same context with nothing consulted yet (one per step judged)."""
        return replace(self, contract=contract or self.contract, consulted=[])

    def latest(self, kind: EvidenceKind, *, this_version: bool = False) -> EvidenceRecord | None:
        version = self.contract.version if this_version else None
        record = self.registry.latest_evidence(self.contract.message_type, kind, contract_version=version)
        if record is not None:
            self.consulted.append(record.id)
        return record

    def collected_since(self, kind: EvidenceKind, since: datetime) -> list[EvidenceRecord]:
        records = self.registry.evidence(self.contract.message_type, kind, since=since, limit=_MANY)
        self.consulted.extend(record.id for record in records)
        return records

    def effective(self, message_type: str) -> VersionState | None:
        return self.registry.effective(message_type)


Guard = Callable[[GuardContext], list[str]]


# -- to experimental ---------------------------------------------------------------------------------


def guard_lint_clean(ctx: GuardContext) -> list[str]:
    return _version_passed(ctx, EvidenceKind.LINT, "lint", "run `contractctl lint` or the contract_change DAG")


def guard_fixtures_pass(ctx: GuardContext) -> list[str]:
    return _version_passed(ctx, EvidenceKind.FIXTURES, "fixtures", "run `contractctl check` or the contract_change DAG")


def guard_topology_provisioned(ctx: GuardContext) -> list[str]:
    return _version_passed(ctx, EvidenceKind.TOPOLOGY, "topology", "run the contract_change DAG to provision it")


# -- to active ---------------------------------------------------------------------------------------


def guard_compatible(ctx: GuardContext) -> list[str]:
    """Compatible with earlier versions under its policy; a new major with a migration proves the migration."""
    if ctx.contract.major > 1 and ctx.contract.migration is not None:
        return _version_passed(ctx, EvidenceKind.MIGRATION_SPEC, "migration spec", "run `contractctl check`")
    how = f"run `contractctl check` ({ctx.contract.compatibility} against the earlier versions)"
    return _version_passed(ctx, EvidenceKind.COMPATIBILITY, "compatibility", how)


def guard_envelope_quality(ctx: GuardContext) -> list[str]:
    record = ctx.latest(EvidenceKind.ENVELOPE_QUALITY)
    if record is None:
        return ["no envelope quality evidence yet: run the envelope_quality DAG on real traffic"]
    if record.passed:
        return []
    failed = ", ".join(EnvelopeQualityFigures.of(record).failed_expectations)
    unmet = f": {failed} not met" if failed else ""
    return [f"envelope quality {_outcome(record)} on real traffic{unmet} ({_cite(record)})"]


def guard_archive_validation(ctx: GuardContext) -> list[str]:
    """The invalid rate over the validation window, summed over every run in it, is within target.

    A run whose duplicate or ordering checks could not see every earlier day they needed
    (docs/archive-validation.md) is not clean whatever its rate: the guard names the days.
    """
    days = ctx.contract.validation.window_days
    records = _latest_per_interval(ctx.collected_since(EvidenceKind.ARCHIVE_VALIDATION, ctx.now - timedelta(days=days)))
    if not records:
        return [f"no archive validation evidence in the last {days} days: run the topic_archive_validation DAG"]
    figures = [(record, ArchiveValidationFigures.of(record)) for record in records]
    unreadable = [record for record, f in figures if _count(f.invalid) is None or _count(f.total) is None]
    if unreadable:
        return [f"archive validation {_cite(unreadable[0])} has no integer invalid/total figures: record it again"]
    reasons = _incomplete_cross_day(figures)
    invalid = sum(_count(f.invalid) or 0 for _, f in figures)
    total = sum(_count(f.total) or 0 for _, f in figures)
    if total == 0:
        return [*reasons, f"archive validation saw no messages in the last {days} days: activation needs real traffic"]
    target = ctx.contract.validation.invalid_rate_target
    if invalid / total > target:
        reasons.append(
            f"invalid rate {invalid / total:.3%} ({invalid} of {total} archived messages in the last {days} days) "
            f"is above the target {target:.3%}: see the quarantine of topic_archive_validation for the reasons"
        )
    return reasons


def guard_runtime_validation(ctx: GuardContext) -> list[str]:
    """What services' guards rejected of this type at publish and consume (``contract_platform.client``), summed over
    the validation window, is within ``validation.invalidRateTarget``, as archive validation's rate must be.

    Optional evidence: a type no service guards has none, and passes. Handlers' own refusals never count.
    """
    days = ctx.contract.validation.window_days
    records = ctx.collected_since(EvidenceKind.RUNTIME_VALIDATION, ctx.now - timedelta(days=days))
    window = runtime_window(
        (RuntimeValidationFigures.of(record) for record in records),
        days=days,
        target=ctx.contract.validation.invalid_rate_target,
    )
    if not window.over_target:
        return []
    worst = ", ".join(f"{t.service} ({t.side}): {t.rejected}" for t in window.tallies[:3] if t.rejected > 0)
    return [
        f"runtime rejection rate {window.rate:.3%} ({window.rejected} of {window.checked} messages judged by services' "
        f"guards in the last {days} days; {worst}) is above the target {window.target:.3%}: the dead-letter queues "
        "hold the rejected messages with their x-reject-* headers (docs/service-client.md#dead-letters)"
    ]


def _incomplete_cross_day(figures: list[tuple[EvidenceRecord, ArchiveValidationFigures]]) -> list[str]:
    """One reason for the runs whose cross-day checks were incomplete, naming the days they could not see."""
    incomplete = [(record, f) for record, f in figures if not f.complete]
    if not incomplete:
        return []
    duplicates = {day for _, f in incomplete for day in f.incomplete_duplicates}
    ordering = {day for _, f in incomplete for day in f.incomplete_ordering}
    missed = []
    if duplicates:
        missed.append(f"duplicate checks missed the first copies of {named_days(duplicates)}")
    if ordering:
        missed.append(f"ordering checks missed the sequences of {named_days(ordering)}")
    latest = max(incomplete, key=lambda pair: (pair[0].collected_at, pair[0].id))[0]
    runs = f"{len(incomplete)} runs" if len(incomplete) > 1 else "a run"
    first = min(duplicates | ordering)
    return [
        f"archive validation is incomplete, not clean, for {runs} (latest {_cite(latest)}): {'; '.join(missed)}; "
        f"validate the days from {first} on, in order, then those runs' days again "
        "(docs/archive-validation.md#incremental-runs)"
    ]


def _latest_per_interval(records: list[EvidenceRecord]) -> list[EvidenceRecord]:
    """Runs over the same days (a retry, a rerun) count once: each interval's latest evidence.

    Evidence of incremental runs names its days (``figures.interval``, docs/archive-validation.md);
    evidence without one (a whole-archive run) counts as it is.
    """
    kept: list[EvidenceRecord] = []
    latest: dict[tuple[Any, Any], EvidenceRecord] = {}
    for record in records:
        key = ArchiveValidationFigures.of(record).interval_key
        if key is None:
            kept.append(record)
            continue
        if key not in latest or (record.collected_at, record.id) > (latest[key].collected_at, latest[key].id):
            latest[key] = record
    return kept + list(latest.values())


# -- to superseded -----------------------------------------------------------------------------------


def guard_successor_active(ctx: GuardContext) -> list[str]:
    successor = ctx.contract.superseded_by
    if not successor:
        return ["supersededBy is not set in contract.yaml: name the contract that replaces this one"]
    state = ctx.effective(successor)
    if state is None:
        return [f"successor {successor} is not in the registry yet: register it and make it active first"]
    if state.status is not Status.ACTIVE:
        return [f"successor {successor} is {state.status}, not active: make it active first"]
    return []


def guard_migration_running(ctx: GuardContext) -> list[str]:
    """A bridge or dual publishing toward the successor is running (parity passing or still undecided)."""
    record = ctx.latest(EvidenceKind.MIGRATION_PARITY)
    if record is None:
        return ["no migration parity evidence yet: start the dual_publish_migration DAG (bridge or dual publish)"]
    mode = MigrationParityFigures.of(record).mode
    if mode not in ("bridge", "dual-publish"):
        return [
            f"migration parity {_cite(record)} has mode {mode!r}, not bridge or dual-publish: "
            "run the dual_publish_migration DAG with a bridge, or let producers publish both"
        ]
    if record.verdict is Verdict.FAIL:
        return [f"the {mode} migration is running but parity failed ({_cite(record)}): fix it before superseding"]
    return []


# -- to deprecated -----------------------------------------------------------------------------------


def guard_sunset_set(ctx: GuardContext) -> list[str]:
    if ctx.contract.sunset is None:
        return ["sunset is not set in contract.yaml: set the date after which consumers must have moved"]
    return []


def guard_parity_verified(ctx: GuardContext) -> list[str]:
    record = ctx.latest(EvidenceKind.MIGRATION_PARITY)
    if record is None:
        return ["no migration parity evidence yet: run the dual_publish_migration DAG"]
    if not record.passed:
        return [
            f"migration parity {_outcome(record)} ({_cite(record)}): every message must reach the successor, "
            "migrated as migration.yaml says"
        ]
    return []


# -- to retired --------------------------------------------------------------------------------------


def guard_retirement_audit_fresh(ctx: GuardContext) -> list[str]:
    record = ctx.latest(EvidenceKind.RETIREMENT_AUDIT)
    if record is None:
        return ["no retirement audit yet: run the retirement_audit DAG"]
    reasons = []
    if not record.passed:
        failed = ", ".join(RetirementAuditFigures.of(record).failed_checks)
        checks = f": {failed} failed" if failed else ""
        reasons.append(f"retirement audit {_outcome(record)}{checks} ({_cite(record)})")
    freshness = ctx.contract.retirement.evidence_freshness
    age = ctx.now - record.collected_at
    if age > freshness:
        reasons.append(
            f"the latest retirement audit is {_age(age)} old ({_cite(record)}); it must be at most "
            f"{format_duration(freshness)} old: run the retirement_audit DAG again"
        )
    return reasons


def guard_no_hold(ctx: GuardContext) -> list[str]:
    return [
        f"{hold.kind} hold in force until {hold.until.isoformat()}: {hold.reason}"
        for hold in ctx.contract.holds_in_force(ctx.today)
    ]


# -- helpers -----------------------------------------------------------------------------------------


def _version_passed(ctx: GuardContext, kind: EvidenceKind, what: str, how: str) -> list[str]:
    """The latest ``kind`` evidence for the contract's current version passed."""
    version = ctx.contract.version
    record = ctx.latest(kind, this_version=True)
    if record is None:
        other = ctx.registry.latest_evidence(ctx.contract.message_type, kind)
        latest = f" (the latest is for version {other.contract_version})" if other else ""
        return [f"no {what} evidence for version {version} yet{latest}: {how}"]
    if not record.passed:
        return [f"{what} {_outcome(record)} for version {version} ({_cite(record)}): {how}"]
    return []


def _outcome(record: EvidenceRecord) -> str:
    return {Verdict.PASS: "passed", Verdict.FAIL: "failed", Verdict.UNKNOWN: "was inconclusive"}[record.verdict]


def _cite(record: EvidenceRecord) -> str:
    report = f", report {record.reference}" if record.reference else ""
    return f"evidence #{record.id} of {record.collected_at:%Y-%m-%d %H:%M} UTC{report}"


def _count(value: int | None) -> int | None:
    """A count the guards can sum: a non-negative integer, else None (the figures need recording again)."""
    return value if value is not None and value >= 0 else None


def _age(age: timedelta) -> str:
    days, seconds = age.days, age.seconds
    hours, minutes = seconds // 3600, seconds % 3600 // 60
    if days:
        return f"{days}d {hours}h"
    return f"{hours}h {minutes}m" if hours else f"{minutes}m"

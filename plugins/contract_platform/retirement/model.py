"""What the retirement audit returns: one typed ``CheckResult`` per check, gathered in an ``AuditResult``.

A check that passes has no blocker; a check that fails or cannot decide (``unknown``) always has one:
a sentence a person can act on, and, where the check can tell, ``clears_at``, the moment it might clear
by itself (a retention window ending, a hold expiring, enough zero-consumer observations).
``unknown`` never counts as a pass: the audit passes only when every check passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from contract_platform.evidence import Verdict
from contract_platform.evidence.figures import ObstacleFigures, RetirementAuditFigures

__all__ = ["AuditResult", "CheckName", "CheckResult", "iso", "require_aware"]


class CheckName(StrEnum):
    """The checks of a retirement audit, in the order they run and are reported (stable ids)."""

    QUEUES = "queues"
    READERS = "readers"  # every reader over the whole span, from the activity recorder and the queues' counters
    DEAD_LETTERS = "dead_letters"
    RETENTION = "retention"
    HOLDS = "holds"
    SUCCESSOR_CONSUMERS = "successor_consumers"


def iso(moment: datetime | None) -> str | None:
    """``2026-07-01T12:00:00Z`` (UTC, seconds), or None."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def require_aware(moment: datetime, name: str = "now") -> datetime:
    if moment.tzinfo is None:
        raise ValueError(f"{name} is a naive datetime ({moment.isoformat()}): pass an aware UTC datetime")
    return moment.astimezone(UTC)


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict and the figures behind it; ``blocker`` is set exactly when it did not pass."""

    name: CheckName
    verdict: Verdict
    figures: Mapping[str, Any] = field(default_factory=dict)
    blocker: str | None = None
    clears_at: datetime | None = None

    def __post_init__(self) -> None:
        if (self.verdict is Verdict.PASS) != (self.blocker is None):
            raise ValueError(f"{self.name}: a passing check has no blocker, any other has one ({self.verdict})")
        if self.clears_at is not None:
            require_aware(self.clears_at, "clears_at")

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASS

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": str(self.name),
            "verdict": str(self.verdict),
            "blocker": self.blocker,
            "clears_at": iso(self.clears_at),
            "figures": dict(self.figures),
        }


@dataclass(frozen=True)
class AuditResult:
    """Every check of one audit of one contract version, at one moment."""

    message_type: str
    contract_version: str
    audited_at: datetime
    checks: tuple[CheckResult, ...]
    run_id: str | None = None

    def __post_init__(self) -> None:
        require_aware(self.audited_at, "audited_at")
        names = [check.name for check in self.checks]
        if len(set(names)) != len(names):
            raise ValueError(f"a check appears twice in the audit of {self.message_type}: {names}")

    @property
    def verdict(self) -> Verdict:
        """pass when every check passed; fail when any failed; otherwise unknown (never a pass)."""
        if not self.checks:
            return Verdict.UNKNOWN
        if all(check.passed for check in self.checks):
            return Verdict.PASS
        if any(check.verdict is Verdict.FAIL for check in self.checks):
            return Verdict.FAIL
        return Verdict.UNKNOWN

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASS

    @property
    def blocking(self) -> list[CheckResult]:
        return [check for check in self.checks if not check.passed]

    @property
    def failed_checks(self) -> list[str]:
        """Names of the checks that did not pass (failed or undecided): what the lifecycle guard cites."""
        return [str(check.name) for check in self.blocking]

    def check(self, name: CheckName | str) -> CheckResult:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(f"the audit of {self.message_type} has no check {name!r}")

    def evidence_figures(self) -> RetirementAuditFigures:
        """The evidence figures: ``checks``, ``blockers``, ``failed_checks`` and ``clears_at`` per blocker."""
        return RetirementAuditFigures(
            verdict=str(self.verdict),
            audited_at=iso(self.audited_at),
            failed_checks=tuple(self.failed_checks),
            blockers=tuple(
                {"check": str(c.name), "verdict": str(c.verdict), "blocker": c.blocker, "clears_at": iso(c.clears_at)}
                for c in self.blocking
            ),
            clears_at={str(c.name): iso(c.clears_at) for c in self.blocking},
            checks={str(c.name): c.to_dict() for c in self.checks},
        )

    def figures(self) -> dict[str, Any]:
        """The evidence figures as stored (snake_case JSON)."""
        return self.evidence_figures().to_json()

    def to_dict(self) -> dict[str, Any]:
        return {
            "messageType": self.message_type,
            "contractVersion": self.contract_version,
            "runId": self.run_id,
            **self.figures(),
        }


@dataclass(frozen=True)
class Obstacle:
    """Something that keeps the span from being clean: a reader (fail) or something not known (unknown)."""

    kind: str  # reader | counters | gap | uncovered | deleted | untraced
    verdict: Verdict
    start: datetime | None  # None: since before anything was known
    end: datetime
    text: str
    queue: str | None = None
    who: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return self.figures().to_json()

    def figures(self) -> ObstacleFigures:
        return ObstacleFigures(
            self.kind, str(self.verdict), iso(self.start), iso(self.end), self.text, self.queue, self.who or None
        )

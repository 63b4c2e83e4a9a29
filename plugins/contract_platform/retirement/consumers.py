"""The ``consumers_over_time`` check: no consumer on any queue of the version over consecutive audits.

One look at the queues proves little (a weekly batch consumer is away six days out of seven), so
every audit records one observation per queue in the registry store and this check reads the series
back. Observations taken at the same moment form one audit. Counting back from the latest audit, the
audits in which every queue had zero consumers form the *streak*; the check passes when the streak
holds at least ``retirement.observations`` audits spanning at least ``retirement.observation_span``.
A consumer seen in any audit ends the streak: the clock starts again once it has left.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from contract_platform.catalog.model import Contract
from contract_platform.durations import format_duration
from contract_platform.evidence import Verdict
from contract_platform.retirement.model import CheckName, CheckResult, iso, require_aware

__all__ = ["DEFAULT_CADENCE", "Audit", "Sample", "audits_of", "check_consumers_over_time"]

DEFAULT_CADENCE = timedelta(days=1)  # the retirement_audit DAG runs daily
_SHOWN_AUDITS = 10


class Sample(Protocol):
    """What the check needs of an observation (``store.records.Observation`` is one)."""

    @property
    def queue(self) -> str: ...

    @property
    def observed_at(self) -> datetime: ...

    @property
    def consumers(self) -> int | None: ...


@dataclass(frozen=True)
class Audit:
    """The observations taken at one moment: consumers per queue (None: not known)."""

    at: datetime
    consumers: Mapping[str, int | None]

    @property
    def zero(self) -> bool:
        return all(count == 0 for count in self.consumers.values())

    @property
    def known(self) -> bool:
        return all(count is not None for count in self.consumers.values())

    def to_dict(self) -> dict[str, Any]:
        known = [count for count in self.consumers.values() if count is not None]
        return {"at": iso(self.at), "consumers": sum(known) if self.known else None}


def audits_of(samples: Iterable[Sample], queues: Iterable[str] | None = None) -> list[Audit]:
    """Observations grouped by moment, newest first; only ``queues`` when given."""
    wanted = set(queues) if queues is not None else None
    grouped: dict[datetime, dict[str, int | None]] = {}
    for sample in samples:
        if wanted is not None and sample.queue not in wanted:
            continue
        grouped.setdefault(require_aware(sample.observed_at, "observed_at"), {})[sample.queue] = sample.consumers
    return [Audit(at, grouped[at]) for at in sorted(grouped, reverse=True)]


def check_consumers_over_time(
    contract: Contract,
    samples: Iterable[Sample],
    *,
    now: datetime,
    queues: Iterable[str] | None = None,
    cadence: timedelta = DEFAULT_CADENCE,
) -> CheckResult:
    """Judge the observation series of ``contract`` (including this audit's own observations)."""
    now = require_aware(now)
    wanted = list(queues) if queues is not None else None
    needed, span_needed = contract.retirement.observations, contract.retirement.observation_span
    audits = audits_of(samples, wanted)
    streak: list[Audit] = []
    for audit in audits:
        if not audit.zero:
            break
        streak.append(audit)
    span = streak[0].at - streak[-1].at if streak else timedelta(0)
    figures: dict[str, Any] = {
        "required": {"observations": needed, "span": format_duration(span_needed)},
        "streak": {
            "observations": len(streak),
            "since": iso(streak[-1].at) if streak else None,
            "spanSeconds": int(span.total_seconds()),
        },
        "audits": [audit.to_dict() for audit in audits[:_SHOWN_AUDITS]],
    }
    if wanted is not None and not wanted:
        figures["note"] = "the version has no queues: nothing can consume it"
        return CheckResult(CheckName.CONSUMERS_OVER_TIME, Verdict.PASS, figures)
    if len(streak) >= needed and span >= span_needed:
        figures["passedAt"] = iso(streak[-1].at + span_needed)
        return CheckResult(CheckName.CONSUMERS_OVER_TIME, Verdict.PASS, figures)
    requirement = f"{needed} consecutive audits without consumers spanning at least {format_duration(span_needed)}"
    if not audits:
        return CheckResult(
            CheckName.CONSUMERS_OVER_TIME,
            Verdict.FAIL,
            figures,
            f"no queue observations of {contract.message_type} yet: retirement needs {requirement}",
        )
    latest = audits[0]
    if not latest.known and not streak:
        unknown = sorted(queue for queue, count in latest.consumers.items() if count is None)
        return CheckResult(
            CheckName.CONSUMERS_OVER_TIME,
            Verdict.UNKNOWN,
            figures,
            f"the consumer count of {', '.join(unknown)} was not known at the latest audit ({iso(latest.at)}): "
            "run the audit again",
        )
    if not streak:
        seen = ", ".join(f"{queue} {count}" for queue, count in sorted(latest.consumers.items()) if count)
        return CheckResult(
            CheckName.CONSUMERS_OVER_TIME,
            Verdict.FAIL,
            figures,
            f"consumers were connected at the latest audit ({iso(latest.at)}: {seen}): once they have left, "
            f"retirement needs {requirement}",
        )
    clears_at = max(streak[-1].at + span_needed, now + cadence * max(0, needed - len(streak)))
    figures["passesAt"] = iso(clears_at)
    return CheckResult(
        CheckName.CONSUMERS_OVER_TIME,
        Verdict.FAIL,
        figures,
        f"only {len(streak)} consecutive audit{'s' if len(streak) != 1 else ''} without consumers since "
        f"{iso(streak[-1].at)} (spanning {_span(span)}); retirement needs {requirement}: "
        f"expected to pass from {iso(clears_at)} if no consumer connects",
        clears_at,
    )


def _span(span: timedelta) -> str:
    days, hours = span.days, span.seconds // 3600
    return f"{days}d {hours}h" if days else f"{hours}h {span.seconds % 3600 // 60}m"

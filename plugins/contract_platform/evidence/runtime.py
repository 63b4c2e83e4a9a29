"""Services' runtime evidence over a window: what their guards judged of one message type, summed.

``runtime_window`` is the one sum of ``runtime_validation`` evidence (``RuntimeValidationFigures``, one record per
service, side and flush period): the promotion guard (``lifecycle.guards.guard_runtime_validation``) judges its
rate against ``validation.invalidRateTarget``, and the Contracts page shows it beside archive validation.
Counts below zero (a row written by hand, or by a broken reporter) count as zero; handlers' own refusals
(``business_rejected``) are shown but never in the rate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from contract_platform.evidence.figures import RuntimeValidationFigures

__all__ = ["GuardTally", "RuntimeWindow", "runtime_window"]


@dataclass(frozen=True)
class GuardTally:
    """One service's guards on one side (publish or consume) over the window."""

    service: str
    side: str
    checked: int = 0
    rejected: int = 0
    tolerated: int = 0
    migrated: int = 0
    business_rejected: int = 0
    dropped: int = 0  # periods' counts the service could not deliver and dropped: the window undercounts
    by_reason: Mapping[str, int] = field(default_factory=dict)
    until: str | None = None  # the end of the latest period counted

    @property
    def rate(self) -> float | None:
        return self.rejected / self.checked if self.checked else None


@dataclass(frozen=True)
class RuntimeWindow:
    days: int
    target: float
    tallies: tuple[GuardTally, ...]  # most rejections first

    @property
    def checked(self) -> int:
        return sum(t.checked for t in self.tallies)

    @property
    def rejected(self) -> int:
        return sum(t.rejected for t in self.tallies)

    @property
    def dropped(self) -> int:
        return sum(t.dropped for t in self.tallies)

    @property
    def rate(self) -> float | None:
        return self.rejected / self.checked if self.checked else None

    @property
    def over_target(self) -> bool:
        return self.rate is not None and self.rate > self.target


def runtime_window(figures: Iterable[RuntimeValidationFigures], *, days: int, target: float) -> RuntimeWindow:
    """The window's evidence summed per (service, side)."""
    sums: dict[tuple[str, str], dict[str, int]] = {}
    reasons: dict[tuple[str, str], dict[str, int]] = {}
    until: dict[tuple[str, str], str] = {}
    for f in figures:
        key = (f.service or "a service", f.side or "consume")
        counts = sums.setdefault(key, {})
        for name in ("checked", "rejected", "tolerated", "migrated", "business_rejected", "dropped"):
            counts[name] = counts.get(name, 0) + max(getattr(f, name) or 0, 0)
        for reason, count in (f.by_reason or {}).items():
            if isinstance(count, int) and count > 0:
                reasons.setdefault(key, {})[str(reason)] = reasons.setdefault(key, {}).get(str(reason), 0) + count
        if f.until and f.until > until.get(key, ""):
            until[key] = f.until
    tallies = [
        GuardTally(
            service,
            side,
            by_reason=dict(sorted(reasons.get((service, side), {}).items())),
            until=until.get((service, side)),
            **counts,
        )
        for (service, side), counts in sums.items()
    ]
    tallies.sort(key=lambda t: (-t.rejected, t.service, t.side))
    return RuntimeWindow(days, target, tuple(tallies))

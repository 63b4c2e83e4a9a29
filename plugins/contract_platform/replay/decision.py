"""What replay decides about a change, from the static verdict and the traffic (docs/replay.md#decision).

=============================================  =========================  =====================================
static verdict / setting                        replay                     decision
=============================================  =========================  =====================================
compatible                                      fewer than minMessages     unknown (static verdict stands)
compatible                                      rate > threshold           refused (compatibility fails)
compatible                                      rate <= threshold          confirmed
breaking only by narrowing, tightening evidence fewer than minMessages     unknown (breaking stands)
breaking only by narrowing, tightening evidence no rejection               accepted-on-evidence (minor allowed)
breaking only by narrowing, tightening evidence any rejection              refused (breaking stands)
breaking otherwise, or tightening static        rate > threshold           refused (today's verdict, with where)
breaking otherwise, or tightening static        rate <= threshold          not-applicable (today's verdict)
=============================================  =========================  =====================================

In-flight messages count with the archived ones: minMessages is over both, and any queue whose messages
the candidate rejects beyond the threshold refuses the change, naming the queue. An in-flight message of
the version that could not be read (``Tally.unreadable``: not UTF-8, not JSON, nested too deep...) is
never counted as accepted: where the table says confirmed or accepted-on-evidence, a queue holding such
messages makes the decision unknown instead, naming the queue, the count and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from contract_platform.catalog.model import ReplaySettings
from contract_platform.compat import Change, Mode

__all__ = ["Decision", "ReplayDecision", "StaticVerdict", "breaks_only_by_narrowing", "decide"]


class Decision(StrEnum):
    CONFIRMED = "confirmed"
    REFUSED = "refused"
    ACCEPTED_ON_EVIDENCE = "accepted-on-evidence"
    UNKNOWN = "unknown"
    NOT_APPLICABLE = "not-applicable"


class StaticVerdict(StrEnum):
    COMPATIBLE = "compatible"
    BREAKING = "breaking"


def breaks_only_by_narrowing(changes: Sequence[Change], mode: Mode | str) -> bool:
    """True when every change ``mode`` refuses is refused only because the new schema may reject old values.

    That is what replay can test: each breaking change is not backward (rule ids marked B=n, including
    pattern-changed, format-changed, multiple-of-changed and keyword-unmodelled) and would be allowed
    were it backward. A change that also breaks what the mode asks of the other direction (a widening
    under FORWARD or FULL, pattern-changed under FULL) is never decided by traffic. NONE judges as BACKWARD,
    as semver does. False when nothing is breaking.
    """
    judge = Mode.BACKWARD if Mode(mode) is Mode.NONE else Mode(mode)
    breaking = [c for c in changes if not judge.accepts(c.backward, c.forward)]
    return bool(breaking) and all(not c.backward and judge.accepts(True, c.forward) for c in breaking)


@dataclass(frozen=True)
class ReplayDecision:
    decision: Decision
    reasons: list[str] = field(default_factory=list)

    @property
    def lifts_breaking(self) -> bool:
        """The static "breaking" verdict no longer holds (accepted on evidence)."""
        return self.decision is Decision.ACCEPTED_ON_EVIDENCE

    @property
    def refuses(self) -> bool:
        return self.decision is Decision.REFUSED


@dataclass(frozen=True)
class Rejections:
    """Rejected messages and where: ``where`` is "the archive" or "queue <name>"."""

    where: str
    replayed: int
    rejected: int
    unreadable: int = 0  # messages of the version found there that could not be judged
    why: str = ""  # the most frequent reason they could not

    @property
    def rate(self) -> float:
        return self.rejected / self.replayed if self.replayed else 0.0


def decide(
    settings: ReplaySettings,
    static: StaticVerdict,
    narrowing_only: bool,
    seen: Sequence[Rejections],
) -> ReplayDecision:
    """The decision of the table above; ``seen``: the archive's figures first, then each queue's."""
    total = sum(r.replayed for r in seen)
    rejected = sum(r.rejected for r in seen)
    enough = total >= settings.min_messages
    too_few = f"replay: no evidence ({total} of {settings.min_messages} messages)"
    over = [r for r in seen if r.rejected and r.rate > settings.threshold]
    named = [f"{r.rejected} of {r.replayed} messages in {r.where} rejected ({r.rate:.2%})" for r in over]
    unread = [
        f"{r.unreadable} messages in {r.where} could not be read, so were not judged" + (f" ({r.why})" if r.why else "")
        for r in seen
        if r.unreadable
    ]
    if static is StaticVerdict.COMPATIBLE:
        if over:
            return ReplayDecision(Decision.REFUSED, [*named, f"threshold {settings.threshold:.2%}"])
        if not enough:
            return ReplayDecision(Decision.UNKNOWN, [too_few, *unread])
        if unread:
            return ReplayDecision(
                Decision.UNKNOWN, [*unread, f"replay: {rejected} of {total} judged messages rejected"]
            )
        return ReplayDecision(Decision.CONFIRMED, [f"replay: {rejected} of {total} messages rejected"])
    if not (settings.on_evidence and narrowing_only):
        why = "tightening is static" if not settings.on_evidence else "the change does not break only by narrowing"
        if over:  # the traffic confirms the static verdict: say where
            return ReplayDecision(Decision.REFUSED, [*named, f"breaking stands: {why}"])
        return ReplayDecision(Decision.NOT_APPLICABLE, [f"breaking stands: {why}"])
    if rejected:
        shown = [f"{r.rejected} of {r.replayed} messages in {r.where} rejected" for r in seen if r.rejected]
        return ReplayDecision(Decision.REFUSED, shown)
    if not enough or unread:
        return ReplayDecision(Decision.UNKNOWN, [*([too_few] if not enough else []), *unread, "breaking stands"])
    return ReplayDecision(
        Decision.ACCEPTED_ON_EVIDENCE,
        [f"no violation in {total} messages: the narrowing is accepted as a minor version"],
    )

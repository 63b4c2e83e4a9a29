"""The readers perspective: may a change inside a major pass because it breaks no declared reader?

``compatibility: {mode: BACKWARD, perspective: readers}`` (docs/consumer-impact.md#the-readers-perspective).
Only the decision lives here, as a pure function; the caller gathers its inputs (the impact of the diff,
the reader sessions on the version's queues over the last observation window and the recorder's gaps in
it) and applies it only to a change within one major. Every condition is checked and each one that fails
is named; the change is accepted only when none fails:

============================ ======================================================= =======================
condition                    fails when                                              names
============================ ======================================================= =======================
``consumer-without-reads``   a consumer declares neither ``reads`` nor a usable      the consumers
                             ``readerSchema`` ("reads everything")
``readers-unknown``          no reader sessions were recorded for the window, the    the gaps and blind
                             recorder had a gap in it, or the broker's topology      spots
                             could not be read: absence of a reader is then not
                             known
``undeclared-reader``        a session was on a queue no declared consumer owns      each reader: queue and
                             (a reader outside the declared consumers)               connection, peer, user
``declared-reader-broken``   an incompatible change breaks a declared consumer       consumers and changes
============================ ======================================================= =======================

A diff with no incompatible change is accepted as it is (``compatible``): the perspective only ever
widens what the writer verdict allows, never narrows it. A refusal keeps today's verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .analysis import ConsumerImpact

if TYPE_CHECKING:  # annotations only: diff and lint read impact.analysis and start without the evidence package
    from contract_platform.catalog.model import Contract
    from contract_platform.evidence.records import CoverageGap, ReaderSession

__all__ = ["Condition", "ObservedReaders", "PerspectiveDecision", "ReadersOf", "readers_perspective"]


class Condition:
    COMPATIBLE = "compatible"
    ACCEPTED = "breaks-no-declared-reader"
    CONSUMER_WITHOUT_READS = "consumer-without-reads"
    READERS_UNKNOWN = "readers-unknown"
    UNDECLARED_READER = "undeclared-reader"
    DECLARED_READER_BROKEN = "declared-reader-broken"


@dataclass(frozen=True)
class ObservedReaders:
    """The reader sessions on the version's queues (declared or not) over the last observation window, and
    the recorder's gaps in that window (``contractctl record-activity``; docs/retirement-audit.md)."""

    sessions: Sequence[ReaderSession]
    gaps: Sequence[CoverageGap] = ()
    window_start: datetime | None = None
    window_end: datetime | None = None
    blind: Sequence[str] = ()  # what could not be looked at (no topology, no store): readers there are unknown


# What the caller hands the checks to see a version's readers (retirement.readers_seen.ReadersSource is one).
ReadersOf = Callable[["Contract"], ObservedReaders]


@dataclass(frozen=True)
class Failure:
    condition: str
    message: str
    names: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"condition": self.condition, "message": self.message, "names": list(self.names)}


@dataclass(frozen=True)
class PerspectiveDecision:
    accepted: bool
    condition: str  # the first failed condition, or why it was accepted
    message: str
    failures: tuple[Failure, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "perspective": "readers",
            "accepted": self.accepted,
            "condition": self.condition,
            "message": self.message,
            "failures": [f.to_dict() for f in self.failures],
        }


def _reader(session: ReaderSession) -> str:
    return f"{session.describe()} on queue {session.queue!r} (consumer {session.consumer_tag!r})"


def readers_perspective(impact: ConsumerImpact, observed: ObservedReaders | None) -> PerspectiveDecision:
    """Accept a change that the writer verdict refuses when it breaks only fields no declared reader reads
    (the table above). ``observed`` None: the sessions are not known (no recorder, no store)."""
    breaking = [c for c in impact.changes if not c.change.compatible]
    if not breaking:
        return PerspectiveDecision(True, Condition.COMPATIBLE, "no change breaks the writer verdict")
    failures: list[Failure] = []
    undeclared = impact.undeclared
    if undeclared:
        names = tuple(c.service for c in undeclared)
        failures.append(
            Failure(
                Condition.CONSUMER_WITHOUT_READS,
                f"{', '.join(names)} declare(s) no reads: they read everything, so any breaking change breaks "
                "them; declare consumers[].reads or a readerSchema",
                names,
            )
        )
    if observed is None:
        failures.append(
            Failure(
                Condition.READERS_UNKNOWN,
                "no reader sessions are recorded for the observation window: readers outside the declared "
                "consumers cannot be ruled out (run contractctl record-activity)",
            )
        )
    elif observed.blind:
        failures.append(
            Failure(
                Condition.READERS_UNKNOWN,
                f"readers could not be seen in: {'; '.join(observed.blind)}",
                tuple(observed.blind),
            )
        )
    if observed is not None and observed.gaps:
        spans = tuple(f"{g.start.isoformat()} to {g.end.isoformat()} ({g.reason})" for g in observed.gaps)
        failures.append(
            Failure(
                Condition.READERS_UNKNOWN,
                f"the broker activity recorder has {len(spans)} gap(s) in the observation window, "
                f"where readers are unknown: {'; '.join(spans[:3])}",
                spans,
            )
        )
    if observed is not None:
        declared = {c.queue for c in impact.consumers}
        outside = [s for s in observed.sessions if s.queue not in declared]
        if outside:
            names = tuple(dict.fromkeys(_reader(s) for s in outside))
            failures.append(
                Failure(
                    Condition.UNDECLARED_READER,
                    f"{len(names)} reader(s) outside the declared consumers read the version: {'; '.join(names[:5])}",
                    names,
                )
            )
    hit = [c for c in impact.broken if c.declares != "everything" and not c.note]
    if hit:
        names = tuple(c.service for c in hit)
        where = "; ".join(
            f"{c.service} by {', '.join(impact.changes[i].change.rule + ' at ' + (impact.changes[i].change.path or '/') for i in c.breaking[:3]) or 'its reader schema'}"
            for c in hit
        )
        failures.append(
            Failure(Condition.DECLARED_READER_BROKEN, f"the change breaks declared readers: {where}", names)
        )
    if failures:
        return PerspectiveDecision(
            False,
            failures[0].condition,
            "readers perspective refused: " + " | ".join(f.message for f in failures),
            tuple(failures),
        )
    return PerspectiveDecision(
        True,
        Condition.ACCEPTED,
        f"{len(breaking)} breaking change(s) reach no field a declared consumer reads, and no other reader "
        "was seen in the observation window",
    )

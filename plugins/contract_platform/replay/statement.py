"""What a check says about one changed version: which evidence decided, and what each piece of evidence means.

The static impact (``impact``: the consumers whose reads a change the mode refuses touches) and replay (the
archived and in-flight messages those consumers received, judged against the candidate) answer different
questions; printed side by side they contradict each other ("2 of 2 broken" next to "accepted on evidence").
``statement_of`` decides once, from the compatibility result with its impact and the replay result, what
the check says; ``contractctl check`` (text, JSON, ``--format github|junit``) and the main job render it.

======================================================  ==========  ===============================================
the evidence                                            decided by  the statement
======================================================  ==========  ===============================================
no replay; the readers perspective not asked or refusing  static    consumers broken by the schemas, the verdict
the readers perspective accepted a refused change         readers   as above, and the perspective's reason
replay refused (any static verdict)                       replay    the consumers that read what changed; how many
                                                                    of their messages the candidate rejects
replay accepted on evidence (breaking only by narrowing)  replay    the consumers that read the narrowed field;
                                                                    none of their messages violates it
replay confirmed, unknown (too few messages, messages     static    the static verdict stands; what replay found
not read) or not applicable                                         and why it did not decide
======================================================  ==========  ===============================================

The final verdict of a version (``Statement.ok``) is the same rule ``contractctl check`` exits with: accepted on
evidence passes whatever the static verdict said, a refusal fails, otherwise the static verdict (with the readers
perspective and the semantic version) stands.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from contract_platform.errors import printable
from contract_platform.replay.decision import Decision

if TYPE_CHECKING:
    from contract_platform.checks import CompatibilityResult
    from contract_platform.replay.run import ReplayResult

__all__ = ["ConsumerStatement", "DecidedBy", "Reach", "Statement", "statement_of", "statements_of"]


class DecidedBy(StrEnum):
    STATIC = "static"  # the schemas: the compatibility engine's verdict and the semantic version
    READERS = "readers"  # the readers perspective (docs/consumer-impact.md)
    REPLAY = "replay"  # the archived and in-flight traffic (docs/replay.md)


class Reach(StrEnum):
    """What the static impact says of one consumer (``impact.analysis``)."""

    BROKEN = "broken"  # a change the mode refuses touches what it reads
    READING = "reading"  # it reads what changed, and the mode allows the change
    UNTOUCHED = "untouched"


@dataclass(frozen=True)
class ConsumerStatement:
    """One consumer: what the schemas say of it, and what replay found within what it reads (None: not replayed,
    or for in-flight messages: the broker was not read)."""

    service: str
    who: str  # team and contact, as the impact found them
    reach: Reach
    places: str  # the breaking changes that reach it ("pattern-changed at /payload/orderId"), "" when none
    reads_everything: bool
    archived_rejected: int | None = None
    in_flight_rejected: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "service": self.service,
            "who": self.who,
            "reach": str(self.reach),
            "places": self.places,
            "readsEverything": self.reads_everything,
            "archivedRejected": self.archived_rejected,
            "inFlightRejected": self.in_flight_rejected,
        }


@dataclass(frozen=True)
class Statement:
    """What the check says of one version: the verdict, which evidence decided it, and per consumer what each
    piece of evidence found. ``headline`` is the one line; ``lines()`` adds one per consumer."""

    message_type: str
    mode: str
    decided_by: DecidedBy
    ok: bool
    static_compatible: bool
    consumers: tuple[ConsumerStatement, ...] = ()
    narrowed: tuple[str, ...] = ()  # where the breaking changes land that reach a broken consumer
    replay: Decision | None = None
    narrowing_only: bool = False
    archived: int | None = None  # archived messages replayed (None: no replay)
    archived_rejected: int | None = None
    in_flight: int | None = None  # in-flight messages judged (None: the broker was not read)
    in_flight_rejected: int | None = None
    replay_reasons: tuple[str, ...] = ()
    perspective: str | None = None  # the readers perspective's decision, as said ("... [condition]")
    consumers_declared: bool = True

    @property
    def broken(self) -> list[ConsumerStatement]:
        return [c for c in self.consumers if c.reach is Reach.BROKEN]

    @property
    def worth_saying(self) -> bool:
        """False for a bare static verdict that reaches no consumer: the compatibility line says it all."""
        reached = any(c.reach is not Reach.UNTOUCHED for c in self.consumers)
        return (
            self.decided_by is not DecidedBy.STATIC
            or self.replay is not None
            or self.perspective is not None
            or reached
        )

    @property
    def headline(self) -> str:
        if self.decided_by is DecidedBy.REPLAY:
            return self._replay_headline()
        verdict = "accepted" if self.ok else "refused"
        if self.decided_by is DecidedBy.READERS:
            return f"{self._broken_count()}; {verdict} (readers perspective decided)"
        return f"{self._broken_count()}; {verdict} (static verdict decided; {self._why_static()})"

    def lines(self) -> list[str]:
        """The headline, then one line per consumer (indented), then the readers perspective's reason."""
        if not self.worth_saying:
            return []
        lines = [self.headline]
        if self.decided_by is DecidedBy.REPLAY:
            lines += [f"  {self._replayed_consumer(c)}" for c in self.consumers]
        else:
            lines += [f"  breaks {c.service} ({c.who}): {c.places}" for c in self.broken]
            reading = [c.service for c in self.consumers if c.reach is Reach.READING]
            if reading:
                lines.append(f"  reads what changed, allowed by {self.mode}: {', '.join(reading)}")
            untouched = [c.service for c in self.consumers if c.reach is Reach.UNTOUCHED]
            if untouched:
                lines.append(f"  untouched: {', '.join(untouched)}")
        if self.perspective is not None:
            lines.append(self.perspective)
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "decidedBy": str(self.decided_by),
            "ok": self.ok,
            "staticVerdict": "compatible" if self.static_compatible else "breaking",
            "replayDecision": None if self.replay is None else str(self.replay),
            "headline": self.headline,
            "lines": self.lines(),
            "replayed": self.archived,
            "rejected": self.archived_rejected,
            "inFlight": {"judged": self.in_flight, "rejected": self.in_flight_rejected},
            "consumers": [c.to_dict() for c in self.consumers],
        }

    # -- the words ---------------------------------------------------------------------------------

    def _broken_count(self) -> str:
        if not self.consumers_declared:
            return "no consumers declared"
        said = f"consumers: {len(self.broken)} of {len(self.consumers)} broken by the change"
        return said + (": " + ", ".join(f"{c.service} ({c.who})" for c in self.broken) if self.broken else "")

    def _why_static(self) -> str:
        reasons = "; ".join(reason.removeprefix("replay: ") for reason in self.replay_reasons)
        if self.replay is None:
            said = "no replay"
        elif self.replay is Decision.CONFIRMED:
            said = f"replay confirms it: {self._rejected_of()} rejected"
        elif self.replay is Decision.UNKNOWN:
            said = f"replay could not decide: {reasons}" if reasons else "replay could not decide"
        else:  # not applicable
            said = f"replay does not decide: {reasons}" if reasons else "replay does not decide"
        if self.perspective is not None:
            said += "; readers perspective refused"
        return said

    def _messages(self) -> str:
        shown = f"{self.archived or 0} archived"
        if self.in_flight is not None:
            shown += f" and {self.in_flight} in-flight"
        return shown + " messages"

    def _rejected_count(self) -> int:
        return (self.archived_rejected or 0) + (self.in_flight_rejected or 0)

    def _rejected_of(self) -> str:
        return f"{self._rejected_count()} of {self._messages()}"

    def _replay_headline(self) -> str:
        broken = self.broken
        what = "narrowed" if self.narrowing_only else "changed"
        fields = "field" if len(self.narrowed) <= 1 else "fields"
        if broken:
            names = ", ".join(c.service for c in broken)
            verb = "reads" if len(broken) == 1 else "read"
            readers = f"{len(broken)} consumer{'s' if len(broken) != 1 else ''} {verb} the {what} {fields} ({names})"
            whose = "their"
        elif self.consumers_declared:
            readers = f"no consumer reads the {what} {fields} ({len(self.consumers)} declared)"
            whose = "the"
        else:
            readers = "no consumers declared"
            whose = "the"
        rejected = self._rejected_count()
        if rejected == 0:
            found = f"none of {whose} {self._messages()} violates it"
        else:
            found = f"{rejected} of {whose} {self._messages()} violate{'s' if rejected == 1 else ''} it"
        verdict = "accepted on evidence" if self.replay is Decision.ACCEPTED_ON_EVIDENCE else "refused"
        return f"{readers}; {found}: {verdict} (replay decided)"

    def _replayed_consumer(self, consumer: ConsumerStatement) -> str:
        if consumer.reach is Reach.BROKEN:
            reach = f"reads the {'narrowed' if self.narrowing_only else 'changed'} field: {consumer.places}"
        elif consumer.reach is Reach.READING:
            reach = f"reads what changed, allowed by {self.mode}"
        else:
            reach = "untouched by the change"
        in_flight = "" if consumer.in_flight_rejected is None else f" and {consumer.in_flight_rejected} in-flight"
        within = "everything it reads (no reads declared)" if consumer.reads_everything else "its reads"
        return (
            f"{consumer.service} ({consumer.who}) {reach}; {consumer.archived_rejected or 0} archived{in_flight} "
            f"messages rejected within {within}"
        )


def statement_of(result: CompatibilityResult, replayed: ReplayResult | None = None) -> Statement:
    """What the check says of ``result``'s version once replay (``replayed``, None: not replayed) has spoken."""
    decision = replayed.decision if replayed is not None else None
    if decision is not None and (decision.refuses or decision.lifts_breaking):
        decided_by = DecidedBy.REPLAY
        ok = decision.lifts_breaking
    else:
        decided_by = DecidedBy.READERS if result.accepted_by_readers else DecidedBy.STATIC
        ok = result.ok
    perspective = None
    if result.perspective is not None:
        said = result.perspective.message
        if result.perspective.accepted:
            said = f"readers perspective accepted: {said}"
        perspective = f"{printable(said)} [{result.perspective.condition}]"  # names other clients chose, escaped
    in_flight_checked = replayed is not None and replayed.in_flight.checked
    return Statement(
        message_type=result.message_type,
        mode=result.mode,
        decided_by=decided_by,
        ok=ok,
        static_compatible=result.compatible,
        consumers=tuple(_consumers(result, replayed)),
        narrowed=_narrowed(result),
        replay=decision.decision if decision is not None else None,
        narrowing_only=replayed is not None and replayed.target.narrowing_only,
        archived=replayed.archive.replayed if replayed is not None else None,
        archived_rejected=replayed.archive.rejected if replayed is not None else None,
        in_flight=replayed.in_flight.tally.replayed if replayed is not None and in_flight_checked else None,
        in_flight_rejected=replayed.in_flight.tally.rejected if replayed is not None and in_flight_checked else None,
        replay_reasons=tuple(decision.reasons) if decision is not None else (),
        perspective=perspective,
        consumers_declared=result.impact is not None,
    )


def statements_of(
    compatibility: Iterable[CompatibilityResult], replayed: Sequence[ReplayResult] | None
) -> list[Statement]:
    """``statement_of`` for every compatibility result, each with the replay of its version (if any)."""
    by_type = {r.message_type: r for r in replayed or ()}
    return [statement_of(result, by_type.get(result.message_type)) for result in compatibility]


def _consumers(result: CompatibilityResult, replayed: ReplayResult | None) -> Iterable[ConsumerStatement]:
    impact = result.impact
    if impact is None:
        return
    in_flight = replayed.in_flight.tally.consumers if replayed is not None and replayed.in_flight.checked else None
    for consumer in impact.consumers:
        reach = Reach.BROKEN if consumer.broken else Reach.READING if consumer.reading else Reach.UNTOUCHED
        yield ConsumerStatement(
            service=consumer.service,
            who=consumer.who,
            reach=reach,
            places=result.breaking_places(consumer) if consumer.broken else "",
            reads_everything=consumer.reads is None,
            archived_rejected=replayed.archive.consumers.get(consumer.service, 0) if replayed is not None else None,
            in_flight_rejected=None if in_flight is None else in_flight.get(consumer.service, 0),
        )


def _narrowed(result: CompatibilityResult) -> tuple[str, ...]:
    """Where the breaking changes land that reach a broken consumer (envelope pointers), in order."""
    impact = result.impact
    if impact is None:
        return ()
    found: dict[str, None] = {}
    for consumer in impact.broken:
        for index in consumer.breaking:
            change = impact.changes[index]
            for pointer in change.pointers or (change.change.path or "/",):
                found.setdefault(pointer)
    return tuple(found)

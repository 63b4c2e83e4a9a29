"""A v<N-1> -> v<N> migration per consumer: who must change code before moving, who has moved
(docs/consumer-impact.md#migrations-and-retirement-per-consumer).

**What the migration does to what a consumer reads.** Each ``migration.yaml`` op says what becomes of a
field of the old payload (its pointers are relative to the payload; a read is a pointer into the envelope):

=============================================== ===============================================================
op                                              a v<N-1> consumer reading its ``from`` field
=============================================== ===============================================================
``copy`` to the same pointer                    reads it unchanged
``copy`` to another pointer                     must change: the field is **renamed** (``to``)
``decimalToMinorUnits``, ``minorUnitsToDecimal``, must change: the field is **transformed** (its value changes
``mapEnum``, ``toString``                       meaning or type)
``drop``                                        must change: the field is **dropped**
``default``, ``constant``                       (new fields: they touch no old one)
=============================================== ===============================================================

A read of an old payload field no op mentions must change too (the field is not carried over); a read of
the envelope's metadata is carried by the bridge unchanged. A consumer that declares no reads reads
everything: it must change whenever any op renames, transforms or drops. A read covers an op's field as
``impact.pointers.covers`` says (an ancestor, the field, or a descendant).

**Has it moved?** A fact of history, judged from the broker, not only from the catalogue, and never from
whether a reader happens to be attached inside the latest window: the consumer is declared on the new version
(same service), and the reader sessions the activity recorder stored (``ReadHistory``: its retained history,
not only the observation window) show when it last read each queue:

=============================== ===================================================== ======================
declared on v<N>                readers seen                                          state
=============================== ===================================================== ======================
no                              any                                                   ``not-declared``
yes                             no recorder coverage at all (or no registry)          ``unknown``, naming why
yes                             read the new queue after it last read the old one     ``moved``, since then
                                (or never read the old), the recorder covering
                                everything from that last old read on
yes                             the same, with a gap in the coverage since            ``unknown`` (it could
                                                                                      have gone back)
yes                             read both in the window, the old one last             ``moving``
yes                             read the old queue in the window, not the new one     ``not-moved``
                                after it
yes                             read neither queue in the window (and no move)        ``idle``, with when it
                                                                                      last read each
=============================== ===================================================== ======================

One function answers "who moved" for the CLI (``contractctl migration status``), the Contracts page, the API
and the retirement audit: ``retirement.readers_seen.observed_moves`` gathers the history, ``consumer_moves``
judges it (docs/consumer-impact.md#has-it-moved).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from contract_platform.catalog.model import Catalog, Contract

from .analysis import contacts_of
from .pointers import covers, parse_read

if TYPE_CHECKING:
    from contract_platform.evidence.records import ReaderSession
    from contract_platform.migration.spec import MigrationSpec

__all__ = [
    "MOVE_STATES",
    "ConsumerMove",
    "FieldFate",
    "ReadHistory",
    "consumer_moves",
    "fates_of",
    "judge_move",
    "still_on_source",
]

MOVE_STATES = ("moved", "moving", "not-moved", "idle", "not-declared", "unknown")


@dataclass(frozen=True)
class FieldFate:
    """What the migration does to one field an old consumer reads."""

    read: str  # the consumer's read (an envelope pointer)
    field: str  # the old field it covers (an envelope pointer)
    fate: str  # renamed | transformed | dropped | not-carried
    detail: str  # e.g. "renamed to /payload/amountMinorUnits by op /payload/3"

    def to_dict(self) -> dict[str, str]:
        return {"read": self.read, "field": self.field, "fate": self.fate, "detail": self.detail}


@dataclass(frozen=True)
class ConsumerMove:
    """One consumer of the old version: what it must change, and whether it has moved."""

    service: str
    source_queue: str
    target_queue: str | None  # its queue on the new version, when declared there
    team: str | None
    contact: str | None
    must_change: tuple[FieldFate, ...]
    state: str  # MOVE_STATES
    why: str

    @property
    def unchanged(self) -> bool:
        return not self.must_change

    def to_dict(self) -> dict[str, Any]:
        return {
            "service": self.service,
            "sourceQueue": self.source_queue,
            "targetQueue": self.target_queue,
            "team": self.team,
            "contact": self.contact,
            "mustChange": [f.to_dict() for f in self.must_change],
            "canMoveUnchanged": self.unchanged,
            "state": self.state,
            "why": self.why,
        }


def _payload(pointer: str) -> str:
    return "/payload" + (pointer if pointer != "/" else "")


def _op_fates(spec: MigrationSpec) -> list[tuple[str, str, str]]:
    """(old field as an envelope pointer, fate, detail) for every op that reads an old field."""
    from contract_platform.migration.spec import Copy, DecimalToMinorUnits, Drop, MapEnum, MinorUnitsToDecimal, ToString

    found = []
    for op in spec.ops:
        if isinstance(op, Copy):
            old, new = _payload(op.source), _payload(op.target)
            found.append((old, "unchanged", "") if new == old else (old, "renamed", f"renamed to {new} by op {op.at}"))
        elif isinstance(op, DecimalToMinorUnits | MinorUnitsToDecimal | MapEnum | ToString):
            name = type(op).__name__
            how = f"transformed by {name[0].lower()}{name[1:]} (op {op.at}) into {_payload(op.target)}"
            found.append((_payload(op.source), "transformed", how))
            if isinstance(op, DecimalToMinorUnits | MinorUnitsToDecimal) and op.currency_source:
                found.append((_payload(op.currency_source), "unchanged", ""))  # read, not changed
            if isinstance(op, MinorUnitsToDecimal) and op.exponent_source:
                found.append((_payload(op.exponent_source), "unchanged", ""))
        elif isinstance(op, Drop):
            found.append((_payload(op.source), "dropped", f"dropped by op {op.at}: {op.reason}"))
    return found


def _fields(schema: Any) -> list[str]:
    """The old payload's top-level fields as envelope pointers (what is carried is decided per field)."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    return [f"/payload/{name}" for name in (properties or {})]


def fates_of(reads: Sequence[str] | None, spec: MigrationSpec, source_schema: Any) -> list[FieldFate]:
    """The fields a consumer reads that the migration renames, transforms, drops or does not carry."""
    ops = _op_fates(spec)
    mentioned = [field for field, _, _ in ops]
    if reads is None:  # reads everything: every field that does not arrive unchanged
        changing = [FieldFate("*", f, fate, detail) for f, fate, detail in ops if fate != "unchanged"]
        carried = set(mentioned)
        changing += [
            FieldFate("*", f, "not-carried", "no op carries it to the new version")
            for f in _fields(source_schema)
            if f not in carried
        ]
        return changing
    fates: list[FieldFate] = []
    for read in reads:
        tokens = parse_read(read)
        if not tokens or tokens[0] != "payload":
            continue  # the envelope's metadata: carried by the bridge
        hit = [(f, fate, detail) for f, fate, detail in ops if covers(tokens, parse_read(f))]
        fates += [FieldFate(read, f, fate, detail) for f, fate, detail in hit if fate != "unchanged"]
        if not hit and len(tokens) > 1:
            fates.append(FieldFate(read, read, "not-carried", "no op carries it to the new version"))
    return fates


@dataclass(frozen=True)
class ReadHistory:
    """What the recorder knows of the readers of both versions' queues: every reader session over its retained
    history (``since`` to ``now``), the stretches its coverage confirmed (merged, oldest first; what lies between
    them is a gap) and where the observation window starts."""

    sessions: Sequence[ReaderSession]
    covered: Sequence[tuple[datetime, datetime]]
    window_start: datetime
    now: datetime


def _when(moment: datetime | None) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z") if moment is not None else "never"


def _reads(history: ReadHistory, queue: str) -> list[tuple[datetime | None, datetime]]:
    """(from, until) of each reading of ``queue``; until is now for a reader still attached."""
    return [(s.attached_at, s.detached_at or history.now) for s in history.sessions if s.queue == queue]


def _covered_between(history: ReadHistory, start: datetime) -> tuple[bool, datetime | None]:
    """Whether the coverage runs without a gap from ``start`` to its latest confirmation, and that confirmation."""
    spans = [span for span in history.covered if span[1] >= start]
    if not spans or spans[0][0] > start:
        return False, spans[-1][1] if spans else None
    return len(spans) == 1, spans[-1][1]


def judge_move(old_queue: str, new_queue: str, history: ReadHistory) -> tuple[str, str]:
    """The state of one declared consumer moving from ``old_queue`` to ``new_queue`` (the table above) and why,
    with the moments that decided."""
    last_old = max((until for _start, until in _reads(history, old_queue)), default=None)
    new = _reads(history, new_queue)
    last_new = max((until for _start, until in new), default=None)
    if last_new is not None and (last_old is None or last_new > last_old):
        since = min((start or until for start, until in new if last_old is None or until > last_old), default=last_new)
        left = f"last read {old_queue} at {_when(last_old)}" if last_old else f"never read {old_queue}"
        whole, confirmed = _covered_between(history, last_old or since)
        if not whole:
            return "unknown", (
                f"reads {new_queue} since {_when(since)} and {left}, but the recorder has a gap since, in which it "
                f"may have read {old_queue} again"
            )
        return "moved", (
            f"reads {new_queue} since {_when(since)}; {left} (the recorder covered everything since, up to "
            f"{_when(confirmed)})"
        )
    if last_old is not None and last_old >= history.window_start:
        if last_new is not None and last_new >= history.window_start:
            return "moving", (
                f"reads both {old_queue} (last at {_when(last_old)}) and {new_queue} (last at {_when(last_new)})"
            )
        return "not-moved", f"still reads {old_queue} (last at {_when(last_old)}); no read of {new_queue} after it"
    return "idle", (
        f"read neither queue since {_when(history.window_start)}: {old_queue} last at {_when(last_old)}, "
        f"{new_queue} last at {_when(last_new)}"
    )


def consumer_moves(
    catalog: Catalog,
    source: Contract,
    target: Contract,
    spec: MigrationSpec | None,
    *,
    history: ReadHistory | None,
    unknown: str | None = None,
) -> list[ConsumerMove]:
    """Per consumer of ``source``: the fields it must stop reading as they are, and whether it has moved
    (``judge_move``). ``history`` None, or ``unknown`` set: the readers are not known, and why. ``spec`` None
    (a successor without ``migration.yaml``): what must change is not known, and none is listed."""
    owners = contacts_of(catalog)
    on_target = {c.service: c for c in target.consumers}
    moves = []
    for consumer in source.consumers:
        entry = owners.get(consumer.service)
        team = consumer.team or (entry.team if entry else None)
        contact = consumer.contact or (entry.contact if entry else None)
        fates = tuple(fates_of(consumer.reads, spec, source.payload_schema)) if spec is not None else ()
        moved_to = on_target.get(consumer.service)
        if moved_to is None:
            state, why = "not-declared", f"{target.message_type} does not declare {consumer.service} as a consumer"
        elif history is None or unknown is not None:
            state, why = "unknown", f"readers are not known: {unknown or 'no reader sessions recorded'}"
        else:
            state, why = judge_move(consumer.queue, moved_to.queue, history)
        moves.append(
            ConsumerMove(
                consumer.service,
                consumer.queue,
                moved_to.queue if moved_to else None,
                team,
                contact,
                fates,
                state,
                why,
            )
        )
    return moves


def still_on_source(moves: Sequence[ConsumerMove]) -> list[ConsumerMove]:
    """The consumers that have not (provably) moved: what a retirement report lists, with their owners."""
    return [m for m in moves if m.state != "moved"]

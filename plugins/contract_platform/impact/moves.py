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

**Has it moved?** Judged from the broker, not only from the catalogue: the consumer is declared on the new
version (same service), and the reader sessions the activity recorder stored over the observation window
(and the consumers on the queues now) show it reading its new queue and no longer its old one:

=============================== ========================= ===================================================
declared on v<N>                readers seen              state
=============================== ========================= ===================================================
no                              any                       ``not-declared`` (add it to v<N>'s consumers)
yes                             new queue only            ``moved``
yes                             both queues               ``moving`` (reads both during the cutover)
yes                             old queue only, or none   ``not-moved``
yes                             unknown (gap, no recorder) ``unknown``, naming why
=============================== ========================= ===================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contract_platform.catalog.model import Catalog, Contract

from .analysis import contacts_of
from .pointers import covers, parse_read

if TYPE_CHECKING:
    from contract_platform.evidence.records import ReaderSession
    from contract_platform.migration.spec import MigrationSpec

__all__ = ["MOVE_STATES", "ConsumerMove", "FieldFate", "consumer_moves", "fates_of", "still_on_source"]

MOVE_STATES = ("moved", "moving", "not-moved", "not-declared", "unknown")


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


def consumer_moves(
    catalog: Catalog,
    source: Contract,
    target: Contract,
    spec: MigrationSpec | None,
    *,
    sessions: Sequence[ReaderSession] | None,
    unknown: str | None = None,
) -> list[ConsumerMove]:
    """Per consumer of ``source``: the fields it must stop reading as they are, and whether it has moved
    (the tables above). ``sessions``: the reader sessions on both versions' consumer queues over the
    observation window (None, or ``unknown`` set: the readers are not known, and why). ``spec`` None (a
    successor without ``migration.yaml``): what must change is not known, and none is listed."""
    owners = contacts_of(catalog)
    on_target = {c.service: c for c in target.consumers}
    reading = {s.queue for s in sessions or ()}
    moves = []
    for consumer in source.consumers:
        entry = owners.get(consumer.service)
        team = consumer.team or (entry.team if entry else None)
        contact = consumer.contact or (entry.contact if entry else None)
        fates = tuple(fates_of(consumer.reads, spec, source.payload_schema)) if spec is not None else ()
        moved_to = on_target.get(consumer.service)
        if moved_to is None:
            state, why = "not-declared", f"{target.message_type} does not declare {consumer.service} as a consumer"
        elif sessions is None or unknown is not None:
            state, why = "unknown", f"readers are not known: {unknown or 'no reader sessions recorded'}"
        else:
            old, new = consumer.queue in reading, moved_to.queue in reading
            state = "moved" if new and not old else "moving" if new else "not-moved"
            why = {
                "moved": f"reads {moved_to.queue}, no longer {consumer.queue}",
                "moving": f"reads both {consumer.queue} and {moved_to.queue}",
                "not-moved": f"no reader seen on {moved_to.queue}" + (f"; still reads {consumer.queue}" if old else ""),
            }[state]
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

"""Which consumers a schema change breaks, and which it leaves untouched (docs/consumer-impact.md).

Input: the typed changes of the compatibility engine (``ReportedChange``: ``rule``, ``path``,
``compatible`` under the contract's mode), the schemas on both sides and the version's consumers.

=========================================== ====================================================================
a consumer that declares                    is broken by a change when
=========================================== ====================================================================
``reads`` (pointers into the envelope)      the change is incompatible under the mode and one of its reads covers
                                            the change's place (``impact.pointers``: same place, an ancestor or a
                                            descendant; ``*`` over array items)
``readerSchema`` (what it accepts)          the engine, in the FORWARD direction (reader schema as the old side,
                                            the new writer schema as the new side), finds a change the reader does
                                            not accept at a place that overlaps the change's place, whatever the
                                            mode says: it is that reader's own contract
both                                        either says so
neither ("reads everything")                the change is incompatible under the mode
a reader schema that cannot be read         as "reads everything" (the safe default); lint reports the file
=========================================== ====================================================================

A change the mode allows still *reaches* the consumers whose reads cover it (or that read everything,
for a change that is more than an annotation): they are listed as ``reading`` it, neither broken nor
untouched (removing a field a consumer reads is BACKWARD compatible: the mode expects consumers to move
first). A consumer whose reader schema refuses what the new writer may send is broken even when no single change
of this diff overlaps the refusal (the writer sent it before): the refusal is listed on the consumer.
Every consumer is shown with its team and contact: the entry's own ``team``/``contact``, else the owner of a
contract the service owns in the catalogue, else the contract's owner (marked so).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contract_platform.catalog.model import Catalog, Consumer, Contract, Owner
from contract_platform.catalog.schemas import DEFAULT_DIALECT
from contract_platform.compat import Mode, Policy, ReportedChange, check_compatibility
from contract_platform.compat.rules import ANNOTATION_RULES
from contract_platform.errors import SchemaError

from .pointers import PositionIndex, Tokens, covers, format_pointer, instance_paths, parse_read

__all__ = [
    "ChangeImpact",
    "ConsumerImpact",
    "ConsumerReport",
    "ReaderRefusal",
    "contacts_of",
    "impact_of",
    "impact_of_contract",
]

EVERYTHING = "everything"


@dataclass(frozen=True)
class ReaderRefusal:
    """What a consumer's reader schema does not accept of the new writer schema (a FORWARD change)."""

    rule: str
    path: str  # into the new writer schema, or into the reader schema for what it declares and the writer lost
    pointers: tuple[str, ...]  # where it lands in the envelope
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "path": self.path, "pointers": list(self.pointers), "message": self.message}


@dataclass(frozen=True)
class ConsumerReport:
    """One consumer: what it declares, who owns it, whether this diff breaks it and by which changes."""

    service: str
    queue: str
    declares: str  # reads | readerSchema | reads+readerSchema | everything
    reads: tuple[str, ...] | None
    team: str | None
    contact: str | None
    owner_source: str  # consumer | service | contract-owner
    broken: bool
    breaking: tuple[int, ...] = ()  # indexes into ConsumerImpact.changes
    reading: tuple[int, ...] = ()  # changes the mode allows that reach what it reads
    refusals: tuple[ReaderRefusal, ...] = ()
    note: str | None = None

    @property
    def who(self) -> str:
        team = self.team or "owner unknown"
        via = " (via the contract's owner)" if self.owner_source == "contract-owner" else ""
        return f"{team}, {self.contact or 'no contact'}{via}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "service": self.service,
            "queue": self.queue,
            "declares": self.declares,
            "reads": list(self.reads) if self.reads is not None else None,
            "team": self.team,
            "contact": self.contact,
            "ownerSource": self.owner_source,
            "broken": self.broken,
            "breakingChanges": list(self.breaking),
            "readingChanges": list(self.reading),
        }
        if self.refusals:
            out["readerSchemaRefuses"] = [r.to_dict() for r in self.refusals]
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class ChangeImpact:
    """One typed change, where it lands in the envelope, and the consumers it breaks or leaves untouched."""

    change: ReportedChange
    pointers: tuple[str, ...]
    broken: tuple[str, ...]  # services
    untouched: tuple[str, ...]
    reading: tuple[str, ...] = ()  # read what the change touches, but the mode allows the change

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.change.to_dict(),
            "pointers": list(self.pointers),
            "consumers": {
                "broken": list(self.broken),
                "reading": list(self.reading),
                "untouched": list(self.untouched),
            },
        }


@dataclass(frozen=True)
class ConsumerImpact:
    """The per-consumer answer for one diff: ``changes`` in the engine's order, ``consumers`` in the catalogue's."""

    changes: tuple[ChangeImpact, ...]
    consumers: tuple[ConsumerReport, ...]
    message_type: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def broken(self) -> list[ConsumerReport]:
        return [c for c in self.consumers if c.broken]

    @property
    def untouched(self) -> list[ConsumerReport]:
        """Neither broken nor reading anything the diff changes."""
        return [c for c in self.consumers if not c.broken and not c.reading]

    @property
    def undeclared(self) -> list[ConsumerReport]:
        """Consumers judged as reading everything: no reads, or a reader schema that could not be read."""
        return [c for c in self.consumers if c.declares == EVERYTHING or c.note]

    def consumer(self, service: str) -> ConsumerReport | None:
        return next((c for c in self.consumers if c.service == service), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "messageType": self.message_type,
            "changes": [c.to_dict() for c in self.changes],
            "consumers": [c.to_dict() for c in self.consumers],
            "broken": [c.service for c in self.broken],
            "reading": [c.service for c in self.consumers if not c.broken and c.reading],
            "untouched": [c.service for c in self.untouched],
        }


def contacts_of(catalog: Catalog | None) -> dict[str, Owner]:
    """The catalogue's entry per service: the owner block of the contracts it owns (first by messageType)."""
    found: dict[str, Owner] = {}
    for contract in catalog or ():
        found.setdefault(contract.owner.service, contract.owner)
    return found


def _owner(
    consumer: Consumer, services: Mapping[str, Owner], fallback: Owner | None
) -> tuple[str | None, str | None, str]:
    if consumer.team or consumer.contact:
        entry = services.get(consumer.service)
        return (
            consumer.team or (entry.team if entry else None),
            consumer.contact or (entry.contact if entry else None),
            "consumer",
        )
    if consumer.service in services:
        entry = services[consumer.service]
        return entry.team, entry.contact, "service"
    if fallback is not None:
        return fallback.team, fallback.contact, "contract-owner"
    return None, None, "contract-owner"


def _declares(consumer: Consumer, readable: bool) -> str:
    parts = []
    if consumer.reads is not None:
        parts.append("reads")
    if consumer.reader_schema is not None and readable:
        parts.append("readerSchema")
    return "+".join(parts) or EVERYTHING


def _refusals(
    reader: Any, new_schema: Any, new_index: PositionIndex, *, policy: Policy, default_dialect: str
) -> list[ReaderRefusal]:
    verdict = check_compatibility(reader, new_schema, mode=Mode.FORWARD, policy=policy, default_dialect=default_dialect)
    reader_index = PositionIndex(reader)
    return [
        ReaderRefusal(
            str(c.rule),
            c.path,
            tuple(format_pointer(p) for p in instance_paths(c.path, c.message, new_index, reader_index)),
            c.message,
        )
        for c in verdict.breaking
    ]


def impact_of(
    changes: Sequence[ReportedChange],
    consumers: Sequence[Consumer],
    *,
    old_schema: Any,
    new_schema: Any,
    services: Mapping[str, Owner] | None = None,
    fallback_owner: Owner | None = None,
    policy: Policy | str = Policy.STRICT,
    default_dialect: str = DEFAULT_DIALECT,
    message_type: str | None = None,
) -> ConsumerImpact:
    """Per change, the consumers it breaks and those it leaves untouched; per consumer, the changes that
    break it and who to tell (the table in this module's docstring). ``old_schema``/``new_schema``: the
    payload schemas the ``changes`` were found between (the writer before and after)."""
    policy = Policy(policy)
    new_index, old_index = PositionIndex(new_schema), PositionIndex(old_schema)
    places: list[list[Tokens]] = [instance_paths(c.path, c.message, new_index, old_index) for c in changes]
    reports: list[ConsumerReport] = []
    broken_by: dict[str, set[int]] = {}
    reading: dict[str, set[int]] = {}
    for consumer in consumers:
        note = None
        refusals: list[ReaderRefusal] = []
        readable = consumer.reader_schema is not None and consumer.reader_schema_document is not None
        if consumer.reader_schema is not None and not readable:
            note = (
                f"reader schema {consumer.reader_schema!r} could not be read "
                f"({consumer.reader_schema_problem or 'not loaded'}): judged as reading everything"
            )
        elif readable:
            try:
                refusals = _refusals(
                    consumer.reader_schema_document,
                    new_schema,
                    new_index,
                    policy=policy,
                    default_dialect=default_dialect,
                )
            except SchemaError as exc:
                readable, note = (
                    False,
                    f"reader schema {consumer.reader_schema!r} does not compile ({exc}): judged as reading everything",
                )
        declares = _declares(consumer, readable)
        reads = [parse_read(r) for r in consumer.reads or ()]
        hits: set[int] = set()
        reading[consumer.service] = touched = set()
        for index, (change, landed) in enumerate(zip(changes, places, strict=True)):
            if declares == EVERYTHING or note is not None:  # the safe default: any incompatible change
                hit = not change.compatible
            else:
                hit = False
                if consumer.reads is not None and not change.compatible:
                    hit = any(covers(r, p) for r in reads for p in landed)
                if readable and not hit:
                    hit = any(
                        covers(parse_read(q), p) for refusal in refusals for q in refusal.pointers for p in landed
                    )
            reaches = declares == EVERYTHING or note is not None or any(covers(r, p) for r in reads for p in landed)
            if hit:
                hits.add(index)
            elif change.compatible and change.rule not in ANNOTATION_RULES and reaches:
                touched.add(index)
        broken_by[consumer.service] = hits
        team, contact, source = _owner(consumer, services or {}, fallback_owner)
        reports.append(
            ConsumerReport(
                service=consumer.service,
                queue=consumer.queue,
                declares=declares,
                reads=consumer.reads,
                team=team,
                contact=contact,
                owner_source=source,
                broken=bool(hits) or bool(refusals),
                breaking=tuple(sorted(hits)),
                reading=tuple(sorted(touched)),
                refusals=tuple(refusals),
                note=note,
            )
        )
    impacts = tuple(
        ChangeImpact(
            change=change,
            pointers=tuple(format_pointer(p) for p in landed),
            broken=tuple(c.service for c in consumers if index in broken_by[c.service]),
            untouched=tuple(
                c.service for c in consumers if index not in broken_by[c.service] and index not in reading[c.service]
            ),
            reading=tuple(c.service for c in consumers if index in reading[c.service]),
        )
        for index, (change, landed) in enumerate(zip(changes, places, strict=True))
    )
    return ConsumerImpact(changes=impacts, consumers=tuple(reports), message_type=message_type)


def impact_of_contract(
    contract: Contract,
    changes: Sequence[ReportedChange],
    *,
    old_schema: Any,
    new_schema: Any | None = None,
    catalog: Catalog | None = None,
    default_dialect: str | None = None,
) -> ConsumerImpact:
    """``impact_of`` for one catalogue version: its consumers, its policy, owners from ``catalog``.
    ``new_schema`` defaults to the contract's payload schema (the candidate)."""
    return impact_of(
        changes,
        contract.consumers,
        old_schema=old_schema,
        new_schema=contract.payload_schema if new_schema is None else new_schema,
        services=contacts_of(catalog),
        fallback_owner=contract.owner,
        policy=contract.compatibility_policy,
        default_dialect=default_dialect or (catalog.default_dialect if catalog else DEFAULT_DIALECT),
        message_type=contract.message_type,
    )

"""Judging archived records against a candidate version, with the record rules of archive validation (docs/replay.md).

::

    plan  = ReplayPlan(message_type, source_type, current_schema, migration)   # small, travels to Spark workers
    judge = judge_for(bundle, plan)                                               # per process, cached
    tally = Tally(); judge.replay(line, tally)                                    # one archive record line

A record is *rejected* when the candidate's payload or envelope rules (``RecordChecker``, the one set of
record rules) reject a message the current version accepts. The current version is the candidate's catalogue
with the candidate's payload schema replaced by the one the registry (or git) holds, so both sides are
judged by the same checker class. Messages the current version rejects too are ``already_invalid``
and not held against the candidate. A message of the source type (by its record: the body's type,
else its ``type`` property) that no checker can judge (a body that is not UTF-8, not JSON or nested
too deep; a rule that cannot run on it, UNCHECKABLE) is ``unreadable``, counted with its reason,
never dropped and never counted as accepted.

For a new major with a ``migration.yaml`` the records are the previous major's: each is migrated by
``migration.engine`` and the result checked as a message of the new major; the current version is the
previous major as the catalogue holds it. A message the spec cannot migrate is rejected at the pointer
the migration names (keyword ``migration``).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from contract_platform.archive_record import record_type
from contract_platform.catalog.model import Catalog
from contract_platform.errors import MessageNotMigratable
from contract_platform.impact.pointers import covers, parse_read
from contract_platform.validation.bundle import CatalogBundle
from contract_platform.validation.model import Finding
from contract_platform.validation.reasons import Reason
from contract_platform.validation.records import RecordChecker

__all__ = ["MASK", "SAMPLES", "TOP_POINTERS", "ReplayJudge", "ReplayPlan", "Tally", "judge_for"]

MASK = "***"  # as the retirement bundle masks a PII value
SAMPLES = 10  # messageIds of rejected messages kept as samples
TOP_POINTERS = 10  # (pointer, keyword) pairs shown, most frequent first
_SCHEMA_REASONS = frozenset({Reason.PAYLOAD_INVALID, Reason.ENVELOPE_INVALID})
UNREADABLE_REASONS = 10  # distinct reasons kept for unreadable messages (the count has them all)


@dataclass(frozen=True)
class ReplayPlan:
    """What one replay checks: records of ``source_type`` against the candidate ``message_type``.

    ``current_schema``: the payload schema of the version in service (None: none known, nothing is
    held against the candidate). ``migration``: the raw ``migration.yaml`` when ``source_type`` is the
    previous major (on ``source_exchange``). ``mask_ids``: messageId is a PII field, so samples are masked.
    """

    message_type: str
    source_type: str
    current_schema: Mapping[str, Any] | None = None
    migration: Mapping[str, Any] | None = None
    mask_ids: bool = False
    source_exchange: str | None = None  # the previous major's exchange, for a migration

    @property
    def migrated(self) -> bool:
        return self.migration is not None

    def key(self) -> bytes:
        return orjson.dumps(dataclasses.asdict(self), option=orjson.OPT_SORT_KEYS)


@dataclass
class Tally:
    """Counts of one replay; tallies of Spark partitions (or of queues) add up with ``merge``."""

    replayed: int = 0
    rejected: int = 0
    already_invalid: int = 0
    pointers: Counter[tuple[str, str]] = field(default_factory=Counter)
    samples: list[str] = field(default_factory=list)
    unreadable: int = 0  # messages of the source type no checker could judge
    unreadable_reasons: Counter[str] = field(default_factory=Counter)
    # rejected messages per consumer whose reads cover a rejected place (docs/consumer-impact.md)
    consumers: Counter[str] = field(default_factory=Counter)
    # for a migration: messages whose fields an old consumer reads the migration renames, transforms or drops
    changed: Counter[str] = field(default_factory=Counter)

    @property
    def rejection_rate(self) -> float:
        return self.rejected / self.replayed if self.replayed else 0.0

    def reject(
        self, findings: Iterable[tuple[str, str]], message_id: str | None, consumers: Iterable[str] = ()
    ) -> None:
        self.rejected += 1
        self.pointers.update(set(findings))
        self.consumers.update(set(consumers))
        if message_id is not None and len(self.samples) < SAMPLES:
            self.samples.append(message_id)

    def unread(self, reason: str, count: int = 1) -> None:
        """``count`` messages of the source type could not be judged, for ``reason``."""
        self.unreadable += count
        if reason in self.unreadable_reasons or len(self.unreadable_reasons) < UNREADABLE_REASONS:
            self.unreadable_reasons[reason] += count

    def merge(self, other: Tally) -> Tally:
        self.replayed += other.replayed
        self.rejected += other.rejected
        self.already_invalid += other.already_invalid
        self.pointers.update(other.pointers)
        self.consumers.update(other.consumers)
        self.changed.update(other.changed)
        self.samples.extend(other.samples[: max(0, SAMPLES - len(self.samples))])
        self.unreadable += other.unreadable
        for reason, count in other.unreadable_reasons.items():
            if reason in self.unreadable_reasons or len(self.unreadable_reasons) < UNREADABLE_REASONS:
                self.unreadable_reasons[reason] += count
        return self

    def unreadable_shown(self) -> list[dict[str, Any]]:
        """The reasons messages could not be judged, most frequent first."""
        ranked = sorted(self.unreadable_reasons.items(), key=lambda item: (-item[1], item[0]))
        return [{"reason": reason, "count": count} for reason, count in ranked]

    def top_pointers(self, most: int = TOP_POINTERS) -> list[dict[str, Any]]:
        ranked = sorted(self.pointers.items(), key=lambda item: (-item[1], item[0]))
        return [{"pointer": p, "keyword": k, "count": n} for (p, k), n in ranked[:most]]

    def to_json(self) -> str:
        return orjson.dumps(
            {
                "replayed": self.replayed,
                "rejected": self.rejected,
                "already_invalid": self.already_invalid,
                "pointers": [[p, k, n] for (p, k), n in self.pointers.items()],
                "samples": self.samples,
                "unreadable": self.unreadable,
                "unreadable_reasons": [[reason, n] for reason, n in self.unreadable_reasons.items()],
                "consumers": [[service, n] for service, n in self.consumers.items()],
                "changed": [[service, n] for service, n in self.changed.items()],
            }
        ).decode("utf-8")

    @classmethod
    def from_json(cls, text: str | bytes) -> Tally:
        data = orjson.loads(text)
        pointers: Counter[tuple[str, str]] = Counter({(p, k): n for p, k, n in data["pointers"]})
        reasons: Counter[str] = Counter({reason: n for reason, n in data.get("unreadable_reasons", [])})
        consumers: Counter[str] = Counter({service: n for service, n in data.get("consumers", [])})
        changed: Counter[str] = Counter({service: n for service, n in data.get("changed", [])})
        return cls(
            data["replayed"],
            data["rejected"],
            data["already_invalid"],
            pointers,
            list(data["samples"]),
            int(data.get("unreadable", 0)),
            reasons,
            consumers,
            changed,
        )


def _schema_findings(findings: Iterable[Finding]) -> list[tuple[str, str]]:
    return [(f.path, f.keyword or str(f.code)) for f in findings if f.code in _SCHEMA_REASONS]


def _why_unjudged(findings: Iterable[Finding], *, typed: bool) -> str | None:
    """Why a record could not be judged: UNCHECKABLE always; MALFORMED when its type was not read from the body."""
    for finding in findings:
        if finding.code is Reason.UNCHECKABLE or (finding.code is Reason.MALFORMED and not typed):
            return f"{finding.code}: {finding.message}"
    return None


def _typed_as(line: str | bytes, message_type: str) -> bool:
    """Does the record ``line`` say it is a ``message_type`` message (its ``type`` property, a type header)?"""
    try:
        record = orjson.loads(line)
        return isinstance(record, dict) and record_type(record) == message_type
    except (orjson.JSONDecodeError, RecursionError, TypeError, ValueError, AttributeError):
        return False


class ReplayJudge:
    """The record checkers of one plan; ``replay`` adds one record line to a tally.

    ``checker``: the catalogue's own ``RecordChecker``, when one is at hand; it is the candidate's checker
    of every plan of that catalogue, so the judges of one run share it (``judge_for``).
    """

    def __init__(self, catalog: Catalog, plan: ReplayPlan, checker: RecordChecker | None = None) -> None:
        self.plan = plan
        target = catalog.get(plan.message_type)
        # What each consumer of the candidate reads (None: everything), to count the rejections it would see
        self.readers = [
            (c.service, None if c.reads is None else [parse_read(r) for r in c.reads])
            for c in (target.consumers if target is not None else ())
        ]
        self.candidate_checker = checker if checker is not None else RecordChecker(catalog)
        self.current_checker = self.candidate_checker
        self.migrate: Any = None
        self.changes_for: list[tuple[str, frozenset[str]]] = []  # old consumer -> payload fields it must re-read
        if plan.migrated:
            from contract_platform.impact.moves import fates_of
            from contract_platform.migration.engine import compile_spec
            from contract_platform.migration.spec import parse_spec

            target = catalog.get(plan.message_type)
            assert target is not None and plan.migration is not None
            spec = parse_spec(plan.migration, str(target.migration_file))
            self.migrate = compile_spec(spec).for_target(target)
            source = catalog.get(plan.source_type)
            if source is not None:
                for consumer in source.consumers:
                    fates = fates_of(consumer.reads, spec, source.payload_schema)
                    fields = frozenset(parse_read(f.field)[1] for f in fates if len(parse_read(f.field)) > 1)
                    if fields:
                        self.changes_for.append((consumer.service, fields))
        elif plan.current_schema is not None:
            candidate = catalog.get(plan.message_type)
            assert candidate is not None
            current = dataclasses.replace(candidate, payload_schema=plan.current_schema)
            contracts = {**catalog.contracts, plan.message_type: current}
            self.current_checker = RecordChecker(dataclasses.replace(catalog, contracts=contracts))

    def replay(self, line: str | bytes, tally: Tally) -> bool:
        """Judge one record line; False when it is not a message of the plan's source type (not counted).

        The candidate's checker runs first: a record it accepts (nearly all) costs one check. Only a
        record it rejects is checked by the current version too, to tell rejected from already invalid.
        """
        first = self.current_checker if self.migrate is not None else self.candidate_checker
        checked = first.check(line)
        if checked.message_type != self.plan.source_type:
            if checked.message_type is None and _typed_as(line, self.plan.source_type):
                why = _why_unjudged(checked.findings, typed=False)
                tally.unread(why or "the body names no messageType")
                return True
            return False
        why = _why_unjudged(checked.findings, typed=True)
        if why is not None:
            tally.unread(why)
            return True
        tally.replayed += 1
        if self.migrate is not None:
            if _schema_findings(checked.findings):
                tally.already_invalid += 1
                return True
            found = self._migrated_findings(line, tally)
        else:
            found = _schema_findings(checked.findings)
            if found and self.current_checker is not self.candidate_checker:
                if _schema_findings(self.current_checker.check(line).findings):
                    tally.already_invalid += 1
                    return True
            elif found:  # no current version known: what the candidate rejects was never accepted either
                tally.already_invalid += 1
                return True
        if found:
            message_id = checked.message_id
            masked = MASK if self.plan.mask_ids and message_id is not None else message_id
            tally.reject(found, masked, self._reached(found))
        return True

    def _reached(self, found: Iterable[tuple[str, str]]) -> list[str]:
        """The consumers whose reads cover a place the candidate rejects (one that reads everything: any)."""
        places = [parse_read(pointer) for pointer, _ in found]
        return [
            service
            for service, reads in self.readers
            if reads is None or any(covers(read, place) for read in reads for place in places)
        ]

    def _migrated_findings(self, line: str | bytes, tally: Tally) -> list[tuple[str, str]]:
        record = orjson.loads(line)
        try:
            envelope = orjson.loads(record["body"])
            payload = envelope.get("payload") if isinstance(envelope, dict) else None
            if isinstance(payload, dict):  # what the migration changes of what each old consumer reads
                tally.changed.update(service for service, fields in self.changes_for if not fields.isdisjoint(payload))
            record["body"] = orjson.dumps(self.migrate(envelope)).decode("utf-8")
        except MessageNotMigratable as exc:
            return [(exc.pointer or "", "migration")]
        except (KeyError, TypeError, orjson.JSONDecodeError):
            return [("/body", "migration")]
        record.pop("bodyBase64", None)
        return _schema_findings(self.candidate_checker.check(orjson.dumps(record)).findings)


_JUDGES: dict[tuple[str, str, bytes], ReplayJudge] = {}
_CHECKERS: dict[tuple[str, str], RecordChecker] = {}  # the catalogue's checker, shared by its plans' judges
_LOCK = threading.Lock()


def judge_for(bundle: CatalogBundle, plan: ReplayPlan) -> ReplayJudge:
    """This process's judge for ``bundle`` and ``plan``, built on first use (schemas compile once).

    The catalogue is loaded and its checker built once per bundle, not once per plan: a run that
    replays several versions of one catalogue pays for it once (in a Spark worker, or in ``contractctl``).
    """
    key = (bundle.root, bundle.fingerprint, plan.key())
    with _LOCK:
        judge = _JUDGES.get(key)
        if judge is None:
            checker = _CHECKERS.get(key[:2])
            if checker is None:
                checker = _CHECKERS[key[:2]] = RecordChecker(bundle.load())
            judge = ReplayJudge(checker.catalog, plan, checker)
            _JUDGES[key] = judge
        return judge

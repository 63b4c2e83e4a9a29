"""The figures of each evidence kind, typed: one frozen dataclass per kind, snake_case everywhere.

A figures class names its kind (``KIND``); its field names are the JSON keys stored in the registry
(``to_json``), and ``from_json`` reads them back. Reading is forgiving, because the registry on a
user's machine holds rows written by older versions:

- camelCase keys (``auditedAt``, ``semverProblems``, ``messageType``, ``clearsAt`` of a blocker) are
  read as their snake_case twins, which win when both are present;
- a missing key takes the field's default; a value of the wrong JSON type is read as the default too
  (``None`` for the optional counts), so a guard can say "record it again" instead of failing;
- keys no field names are left out of the typed view (the stored row keeps them).

``figures_of(record)`` gives the typed figures of a stored ``EvidenceRecord``; ``KIND_FIGURES`` maps
each kind to its class. The store hands out every row's figures through ``in_key_style``, so older
rows show snake_case keys to every reader, not only to the typed ones.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin, get_type_hints

from contract_platform.evidence import EvidenceKind
from contract_platform.evidence.records import EvidenceRecord

__all__ = [
    "KIND_FIGURES",
    "ArchiveRetentionFigures",
    "ArchiveValidationFigures",
    "CompatibilityFigures",
    "EnvelopeQualityFigures",
    "Figures",
    "FixturesFigures",
    "LintFigures",
    "MigrationParityFigures",
    "MigrationSpecFigures",
    "ProducerTraffic",
    "ObstacleFigures",
    "CoverageSpanFigures",
    "DeadLetterPurgeFigures",
    "ReaderSessionFigures",
    "ReadersFigures",
    "ReplayFigures",
    "RetiredTrafficFigures",
    "RetirementAuditFigures",
    "RuntimeValidationFigures",
    "TopologyFigures",
    "figures_of",
    "in_key_style",
    "snake_case",
]

F = TypeVar("F", bound="Figures")

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def snake_case(key: str) -> str:
    """``semverProblems`` -> ``semver_problems``; a snake_case key is returned as is."""
    return _CAMEL.sub(lambda match: "_" + match.group(1).lower(), key)


def _snake_keys(data: Mapping[str, Any]) -> dict[str, Any]:
    """Top-level keys in snake_case; a key already in snake_case wins over its camelCase twin."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = snake_case(str(key))
        if name == key or name not in data:
            out[name] = value
    return out


def _read(kind_hint: Any, value: Any, default: Any) -> Any:
    """``value`` as the field's type says, or ``default`` when the JSON holds something else."""
    origin = get_origin(kind_hint)
    if origin in (Union, types.UnionType):
        options = [option for option in get_args(kind_hint) if option is not type(None)]
        if value is None:
            return None
        for option in options:
            read = _read(option, value, _NOT_READ)
            if read is not _NOT_READ:
                return read
        return default
    if kind_hint is Any:
        return value
    if kind_hint is bool:
        return value if isinstance(value, bool) else default
    if kind_hint is int:
        return value if isinstance(value, int) and not isinstance(value, bool) else default
    if kind_hint is float:
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default
    if kind_hint is str:
        return value if isinstance(value, str) else default
    if origin is tuple:
        if not isinstance(value, list | tuple):
            return default
        (item,) = get_args(kind_hint)[:1]
        read_items = [_read(item, entry, _NOT_READ) for entry in value]
        return tuple(entry for entry in read_items if entry is not _NOT_READ)
    if origin is Mapping or kind_hint is Mapping:
        return dict(value) if isinstance(value, Mapping) else default
    return value


_NOT_READ = object()


def _json(value: Any) -> Any:
    """Tuples become lists and mappings plain dicts, recursively: what ``json.dumps`` writes."""
    if isinstance(value, Mapping):
        return {str(key): _json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json(item) for item in value]
    return value


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(figures_class: type) -> dict[str, Any]:
    """Field types, resolved once per class (a guard reads every record of a validation window)."""
    found = _HINTS.get(figures_class)
    if found is None:
        found = _HINTS[figures_class] = get_type_hints(figures_class)
    return found


@dataclass(frozen=True)
class Figures:
    """Base of every kind's figures: ``to_json`` and ``from_json`` live here, once."""

    KIND: ClassVar[EvidenceKind]

    def to_json(self) -> dict[str, Any]:
        """The JSON object stored in the registry: one snake_case key per field.

        A field that is None and None by default is left out (reading it back gives None again), so a
        kind's optional parts (replay's decision on compatibility, a run's interval) show only when set.
        """
        return {
            item.name: _json(getattr(self, item.name))
            for item in fields(self)
            if not (getattr(self, item.name) is None and item.default is None)
        }

    @classmethod
    def from_json(cls: type[F], data: Mapping[str, Any]) -> F:
        """Read stored figures, including rows written by older versions (see the module docstring)."""
        source = cls._upgrade(_snake_keys(data if isinstance(data, Mapping) else {}))
        hints = _hints(cls)
        values: dict[str, Any] = {}
        for item in fields(cls):
            if item.default is not MISSING:
                default = item.default
            elif item.default_factory is not MISSING:
                default = item.default_factory()
            else:  # every figures field has a default; a subclass without one still reads
                default = None
            values[item.name] = _read(hints[item.name], source[item.name], default) if item.name in source else default
        return cls(**values)

    @classmethod
    def of(cls: type[F], record: EvidenceRecord) -> F:
        """The typed figures of ``record``, which must be of this class's kind."""
        if record.kind is not cls.KIND:
            raise ValueError(f"evidence #{record.id} is {record.kind} evidence, not {cls.KIND}")
        return cls.from_json(record.figures)

    @classmethod
    def _upgrade(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Kind-specific reading of older rows below the top level; most kinds need none."""
        return data


# -- catalogue checks: counted for the contract's current version -----------------------------------


@dataclass(frozen=True)
class LintFigures(Figures):
    """The contract's lint findings other than the fixture rules; fail iff any is an error."""

    KIND: ClassVar[EvidenceKind] = EvidenceKind.LINT

    errors: int = 0
    warnings: int = 0
    findings: tuple[Mapping[str, Any], ...] = ()  # the first 50, as ``Finding.to_dict`` gives them
    fixtures: int = 0  # how many fixtures the contract has


@dataclass(frozen=True)
class FixturesFigures(LintFigures):
    """The findings of the fixture rules alone (same figures as lint)."""

    KIND: ClassVar[EvidenceKind] = EvidenceKind.FIXTURES


@dataclass(frozen=True)
class CompatibilityFigures(Figures):
    """The schema against the earlier versions of its major the registry has seen."""

    KIND: ClassVar[EvidenceKind] = EvidenceKind.COMPATIBILITY

    message_type: str | None = None
    mode: str | None = None
    policy: str | None = None
    against: tuple[str, ...] = ()
    compatible: bool | None = None
    ok: bool | None = None
    changes: tuple[Mapping[str, Any], ...] = ()
    semver_problems: tuple[str, ...] = ()
    note: str | None = None  # set when there was nothing to compare with
    # When replay changed the version's compatibility (docs/replay.md): decided_by is "replay".
    decided_by: str | None = None
    decision: str | None = None
    static_verdict: str | None = None
    replayed: int | None = None
    rejected: int | None = None
    top_pointers: tuple[Mapping[str, Any], ...] = ()
    reasons: tuple[str, ...] = ()
    # Per consumer (docs/consumer-impact.md): which consumers the change breaks, with their owners; and the
    # readers perspective's decision when the contract asked for it (decided_by "readers" when it accepted).
    impact: Mapping[str, Any] | None = None
    perspective: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class TopologyFigures(Figures):
    """What provisioning declared on the broker, step by step."""

    KIND: ClassVar[EvidenceKind] = EvidenceKind.TOPOLOGY

    broker: str | None = None
    message_type: str | None = None
    steps: tuple[Mapping[str, Any], ...] = ()  # kind, name, outcome, detail


@dataclass(frozen=True)
class MigrationSpecFigures(Figures):
    """``migration.yaml`` of a new major checked against both schemas and the fixtures."""

    KIND: ClassVar[EvidenceKind] = EvidenceKind.MIGRATION_SPEC

    source: str | None = None
    target: str | None = None
    ok: bool | None = None
    fixtures_checked: int = 0
    problem_count: int = 0
    problems: tuple[str, ...] = ()


# -- traffic evidence: about the message type on the wire -------------------------------------------


@dataclass(frozen=True)
class ArchiveValidationFigures(Figures):
    """One archive validation run for one message type; ``total``/``invalid`` are None when unreadable."""

    KIND: ClassVar[EvidenceKind] = EvidenceKind.ARCHIVE_VALIDATION

    total: int | None = None
    invalid: int | None = None
    invalid_rate: float | None = None
    by_reason: Mapping[str, int] = field(default_factory=dict)
    window: Mapping[str, Any] = field(default_factory=dict)
    invalid_rate_target: float | None = None
    interval: Mapping[str, Any] | None = None  # the days an incremental run covered (since, until)
    # Earlier days (ISO dates) the run's cross-day rules could not see (docs/archive-validation.md): no
    # state and no readable archive partition inside the dedup window. Rows of older versions have none.
    incomplete_duplicates: tuple[str, ...] = ()
    incomplete_ordering: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Duplicates and ordering were checked against every earlier day they needed."""
        return not self.incomplete_duplicates and not self.incomplete_ordering

    @property
    def interval_key(self) -> tuple[Any, Any] | None:
        """``(since, until)`` of an incremental run; None for a whole-archive run."""
        if not self.interval or not (self.interval.get("since") or self.interval.get("until")):
            return None
        return (self.interval.get("since"), self.interval.get("until"))


@dataclass(frozen=True)
class ProducerTraffic:
    """What one producer sent to a retired version (``RetiredTrafficFigures.by_producer``)."""

    producer: str  # "" when the messages named none
    messages: int
    first_received_at: str | None
    last_received_at: str | None


@dataclass(frozen=True)
class RetiredTrafficFigures(Figures):
    """Messages an archive validation found on a version after its retirement (reason ``RETIRED_TYPE``): who
    still publishes it, how many, first and last received. Always an alarm: the verdict is fail."""

    KIND: ClassVar[EvidenceKind] = EvidenceKind.RETIRED_TRAFFIC

    messages: int = 0
    first_received_at: str | None = None
    last_received_at: str | None = None
    retired_at: str | None = None  # when the version was retired, as the validation read it from the registry
    # per producer, most messages first: producer ("" unnamed), messages, first_received_at, last_received_at
    producers: tuple[Mapping[str, Any], ...] = ()
    interval: Mapping[str, Any] | None = None  # the days the validation covered (since, until)

    @property
    def by_producer(self) -> tuple[ProducerTraffic, ...]:
        """``producers``, typed (an entry of the wrong shape reads as what it holds, else as unnamed or 0)."""
        return tuple(
            ProducerTraffic(
                producer=name if isinstance(name := entry.get("producer"), str) else "",
                messages=count
                if isinstance(count := entry.get("messages"), int) and not isinstance(count, bool)
                else 0,
                first_received_at=first if isinstance(first := entry.get("first_received_at"), str) else None,
                last_received_at=last if isinstance(last := entry.get("last_received_at"), str) else None,
            )
            for entry in self.producers
        )


@dataclass(frozen=True)
class EnvelopeQualityFigures(Figures):
    """The envelope expectations over real traffic; pass iff every one met its threshold."""

    KIND: ClassVar[EvidenceKind] = EvidenceKind.ENVELOPE_QUALITY

    evaluated: int = 0
    failed: int = 0
    failed_expectations: tuple[str, ...] = ()
    unexpected: Mapping[str, Any] = field(default_factory=dict)
    samples: Mapping[str, Any] = field(default_factory=dict)
    rows: int = 0
    mostly: Mapping[str, Any] = field(default_factory=dict)
    skipped: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MigrationParityFigures(Figures):
    """Dual publishing or the bridge, v1 against v2: recorded under the older message type."""

    KIND: ClassVar[EvidenceKind] = EvidenceKind.MIGRATION_PARITY

    mode: str | None = None  # "bridge" or "dual-publish"
    target: str | None = None
    parity: float | None = None
    v1_total: int = 0
    v2_total: int = 0
    matched: int = 0
    missing: int = 0
    missing_not_migratable: int = 0
    extra: int = 0
    duplicates: int = 0
    redeliveries: int = 0
    mismatches: int = 0
    out_of_order: int = 0
    ordering_checked: bool = False
    lag_p50_ms: float | None = None
    lag_p99_ms: float | None = None
    samples: Mapping[str, Any] = field(default_factory=dict)
    window: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RetirementAuditFigures(Figures):
    """One retirement audit: every check, and the blockers with when each might clear."""

    KIND: ClassVar[EvidenceKind] = EvidenceKind.RETIREMENT_AUDIT

    verdict: str | None = None
    audited_at: str | None = None  # ISO 8601, Z
    failed_checks: tuple[str, ...] = ()
    blockers: tuple[Mapping[str, Any], ...] = ()  # check, verdict, blocker, clears_at
    clears_at: Mapping[str, str | None] = field(default_factory=dict)  # check name -> ISO 8601 or None
    checks: Mapping[str, Any] = field(default_factory=dict)  # check name -> its result and figures

    @classmethod
    def _upgrade(cls, data: dict[str, Any]) -> dict[str, Any]:
        blockers = data.get("blockers")
        if isinstance(blockers, list | tuple):
            data["blockers"] = [_snake_keys(b) if isinstance(b, Mapping) else b for b in blockers]
        checks = data.get("checks")
        if isinstance(checks, Mapping):
            data["checks"] = {
                name: (_snake_keys(check) if isinstance(check, Mapping) else check) for name, check in checks.items()
            }
        return data


# -- the readers check of a retirement audit: its figures, typed -------------------------------------------
# A check's figures are stored inside the audit's (``RetirementAuditFigures.checks["readers"]["figures"]``) in
# camelCase, as the audit has always written them; ``retirement.readers`` writes them through these classes
# and the Contracts page reads them back through them, so the keys live here only.


def _text_or_none(value: Any) -> str | None:
    text: str | None = _read(str, value, None)  # the rule every figures field is read by
    return text


def _count_or_none(value: Any) -> int | None:
    count: int | None = _read(int, value, None)
    return count


def _objects(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list | tuple) else []


@dataclass(frozen=True)
class ReaderSessionFigures:
    """One reader session on a version's queue (times ISO 8601, Z; None: before the window, or still attached)."""

    queue: str
    vhost: str | None = None
    consumer_tag: str | None = None
    connection: str | None = None
    peer_host: str | None = None
    user: str | None = None
    attached_at: str | None = None
    detached_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "vhost": self.vhost,
            "consumerTag": self.consumer_tag,
            "connection": self.connection,
            "peerHost": self.peer_host,
            "user": self.user,
            "attachedAt": self.attached_at,
            "detachedAt": self.detached_at,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReaderSessionFigures:
        return cls(
            queue=str(data.get("queue") or ""),
            vhost=_text_or_none(data.get("vhost")),
            consumer_tag=_text_or_none(data.get("consumerTag")),
            connection=_text_or_none(data.get("connection")),
            peer_host=_text_or_none(data.get("peerHost")),
            user=_text_or_none(data.get("user")),
            attached_at=_text_or_none(data.get("attachedAt")),
            detached_at=_text_or_none(data.get("detachedAt")),
        )


@dataclass(frozen=True)
class CoverageSpanFigures:
    """A stretch the recorder covered (a segment: ``note`` is how it ended) or could not see (a gap: why)."""

    start: str | None
    end: str | None
    note: str | None = None

    def segment_json(self) -> dict[str, Any]:
        return {"from": self.start, "until": self.end, "endReason": self.note}

    def gap_json(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "reason": self.note}

    @classmethod
    def from_segment_json(cls, data: Mapping[str, Any]) -> CoverageSpanFigures:
        return cls(
            _text_or_none(data.get("from")), _text_or_none(data.get("until")), _text_or_none(data.get("endReason"))
        )

    @classmethod
    def from_gap_json(cls, data: Mapping[str, Any]) -> CoverageSpanFigures:
        return cls(_text_or_none(data.get("start")), _text_or_none(data.get("end")), _text_or_none(data.get("reason")))


@dataclass(frozen=True)
class ObstacleFigures:
    """Something that stops the readers check from passing: a reader, a gap, a deleted queue, moved counters."""

    kind: str
    verdict: str
    start: str | None
    end: str | None
    text: str
    queue: str | None = None
    who: Mapping[str, Any] | None = None  # the reader's connection, user and peer, when a reader is the obstacle

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "kind": self.kind,
            "verdict": self.verdict,
            "start": self.start,
            "end": self.end,
            "text": self.text,
        }
        if self.queue is not None:
            shown["queue"] = self.queue
        if self.who:
            shown["who"] = dict(self.who)
        return shown

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ObstacleFigures:
        return cls(
            kind=str(data.get("kind") or ""),
            verdict=str(data.get("verdict") or "unknown"),
            start=_text_or_none(data.get("start")),
            end=_text_or_none(data.get("end")),
            text=str(data.get("text") or ""),
            queue=_text_or_none(data.get("queue")),
            who=dict(who) if isinstance(who := data.get("who"), Mapping) else None,
        )


@dataclass(frozen=True)
class ReadersFigures:
    """The figures of a retirement audit's ``readers`` check (docs/retirement.md#readers)."""

    required_observations: int | None = None
    required_span: str | None = None
    clean_since: str | None = None
    clean_seconds: int | None = None
    audits: int | None = None
    window_start: str | None = None
    window_end: str | None = None
    segments: tuple[CoverageSpanFigures, ...] = ()
    gaps: tuple[CoverageSpanFigures, ...] = ()
    sessions: tuple[ReaderSessionFigures, ...] = ()
    obstacles: tuple[ObstacleFigures, ...] = ()
    queues: tuple[str, ...] = ()
    empty_polls_not_visible: tuple[str, ...] = ()
    passes_at: str | None = None
    passed_at: str | None = None
    note: str | None = None  # a check that had nothing to judge says why

    def to_json(self) -> dict[str, Any]:
        """The JSON the audit stores; keys absent from a check that did not reach them stay absent."""
        shown: dict[str, Any] = {"required": {"observations": self.required_observations, "span": self.required_span}}
        if self.note is not None:
            shown["note"] = self.note
        if self.window_start is None and self.clean_since is None:
            return shown
        shown |= {
            "cleanSince": self.clean_since,
            "cleanSeconds": self.clean_seconds,
            "audits": self.audits,
            "window": {"start": self.window_start, "end": self.window_end},
            "coverage": {
                "segments": [span.segment_json() for span in self.segments],
                "gaps": [span.gap_json() for span in self.gaps],
            },
            "sessions": [session.to_json() for session in self.sessions],
            "obstacles": [obstacle.to_json() for obstacle in self.obstacles],
            "queues": list(self.queues),
            "emptyPollsNotVisible": list(self.empty_polls_not_visible),
        }
        if self.passed_at is not None:
            shown["passedAt"] = self.passed_at
        if self.passes_at is not None:
            shown["passesAt"] = self.passes_at
        return shown

    @classmethod
    def from_json(cls, data: Any) -> ReadersFigures:
        """Read stored figures forgivingly: what is missing or of the wrong type reads as unknown."""
        data = data if isinstance(data, Mapping) else {}
        required = data.get("required") if isinstance(data.get("required"), Mapping) else {}
        window = data.get("window") if isinstance(data.get("window"), Mapping) else {}
        coverage = data.get("coverage") if isinstance(data.get("coverage"), Mapping) else {}
        queues, empty = data.get("queues"), data.get("emptyPollsNotVisible")
        return cls(
            required_observations=_count_or_none(required.get("observations")),
            required_span=_text_or_none(required.get("span")),
            clean_since=_text_or_none(data.get("cleanSince")),
            clean_seconds=_count_or_none(data.get("cleanSeconds")),
            audits=_count_or_none(data.get("audits")),
            window_start=_text_or_none(window.get("start")),
            window_end=_text_or_none(window.get("end")),
            segments=tuple(CoverageSpanFigures.from_segment_json(s) for s in _objects(coverage.get("segments"))),
            gaps=tuple(CoverageSpanFigures.from_gap_json(g) for g in _objects(coverage.get("gaps"))),
            sessions=tuple(ReaderSessionFigures.from_json(s) for s in _objects(data.get("sessions"))),
            obstacles=tuple(ObstacleFigures.from_json(o) for o in _objects(data.get("obstacles"))),
            queues=tuple(str(q) for q in queues) if isinstance(queues, list | tuple) else (),
            empty_polls_not_visible=tuple(str(q) for q in empty) if isinstance(empty, list | tuple) else (),
            passes_at=_text_or_none(data.get("passesAt")),
            passed_at=_text_or_none(data.get("passedAt")),
            note=_text_or_none(data.get("note")),
        )


@dataclass(frozen=True)
class ReplayFigures(Figures):
    """Archived and in-flight traffic replayed against a candidate version (docs/replay.md)."""

    KIND: ClassVar[EvidenceKind] = EvidenceKind.REPLAY

    window_days: int = 0
    since: str | None = None  # ISO date
    until: str | None = None
    min_messages: int = 0
    threshold: float = 0.0
    tightening: str | None = None  # "static" or "evidence"
    source_type: str | None = None
    migrated: bool = False
    replayed: int = 0
    rejected: int = 0
    rejection_rate: float = 0.0
    already_invalid: int = 0
    top_pointers: tuple[Mapping[str, Any], ...] = ()
    sample_message_ids: tuple[str, ...] = ()
    in_flight: Mapping[str, Any] = field(default_factory=dict)  # inspected, rejected, queues, note
    static_verdict: str | None = None
    narrowing_only: bool = False
    decision: str | None = None
    reasons: tuple[str, ...] = ()
    # per consumer: service, reads (declared | everything), archived_rejected, in_flight_rejected
    consumers: tuple[Mapping[str, Any], ...] = ()
    # for a migration, per consumer of the old major: service, archived_changed, in_flight_changed
    source_consumers: tuple[Mapping[str, Any], ...] = ()
    # the window's days past retention.archive, deleted and not replayed ({} when none): exchange, window,
    # deleted_since, deleted_until (the first day replayed), deleted_days, replayed_days
    archive_retention: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RuntimeValidationFigures(Figures):
    """What one service's guards counted for one message type over one flush period (``contract_platform.client``,
    docs/service-client.md#runtime-evidence): recorded under the type on the wire, at the bundle's version of it.

    ``checked`` = ``valid`` + ``tolerated`` + ``rejected``: every message a guard judged against the contract
    (before publishing, or before the handler). ``rejected`` counts contract violations only (``by_reason``,
    the guard's reason codes); a handler's own refusals are ``business_rejected``, never in the rate.
    """

    KIND: ClassVar[EvidenceKind] = EvidenceKind.RUNTIME_VALIDATION

    service: str | None = None
    side: str | None = None  # "publish" or "consume"
    since: str | None = None  # ISO 8601, Z: the period the counts cover
    until: str | None = None
    checked: int = 0
    valid: int = 0
    tolerated: int = 0  # accepted through the tolerant reader (unknown enum values with a policy, added fields)
    rejected: int = 0
    by_reason: Mapping[str, int] = field(default_factory=dict)
    migrated: int = 0  # read through migration.yaml into another major (consume side)
    migrated_to: Mapping[str, int] = field(default_factory=dict)
    business_rejected: int = 0
    dropped: int = 0  # counts of earlier periods this service could not deliver to the registry and dropped
    bundle: str | None = None  # the bundle's checksum
    invalid_rate: float | None = None  # rejected / checked
    invalid_rate_target: float | None = None  # validation.invalidRateTarget of the contract


@dataclass(frozen=True)
class ArchiveRetentionFigures(Figures):
    """Archive partitions deleted once past ``retention.archive`` (``contract_platform.retention``): where, how
    many files, records and bytes; never a record's content. Recorded for every contract of the exchange, whose
    partitions hold every version it carries."""

    KIND: ClassVar[EvidenceKind] = EvidenceKind.ARCHIVE_RETENTION

    exchange: str | None = None
    window: str | None = None  # the exchange's retention.archive, e.g. "90d"
    before: str | None = None  # ISO date: every partition of a day before this one was past the window
    partitions: tuple[Mapping[str, Any], ...] = ()  # per partition: day, files, records, bytes
    files: int = 0
    records: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class DeadLetterPurgeFigures(Figures):
    """Dead letters older than ``retention.dlq`` removed from one DLQ or parking lot (``contractctl retention
    purge-dead-letters``): how many, their message ids, never a body."""

    KIND: ClassVar[EvidenceKind] = EvidenceKind.DEAD_LETTER_PURGE

    queue: str | None = None
    vhost: str | None = None
    window: str | None = None  # retention.dlq, e.g. "14d"
    older_than: str | None = None  # ISO 8601: what was removed had died before this moment
    removed: int = 0
    kept: int = 0  # younger, or of an age nothing tells: requeued in order
    age_unknown: int = 0  # of the kept: neither a timestamp property nor an x-death time tells their age
    message_ids: tuple[str, ...] = ()  # of the removed; "" for a message without one


KIND_FIGURES: dict[EvidenceKind, type[Figures]] = {
    figures.KIND: figures
    for figures in (
        LintFigures,
        FixturesFigures,
        CompatibilityFigures,
        TopologyFigures,
        MigrationSpecFigures,
        ArchiveValidationFigures,
        EnvelopeQualityFigures,
        MigrationParityFigures,
        RetirementAuditFigures,
        ReplayFigures,
        RuntimeValidationFigures,
        RetiredTrafficFigures,
        ArchiveRetentionFigures,
        DeadLetterPurgeFigures,
    )
}


def in_key_style(kind: EvidenceKind, figures: Mapping[str, Any]) -> dict[str, Any]:
    """Stored figures with the keys of today (snake_case), every value kept: what the store hands out.

    Rows written by older versions (camelCase keys) read the same as new ones everywhere, the UI and
    ``contractctl status`` included; keys no figures field names are kept as they are.
    """
    figures_class = KIND_FIGURES.get(kind, Figures)
    return figures_class._upgrade(_snake_keys(figures))


def figures_of(record: EvidenceRecord) -> Figures:
    """The typed figures of any stored record (``KIND_FIGURES[record.kind]``); use ``X.of`` for one kind."""
    try:
        kind = KIND_FIGURES[record.kind]
    except KeyError:
        raise ValueError(f"evidence #{record.id}: no figures class for kind {record.kind}") from None
    return kind.from_json(record.figures)

"""Migration parity (docs/design.md#migration-parity): is every v<N-1> message also there as v<N>, migrated as migration.yaml says?

::

    source, target, spec = parity_route(catalog, "billing.invoice-issued.v1")
    compare_twins(spec, target, v1_envelope, v2_envelope, mode=ParityMode.BRIDGE)  -> TwinComparison
    report = ParityReport(...)             # the Spark job (spark_jobs/dual_publish_parity.py) fills it
    record_parity(report, registry, run_id)  -> migration_parity evidence on the v1 (source) type

**Twins** share a messageId (docs/design.md#migrations: the migrated message is the same business fact). A v1
message is *matched* when its twin's payload and kept metadata equal what the one migration engine
(``migrate_envelope``) makes of it; *missing* without a twin (a message the spec cannot migrate is
parked by the bridge, so it is missing too); a *mismatch* otherwise. A v2 message without a v1 twin is
*extra*; every further copy of a v2 messageId is a *duplicate* (a *redelivery* when the archive marks
it redelivered: the archiver got the same delivery again; otherwise a republication, e.g. a bridge that
restarted before acknowledging). *Out of order*: a v2 message of an ordering key that arrived after one
that came later in v1. Parity holds (verdict pass) when there is v1 traffic and nothing is missing,
mismatched or out of order; extra messages and duplicates are reported, not failed (consumers
deduplicate by messageId). No v1 traffic in the window: verdict unknown (nothing proven either way).

Metadata rules, by mode (``NOT_COMPARED``): the target sets ``messageType`` and ``schemaVersion``
(compared with the target contract) and ``messageVersion`` (its major must be the target's); every
other metadata field is kept and compared, except ``publishedAt`` in dual-publish mode, where the
producer publishes each version itself, at its own moment.

``compare_batches`` runs ``compare_twins`` over Arrow batches (Spark's ``mapInArrow``); pyarrow is
imported there only, and pyspark never.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import orjson

from contract_platform import evidence
from contract_platform.catalog.documents import pointer_from_path
from contract_platform.catalog.model import Contract
from contract_platform.errors import MessageNotMigratable
from contract_platform.evidence import EvidenceRecord, Registry, Verdict
from contract_platform.evidence.figures import MigrationParityFigures
from contract_platform.migration.cutover import consumer_queues, cutover_series, observe_cutover
from contract_platform.migration.engine import migrate_envelope
from contract_platform.migration.route import parity_route
from contract_platform.migration.spec import MigrationSpec

__all__ = [
    "COMPARED_COLUMNS",
    "NOT_COMPARED",
    "SAMPLE_KINDS",
    "SAMPLE_LIMIT",
    "ParityMode",
    "ParityReport",
    "TwinComparison",
    "TwinStatus",
    "compare_batches",
    "compare_twins",
    "consumer_queues",
    "cutover_series",
    "observe_cutover",
    "parity_route",
    "record_parity",
]

SAMPLE_LIMIT = 10  # messageIds kept per kind of finding
MAX_DIFFERENCES = 20  # JSON pointers kept per mismatched pair
SAMPLE_KINDS = ("missing", "extra", "duplicates", "mismatches", "out_of_order")
SET_BY_TARGET = ("messageType", "schemaVersion", "messageVersion")


class ParityMode(StrEnum):
    """How v2 messages come to exist: the platform's bridge, or producers that publish both versions."""

    BRIDGE = "bridge"
    DUAL_PUBLISH = "dual-publish"


# Kept metadata fields that are not compared, by mode (a missing mode here is a bug, not a default).
NOT_COMPARED: Mapping[ParityMode, frozenset[str]] = {
    ParityMode.BRIDGE: frozenset(),  # the bridge keeps every field, publishedAt included
    ParityMode.DUAL_PUBLISH: frozenset({"publishedAt"}),  # each publish has its own moment
}


class TwinStatus(StrEnum):
    MATCH = "match"
    MISMATCH = "mismatch"
    MISSING = "missing"


@dataclass(frozen=True)
class TwinComparison:
    """One v1 message against its v2 twin: ``differences`` are JSON pointers into the v2 envelope."""

    status: TwinStatus
    differences: tuple[str, ...] = ()
    reason: str | None = None  # why it cannot match: not migratable, not an object...

    @property
    def matched(self) -> bool:
        return self.status is TwinStatus.MATCH

    def describe(self) -> str:
        """One line for a report: what is wrong with this message."""
        if self.status is TwinStatus.MATCH:
            return "matches"
        parts = [self.reason] if self.reason else []
        if self.differences:
            parts.append("differs at " + ", ".join(self.differences))
        text = "; ".join(parts)
        if self.status is TwinStatus.MISSING:
            return f"no v2 twin ({text})" if text else "no v2 twin"
        return text or "differs"


# -- one pair ---------------------------------------------------------------------------------------


def compare_twins(
    spec: MigrationSpec,
    target: Contract,
    v1_envelope: Any,
    v2_envelope: Any | None,
    *,
    mode: ParityMode | str = ParityMode.BRIDGE,
    private: Sequence[str] = (),
) -> TwinComparison:
    """Re-migrate ``v1_envelope`` with ``spec`` and compare it with its twin (``None``: no twin was found).

    ``private`` lists PII pointers: a reason about them is withheld (it may quote a value).
    """
    exempt = NOT_COMPARED[ParityMode(mode)]
    try:
        expected = migrate_envelope(spec, v1_envelope, target)
    except MessageNotMigratable as exc:
        status = TwinStatus.MISSING if v2_envelope is None else TwinStatus.MISMATCH
        return TwinComparison(status, (), _not_migratable(exc, private))
    if v2_envelope is None:
        return TwinComparison(TwinStatus.MISSING)
    if not isinstance(v2_envelope, Mapping):
        return TwinComparison(TwinStatus.MISMATCH, ("",), "the v2 message is not a JSON object")
    differences = [*_metadata_differences(expected["metadata"], v2_envelope.get("metadata"), target, exempt)]
    differences += _differences(expected["payload"], v2_envelope.get("payload", _ABSENT), ["payload"])
    if differences:
        return TwinComparison(TwinStatus.MISMATCH, tuple(differences[:MAX_DIFFERENCES]))
    return TwinComparison(TwinStatus.MATCH)


def _not_migratable(exc: MessageNotMigratable, private: Sequence[str]) -> str:
    pointer = exc.pointer
    if any(pointer == field or pointer.startswith(field + "/") for field in private):
        return f"not migratable: {pointer}: the value is personal data and is not shown"
    return f"not migratable: {exc}"


_ABSENT: Any = object()


def _metadata_differences(
    expected: Mapping[str, Any], actual: Any, target: Contract, exempt: frozenset[str]
) -> Iterator[str]:
    if not isinstance(actual, Mapping):
        yield "/metadata"
        return
    if actual.get("messageType") != target.message_type:
        yield "/metadata/messageType"
    if not _same(actual.get("schemaVersion", _ABSENT), target.major):
        yield "/metadata/schemaVersion"
    version = actual.get("messageVersion")
    if not isinstance(version, str) or version.split(".", 1)[0] != str(target.major):
        yield "/metadata/messageVersion"
    kept = (set(expected) | set(actual)) - set(SET_BY_TARGET) - exempt
    for name in sorted(kept):
        yield from _differences(expected.get(name, _ABSENT), actual.get(name, _ABSENT), ["metadata", name])


def _differences(expected: Any, actual: Any, path: list[Any]) -> list[str]:
    """JSON pointers where ``actual`` differs from ``expected`` (1 and 1.0 are equal; true and 1 are not)."""
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        found: list[str] = []
        for key in sorted(set(expected) | set(actual)):
            found += _differences(expected.get(key, _ABSENT), actual.get(key, _ABSENT), [*path, key])
        return found
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [
            p for i, (e, a) in enumerate(zip(expected, actual, strict=True)) for p in _differences(e, a, [*path, i])
        ]
    return [] if _same(expected, actual) else [pointer_from_path(path)]


def _same(left: Any, right: Any) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    return type(left) is type(right) and left == right


# -- Arrow batches (Spark's mapInArrow) -------------------------------------------------------------

# What ``compare_batches`` adds to the columns it passes through (the Spark job declares them as DDL).
COMPARED_COLUMNS = ("status", "differences", "reason")
_ROUTES: dict[tuple[str, str], tuple[Contract, Contract, MigrationSpec]] = {}
_LOCK = threading.Lock()


def _route_of(bundle: Any, source_type: str) -> tuple[Contract, Contract, MigrationSpec]:
    """This process's route for ``bundle`` (a ``validation.bundle.CatalogBundle``), built on first use."""
    key = (bundle.fingerprint, source_type)
    with _LOCK:
        route = _ROUTES.get(key)
        if route is None:
            route = parity_route(bundle.load(), source_type)
            _ROUTES[key] = route
        return route


def _parse(body: str | None) -> Any:
    if body is None:
        return None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            return _ABSENT


def compare_batches(
    batches: Iterable[Any], *, catalog: Any, source: str, mode: str, v1_body: str = "v1_body", v2_body: str = "v2_body"
) -> Iterator[Any]:
    """``mapInArrow`` body: every column but the two bodies passed through, then ``COMPARED_COLUMNS``.

    ``catalog`` is a ``CatalogBundle`` or a Spark broadcast of one; ``v2_body`` is null for no twin.
    """
    import pyarrow as pa

    bundle = catalog.value if hasattr(catalog, "value") else catalog
    source_contract, target, spec = _route_of(bundle, source)
    private = tuple(source_contract.pii.fields)
    for batch in batches:
        results = []
        for old, new in zip(batch.column(v1_body).to_pylist(), batch.column(v2_body).to_pylist(), strict=True):
            v1, v2 = _parse(old), _parse(new)
            if v2 is _ABSENT:
                results.append(TwinComparison(TwinStatus.MISMATCH, ("",), "the v2 body is not JSON"))
            else:
                results.append(compare_twins(spec, target, v1, v2, mode=mode, private=private))
        kept = [name for name in batch.schema.names if name not in (v1_body, v2_body)]
        arrays = [batch.column(name) for name in kept] + [
            pa.array([str(r.status) for r in results], type=pa.string()),
            pa.array([list(r.differences) for r in results], type=pa.list_(pa.string())),
            pa.array([r.reason for r in results], type=pa.string()),
        ]
        yield pa.RecordBatch.from_arrays(arrays, names=[*kept, *COMPARED_COLUMNS])


# -- the report and its evidence --------------------------------------------------------------------


@dataclass(frozen=True)
class ParityReport:
    """Parity of one migration over one window; ``figures()`` is what the lifecycle guards read."""

    source: str  # the v1 messageType (evidence is recorded on it)
    source_version: str
    target: str
    mode: ParityMode
    v1_total: int  # distinct v1 messageIds in the window
    v2_total: int  # distinct v2 messageIds in the window
    matched: int  # v1 messages whose twin has the migrated content
    missing: int  # v1 messages without a twin
    mismatches: int  # twins whose content differs from the migrated v1
    extra: int  # v2 messageIds without any v1 message
    duplicates: int  # v2 copies beyond the first of each messageId
    redeliveries: int  # of those, copies the archive marks redelivered
    out_of_order: int  # v2 twins that arrived after one that came later in v1 (same ordering key)
    lag_p50_ms: float | None = None  # v2 receivedAt - v1 receivedAt over the twins
    lag_p99_ms: float | None = None
    missing_not_migratable: int = 0  # of the missing: messages the spec cannot migrate (parked by the bridge)
    v1_duplicates: int = 0
    ordering_checked: bool = False
    window: Mapping[str, str | None] = field(default_factory=dict)  # since, until, first, last
    samples: Mapping[str, Sequence[str]] = field(default_factory=dict)  # kind -> messageIds
    details: Mapping[str, str] = field(default_factory=dict)  # messageId -> what is wrong (samples only)
    archive: str = ""
    elapsed_seconds: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", ParityMode(self.mode))
        unknown = set(self.samples) - set(SAMPLE_KINDS)
        if unknown:
            raise ValueError(f"unknown sample kinds {sorted(unknown)}; use {SAMPLE_KINDS}")

    @property
    def parity(self) -> float | None:
        """matched / v1_total; None without v1 traffic."""
        return self.matched / self.v1_total if self.v1_total else None

    @property
    def holds(self) -> bool:
        return self.v1_total > 0 and self.missing == 0 and self.mismatches == 0 and self.out_of_order == 0

    @property
    def verdict(self) -> Verdict:
        if self.holds:
            return Verdict.PASS
        return Verdict.UNKNOWN if self.v1_total == 0 else Verdict.FAIL

    @property
    def exit_code(self) -> int:
        return 0 if self.holds else 1

    def problems(self) -> list[str]:
        """Why parity does not hold, one sentence per finding that fails it."""
        found = []
        if self.v1_total == 0:
            found.append(f"no {self.source} message in the window: parity cannot be decided")
        if self.missing:
            parked = f", {self.missing_not_migratable} of them not migratable" if self.missing_not_migratable else ""
            found.append(f"{self.missing} {self.source} messages have no {self.target} twin{parked}")
        if self.mismatches:
            found.append(f"{self.mismatches} {self.target} messages differ from the migrated {self.source} message")
        if self.out_of_order:
            found.append(f"{self.out_of_order} {self.target} messages arrived out of their {self.source} order")
        return found

    def evidence_figures(self) -> MigrationParityFigures:
        """The ``migration_parity`` evidence figures (what the guards and ``contractctl migration`` read)."""
        return MigrationParityFigures(
            mode=str(self.mode),
            target=self.target,
            parity=self.parity,
            v1_total=self.v1_total,
            v2_total=self.v2_total,
            matched=self.matched,
            missing=self.missing,
            missing_not_migratable=self.missing_not_migratable,
            extra=self.extra,
            duplicates=self.duplicates,
            redeliveries=self.redeliveries,
            mismatches=self.mismatches,
            out_of_order=self.out_of_order,
            ordering_checked=self.ordering_checked,
            lag_p50_ms=self.lag_p50_ms,
            lag_p99_ms=self.lag_p99_ms,
            samples={kind: list(self.samples.get(kind, ()))[:SAMPLE_LIMIT] for kind in SAMPLE_KINDS},
            window=dict(self.window),
        )

    def figures(self) -> dict[str, Any]:
        """The evidence figures as stored (snake_case JSON)."""
        return self.evidence_figures().to_json()

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "sourceVersion": self.source_version,
            "target": self.target,
            "verdict": str(self.verdict),
            "holds": self.holds,
            "problems": self.problems(),
            **{key: value for key, value in self.figures().items() if key != "target"},
            "v1_duplicates": self.v1_duplicates,
            "details": dict(self.details),
            "archive": self.archive,
            "elapsed_seconds": round(self.elapsed_seconds, 3),
        }


def record_parity(
    report: ParityReport, registry: Registry, run_id: str | None = None, *, reference: str | None = None
) -> EvidenceRecord:
    """``migration_parity`` evidence on the v1 type: pass iff parity holds (unknown without v1 traffic)."""
    return evidence.record(
        registry,
        report.source,
        report.source_version,
        report.evidence_figures(),
        verdict=report.verdict,
        reference=reference,
        run_id=run_id,
    )

"""The archive validation report: typed figures, built from per-(messageType, first reason) groups.

``Figures.from_groups`` is pure: the Spark job aggregates records into ``Group`` rows and hands
them here, so how a record is counted is decided in one place (``Reason`` order and validity).
Records received on a retired version (those with a ``RETIRED_TYPE`` finding, whatever their first
reason) come as ``RetiredGroup`` rows, one per producer: the report's ``retired_traffic`` per type says
who still publishes it, how much and when (the ``retired_traffic`` evidence, docs/design.md#evidence).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from contract_platform.evidence.figures import ProducerTraffic
from contract_platform.validation.lookback import Incomplete
from contract_platform.validation.reasons import Reason

__all__ = [
    "NO_TYPE",
    "TOP_PATHS",
    "Figures",
    "Group",
    "InputFigures",
    "Interval",
    "PathCount",
    "RetiredGroup",
    "RetiredTraffic",
    "Totals",
    "TypeFigures",
    "ValidationReport",
    "Window",
]

NO_TYPE = "(none)"  # records whose body names no messageType (malformed, or metadata unreadable)
TOP_PATHS = 20
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso_from_us(value: int | None) -> str | None:
    if value is None:
        return None
    return (_EPOCH + timedelta(microseconds=value)).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Group:
    """Records of one messageType (None: unreadable) counted under one first reason (rank; None: valid)."""

    message_type: str | None
    rank: int | None
    records: int
    line_bytes: int = 0
    first_us: int | None = None
    last_us: int | None = None


@dataclass(frozen=True)
class RetiredGroup:
    """Records of one retired messageType received after its retirement from one producer ("" when the
    message names none): the envelope's ``metadata.producer``, else the AMQP ``app_id``, else the ``producer``
    header (``validation.records.producer_of``)."""

    message_type: str
    producer: str
    records: int
    first_us: int | None = None
    last_us: int | None = None


@dataclass(frozen=True)
class RetiredTraffic:
    """What was received on a retired version after its retirement: per producer, most messages first."""

    producers: tuple[ProducerTraffic, ...]

    @property
    def messages(self) -> int:
        return sum(p.messages for p in self.producers)

    @property
    def first_received_at(self) -> str | None:
        return min((p.first_received_at for p in self.producers if p.first_received_at), default=None)

    @property
    def last_received_at(self) -> str | None:
        return max((p.last_received_at for p in self.producers if p.last_received_at), default=None)

    @classmethod
    def of(cls, groups: Iterable[RetiredGroup]) -> RetiredTraffic:
        merged: dict[str, list[int | None]] = {}
        for group in groups:
            found = merged.setdefault(group.producer, [0, None, None])
            found[0] = (found[0] or 0) + group.records
            firsts = [x for x in (found[1], group.first_us) if x is not None]
            lasts = [x for x in (found[2], group.last_us) if x is not None]
            found[1], found[2] = min(firsts, default=None), max(lasts, default=None)
        producers = (
            ProducerTraffic(name, count or 0, iso_from_us(first), iso_from_us(last))
            for name, (count, first, last) in merged.items()
        )
        return cls(tuple(sorted(producers, key=lambda p: (-p.messages, p.producer))))

    def to_dict(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "first_received_at": self.first_received_at,
            "last_received_at": self.last_received_at,
            "producers": [asdict(p) for p in self.producers],
        }


@dataclass(frozen=True)
class Totals:
    records: int = 0
    valid: int = 0
    invalid: int = 0
    counted_only: int = 0

    @property
    def invalid_rate(self) -> float:
        return self.invalid / self.records if self.records else 0.0

    def to_dict(self) -> dict[str, int]:
        return {
            "records": self.records,
            "valid": self.valid,
            "invalid": self.invalid,
            "counted_only": self.counted_only,
        }


@dataclass(frozen=True)
class Window:
    """First and last ``receivedAt`` (ISO 8601, UTC) of the records that have one."""

    first_received_at: str | None = None
    last_received_at: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {"first_received_at": self.first_received_at, "last_received_at": self.last_received_at}


@dataclass(frozen=True)
class TypeFigures:
    message_type: str
    totals: Totals
    by_reason: Mapping[Reason, int]  # only reasons that occur
    window: Window
    retired_traffic: RetiredTraffic | None = None  # received on the version after it was retired

    @property
    def invalid_rate(self) -> float:
        return self.totals.invalid_rate

    def to_dict(self) -> dict[str, Any]:
        shown = {
            **self.totals.to_dict(),
            "invalid_rate": self.invalid_rate,
            "by_reason": {str(reason): count for reason, count in self.by_reason.items()},
            "window": self.window.to_dict(),
        }
        if self.retired_traffic is not None:
            shown["retired_traffic"] = self.retired_traffic.to_dict()
        return shown


@dataclass(frozen=True, order=True)
class PathCount:
    path: str
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "count": self.count}


@dataclass(frozen=True)
class InputFigures:
    files: int = 0
    bytes: int = 0  # on disk (compressed where the files are)

    def to_dict(self) -> dict[str, int]:
        return {"files": self.files, "bytes": self.bytes}


def _totals(groups: Iterable[Group]) -> Totals:
    records = valid = invalid = 0
    for group in groups:
        records += group.records
        if group.rank is None:
            valid += group.records
        elif Reason.by_rank(group.rank).invalid:
            invalid += group.records
    return Totals(records=records, valid=valid, invalid=invalid, counted_only=records - valid - invalid)


def _window(groups: Iterable[Group]) -> Window:
    firsts = [g.first_us for g in groups if g.first_us is not None]
    lasts = [g.last_us for g in groups if g.last_us is not None]
    return Window(iso_from_us(min(firsts, default=None)), iso_from_us(max(lasts, default=None)))


def _by_reason(groups: Iterable[Group]) -> dict[Reason, int]:
    counts: Counter[Reason] = Counter()
    for group in groups:
        if group.rank is not None:
            counts[Reason.by_rank(group.rank)] += group.records
    return {reason: counts[reason] for reason in Reason if counts[reason]}


@dataclass(frozen=True)
class Figures:
    """What the records say: totals, first-reason counts overall and per messageType, top paths, window."""

    totals: Totals = field(default_factory=Totals)
    by_reason: Mapping[Reason, int] = field(default_factory=dict)
    by_type: Mapping[str, TypeFigures] = field(default_factory=dict)
    top_error_paths: tuple[PathCount, ...] = ()
    window: Window = field(default_factory=Window)
    line_bytes: int = 0  # the record lines as read (uncompressed)

    @classmethod
    def from_groups(
        cls, groups: Iterable[Group], paths: Iterable[tuple[str, int]] = (), retired: Iterable[RetiredGroup] = ()
    ) -> Figures:
        groups = list(groups)
        per_type: dict[str, list[Group]] = {}
        for group in groups:
            per_type.setdefault(group.message_type or NO_TYPE, []).append(group)
        retired_per_type: dict[str, list[RetiredGroup]] = {}
        for found in retired:
            if found.records:
                retired_per_type.setdefault(found.message_type, []).append(found)
        by_type = {
            name: TypeFigures(
                name,
                _totals(members),
                _by_reason(members),
                _window(members),
                RetiredTraffic.of(retired_per_type[name]) if name in retired_per_type else None,
            )
            for name, members in sorted(per_type.items())
        }
        top = sorted((PathCount(path, count) for path, count in paths), key=lambda p: (-p.count, p.path))
        return cls(
            totals=_totals(groups),
            by_reason=_by_reason(groups),
            by_type=by_type,
            top_error_paths=tuple(top[:TOP_PATHS]),
            window=_window(groups),
            line_bytes=sum(g.line_bytes for g in groups),
        )


@dataclass(frozen=True)
class Interval:
    """The date partitions an incremental run validated (``since <= date < until``; None: unbounded) and what it knew before.

    ``lookback_days`` of earlier first copies were compared for DUPLICATE / CONFLICTING_DUPLICATE;
    ``state_from`` is the day whose ordering state (the last sequence per key) OUT_OF_ORDER started from;
    ``rebuilt`` the earlier days (inside the dedup window) whose archive partitions were read because no
    run had kept their state; ``incomplete`` the earlier days the cross-day rules could not see at all
    (``lookback.Incomplete``, docs/archive-validation.md).
    """

    since: date | None = None
    until: date | None = None
    partitions: int = 0
    lookback_days: int = 0
    state_from: date | None = None
    rebuilt: tuple[date, ...] = ()
    incomplete: Incomplete = field(default_factory=Incomplete)

    def to_dict(self) -> dict[str, Any]:
        return {
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
            "partitions": self.partitions,
            "lookback_days": self.lookback_days,
            "state_from": self.state_from.isoformat() if self.state_from else None,
            "rebuilt": [day.isoformat() for day in self.rebuilt],
            "incomplete": self.incomplete.to_dict(),
        }


@dataclass(frozen=True)
class ValidationReport:
    """One archive validation run. ``to_dict()`` is the JSON report; ``exit_code`` 1 when anything is invalid."""

    archive: str
    catalog: str
    catalog_fingerprint: str
    figures: Figures
    input: InputFigures
    elapsed_seconds: float
    quarantine: str | None = None
    oversize_bytes: int = 1_048_576
    statuses: Mapping[str, str] = field(default_factory=dict)
    started_at: str = ""
    interval: Interval | None = None  # the date partitions validated; None: everything under ``archive``

    @property
    def totals(self) -> Totals:
        return self.figures.totals

    @property
    def by_reason(self) -> Mapping[Reason, int]:
        return self.figures.by_reason

    @property
    def by_type(self) -> Mapping[str, TypeFigures]:
        return self.figures.by_type

    @property
    def incomplete(self) -> Incomplete:
        """The earlier days the cross-day rules could not see (complete for a whole-archive run)."""
        return self.interval.incomplete if self.interval is not None else Incomplete()

    @property
    def exit_code(self) -> int:
        """1 when a record is invalid; incomplete cross-day checks are no finding about a record (``incomplete``)."""
        return 1 if self.totals.invalid else 0

    @property
    def records_per_second(self) -> float:
        return self.totals.records / self.elapsed_seconds if self.elapsed_seconds > 0 else 0.0

    @property
    def megabytes_per_second(self) -> float:
        """Record text (uncompressed) validated per second, in MB (10^6 bytes)."""
        return self.figures.line_bytes / 1e6 / self.elapsed_seconds if self.elapsed_seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        figures = self.figures
        return {
            "archive": self.archive,
            "catalog": {"root": self.catalog, "fingerprint": self.catalog_fingerprint},
            "started_at": self.started_at,
            "totals": figures.totals.to_dict(),
            "by_reason": {str(reason): figures.by_reason.get(reason, 0) for reason in Reason},
            "by_type": {name: figures.to_dict() for name, figures in figures.by_type.items()},
            "top_error_paths": [p.to_dict() for p in figures.top_error_paths],
            "window": figures.window.to_dict(),
            "input": {**self.input.to_dict(), "line_bytes": figures.line_bytes},
            "elapsed_seconds": round(self.elapsed_seconds, 3),
            "throughput": {
                "records_per_second": round(self.records_per_second, 1),
                "megabytes_per_second": round(self.megabytes_per_second, 3),
            },
            "quarantine": {"path": self.quarantine, "records": figures.totals.invalid} if self.quarantine else None,
            "options": {"oversize_bytes": self.oversize_bytes, "statuses": dict(self.statuses)},
            "interval": self.interval.to_dict() if self.interval is not None else None,
        }

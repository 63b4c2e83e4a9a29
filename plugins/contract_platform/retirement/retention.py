"""The ``retention`` check: the retention windows have elapsed since the last archived message of the type.

The archive (docs/design.md#archive-record) is the evidence of what was published: the Spark job
``spark_jobs/archive_last_seen.py`` scans it and writes, per messageType, when the last record was
received and how many there are::

    {"billing.invoice-issued.v1": {"lastReceivedAt": "2026-07-01T10:15:32.120Z", "records": 4200}}

The job writes that file only after scanning an archive root that exists (and deletes an older one
first), so a missing file means "not scanned". A message may sit in a queue for ``retention.queue``
and in a DLQ for ``retention.dlq``: the check passes once ``last + max(queue, dlq)`` has passed; the
archive keeps the messages until ``last + retention.archive``. A type the scanned archive never saw
passes ("never archived"); when nothing was scanned the check cannot decide. A type the scanned archive no
longer holds because archive retention deleted its exchange's partitions (its ``archive_retention``
evidence) is no "never archived": whatever of it was archived is older than the day the deletion kept from,
so the check passes once ``max(queue, dlq)`` has passed since that day, and names the deletion.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from contract_platform.catalog.model import Contract
from contract_platform.durations import format_duration
from contract_platform.envelope.properties import parse_timestamp
from contract_platform.errors import ArchiveError
from contract_platform.evidence import Verdict
from contract_platform.evidence.figures import ArchiveRetentionFigures
from contract_platform.evidence.records import EvidenceRecord
from contract_platform.retirement.model import CheckName, CheckResult, iso, require_aware

__all__ = ["LastSeen", "TypeLastSeen", "check_retention"]


@dataclass(frozen=True)
class TypeLastSeen:
    last_received_at: datetime
    records: int

    def to_dict(self) -> dict[str, Any]:
        return {"lastReceivedAt": iso(self.last_received_at), "records": self.records}


@dataclass(frozen=True)
class LastSeen:
    """The last archived message of each type, and whether an archive was scanned at all."""

    types: Mapping[str, TypeLastSeen] = field(default_factory=dict)
    scanned: bool = False
    source: str = ""  # the file read, or what was scanned; for the figures
    scanned_at: datetime | None = None

    @classmethod
    def from_document(cls, document: Any, *, source: str, scanned_at: datetime | None = None) -> LastSeen:
        """From the job's JSON document; ``ArchiveError`` naming ``source`` when it is not that shape."""
        if not isinstance(document, dict):
            raise ArchiveError(f"{source}: expected a JSON object of messageType -> last seen")
        types = {}
        for message_type, entry in document.items():
            try:
                types[message_type] = TypeLastSeen(
                    parse_timestamp(entry["lastReceivedAt"]).astimezone(UTC), int(entry["records"])
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise ArchiveError(
                    f'{source}#/{message_type}: expected {{"lastReceivedAt": ISO-8601 with zone, "records": n}} '
                    f"({exc}); run the archive_last_seen job again"
                ) from exc
        return cls(types, True, source, scanned_at)

    @classmethod
    def read(cls, path: str | Path) -> LastSeen:
        """The job's output file; a missing file means no archive was scanned (not an error)."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
            modified = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        except FileNotFoundError:
            return cls(source=f"{path} (missing: the archive_last_seen job has not scanned an archive)")
        except OSError as exc:
            raise ArchiveError(f"{path}: cannot read the last-seen file ({exc})") from exc
        try:
            document = json.loads(text)
        except ValueError as exc:
            raise ArchiveError(f"{path}: not JSON ({exc}); run the archive_last_seen job again") from exc
        return cls.from_document(document, source=str(path), scanned_at=modified)

    def to_dict(self) -> dict[str, Any]:
        return {message_type: entry.to_dict() for message_type, entry in sorted(self.types.items())}


def check_retention(
    contract: Contract, last_seen: LastSeen, *, now: datetime, deleted: EvidenceRecord | None = None
) -> CheckResult:
    """``deleted``: the type's latest ``archive_retention`` evidence, when archive retention deleted any of its
    exchange's partitions."""
    now = require_aware(now)
    retention = contract.retention
    wait = max(retention.queue, retention.dlq)
    figures: dict[str, Any] = {
        "source": last_seen.source,
        "scannedAt": iso(last_seen.scanned_at),
        "retention": {
            "queue": format_duration(retention.queue),
            "dlq": format_duration(retention.dlq),
            "archive": format_duration(retention.archive),
        },
    }
    entry = last_seen.types.get(contract.message_type)
    if entry is None:
        if not last_seen.scanned:
            return CheckResult(
                CheckName.RETENTION,
                Verdict.UNKNOWN,
                figures,
                f"no archive scan to say when {contract.message_type} was last published ({last_seen.source}): "
                "run the archive_last_seen Spark job (the first task of the retirement_audit DAG)",
            )
        removal = ArchiveRetentionFigures.of(deleted) if deleted is not None else None
        if deleted is not None and removal is not None and removal.before:
            return _after_deletion(contract, figures, deleted, removal, wait, now)
        figures["neverArchived"] = True
        figures["note"] = f"never archived: the scanned archive holds no message of {contract.message_type}"
        return CheckResult(CheckName.RETENTION, Verdict.PASS, figures)
    passes_at = entry.last_received_at + wait
    figures |= {
        "lastArchivedAt": iso(entry.last_received_at),
        "records": entry.records,
        "passesAt": iso(passes_at),
        "archiveKeepsUntil": iso(entry.last_received_at + retention.archive),
    }
    return _passes_at(
        figures,
        passes_at,
        now,
        f"the last {contract.message_type} message was archived at {iso(entry.last_received_at)}; its copies may "
        f"still sit in queues and DLQs for max(queue {format_duration(retention.queue)}, dlq "
        f"{format_duration(retention.dlq)}) = {format_duration(wait)}: wait until {iso(passes_at)} "
        f"(the archive keeps them until {iso(entry.last_received_at + retention.archive)})",
    )


def _passes_at(figures: dict[str, Any], passes_at: datetime, now: datetime, waiting: str) -> CheckResult:
    """The retention check once its copies' wait is known: a pass from ``passes_at``, before it a failure saying
    what it waits for (``waiting``) and when it clears."""
    if now >= passes_at:
        return CheckResult(CheckName.RETENTION, Verdict.PASS, figures)
    return CheckResult(CheckName.RETENTION, Verdict.FAIL, figures, waiting, passes_at)


def _after_deletion(
    contract: Contract,
    figures: dict[str, Any],
    deleted: EvidenceRecord,
    removal: ArchiveRetentionFigures,
    wait: timedelta,
    now: datetime,
) -> CheckResult:
    """No message of the type left in the archive after archive retention deleted its exchange's partitions before
    ``removal.before``: what was archived of it is older than that day."""
    kept_from = datetime.combine(date.fromisoformat(str(removal.before)), time(0), UTC)
    passes_at = kept_from + wait
    figures |= {
        "neverArchived": False,
        "deletedByRetention": {
            "evidenceId": deleted.id,
            "collectedAt": iso(deleted.collected_at),
            "exchange": removal.exchange,
            "window": removal.window,
            "before": removal.before,
        },
        "passesAt": iso(passes_at),
        "note": (
            f"the scanned archive holds no message of {contract.message_type}: archive retention deleted the "
            f"partitions of {removal.exchange} before {removal.before} (retention.archive {removal.window}, evidence "
            f"#{deleted.id}), so whatever of it was archived is older than that"
        ),
    }
    return _passes_at(
        figures,
        passes_at,
        now,
        f"{figures['note']}; its copies may still sit in queues and DLQs for max(queue, dlq) = "
        f"{format_duration(wait)} after that: wait until {iso(passes_at)}",
    )

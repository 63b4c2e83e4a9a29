"""The Contracts page of one version: everything it shows, from the catalogue, the registry store and the broker activity recorder's sessions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from contract_platform.catalog.model import Catalog, Contract
from contract_platform.docs import FieldRow, field_rows, render_contract_page
from contract_platform.evidence import EvidenceKind, Registry
from contract_platform.evidence.figures import (
    ArchiveRetentionFigures,
    DeadLetterPurgeFigures,
    RuntimeValidationFigures,
)
from contract_platform.evidence.runtime import RuntimeWindow, runtime_window
from contract_platform.migration.readers import readers_over_time, version_sessions
from contract_platform.retirement.readers_seen import platform_vhost
from contract_platform.status import contract_status, overview
from contract_platform_airflow.ui.views.catalogue import CatalogueRow, row_of
from contract_platform_airflow.ui.views.evidence import (
    MANY,
    EvidenceItem,
    MigrationView,
    Point,
    QualityView,
    ReplayView,
    RetiredTrafficView,
    Series,
    ViewModel,
    _migrations,
    evidence_item,
    invalid_rate_series,
    quality_view,
    retired_at,
    retired_traffic_view,
)
from contract_platform_airflow.ui.views.readers import ReadersView, latest_readers

__all__ = [
    "CONSUMERS_WINDOW",
    "ContractView",
    "FixtureView",
    "consumer_series",
    "contract_view",
    "retention_holds",
    "runtime_view",
]


class FixtureView(ViewModel):
    name: str
    valid: bool
    document: Any


@dataclass(frozen=True)
class ContractView:
    contract: Contract
    row: CatalogueRow
    status: Mapping[str, Any]  # contract_status(): declared, effective, history, refusals, latest evidence
    fields: tuple[FieldRow, ...]
    fixtures: tuple[FixtureView, ...]
    docs_markdown: str
    evidence: tuple[EvidenceItem, ...]
    consumers: tuple[Series, ...]
    invalid_rates: Series
    migrations: tuple[MigrationView, ...]
    holds: tuple[str, ...] = field(default=())
    replays: tuple[ReplayView, ...] = field(default=())  # the latest replay of each version, newest first
    readers: ReadersView | None = None  # the latest retirement audit's readers check, if it had one
    quality: QualityView | None = None  # the latest envelope quality run, expectation by expectation
    retired_traffic: RetiredTrafficView | None = None  # a retired version still receiving messages: an alarm
    runtime: RuntimeWindow | None = None  # what services' guards judged over the validation window, if any guard did
    # archive partitions retention deleted (when, and what: counts only), newest first
    deletions: tuple[tuple[datetime, ArchiveRetentionFigures], ...] = field(default=())
    # dead letters past retention.dlq removed from the version's DLQs and parking lots (counts and ids), newest first
    purges: tuple[tuple[datetime, DeadLetterPurgeFigures], ...] = field(default=())


def contract_view(catalog: Catalog, registry: Registry, message_type: str, now: datetime | None = None) -> ContractView:
    """Everything the contract page shows. Raises ``UsageError`` for a messageType not in the catalogue."""
    status = contract_status(catalog, registry, message_type)
    contract = catalog.get(message_type)
    assert contract is not None, "contract_status() refuses unknown message types"
    summary = next(s for s in overview(_single(catalog, contract), registry))
    recent = registry.evidence(message_type, limit=50)
    today = (now or datetime.now(UTC)).date()
    retired = retired_at(registry, message_type)
    return ContractView(
        contract=contract,
        row=row_of(catalog, registry, contract, summary, now),
        status=status,
        fields=tuple(field_rows(contract.payload_schema)),
        fixtures=tuple(FixtureView(name=f.name, valid=f.valid, document=f.document) for f in contract.fixtures),
        docs_markdown=render_contract_page(contract, catalog),
        evidence=tuple(evidence_item(record) for record in recent),
        consumers=consumer_series(registry, catalog.family(contract.family), now or datetime.now(UTC)),
        invalid_rates=invalid_rate_series(registry, message_type),
        migrations=tuple(_migrations(catalog, registry, contract)),
        holds=retention_holds(catalog, message_type, today),
        deletions=tuple(
            (r.collected_at, ArchiveRetentionFigures.of(r))
            for r in registry.evidence(message_type, EvidenceKind.ARCHIVE_RETENTION, limit=20)
        ),
        purges=tuple(
            (r.collected_at, DeadLetterPurgeFigures.of(r))
            for r in registry.evidence(message_type, EvidenceKind.DEAD_LETTER_PURGE, limit=20)
        ),
        replays=tuple(ReplayView.of(shown) for shown in status["replay"]),
        readers=latest_readers(registry, message_type),
        quality=quality_view(_latest_quality(recent, registry, message_type)),
        retired_traffic=retired_traffic_view(registry, message_type, retired),
        runtime=runtime_view(registry, contract, now or datetime.now(UTC)),
    )


def retention_holds(catalog: Catalog, message_type: str, today: date) -> tuple[str, ...]:
    """The holds in force on the version's archive (``retention.holds_in_force``: the catalogue's and investigations'),
    each as one sentence; an unreadable holds file is shown as such, since retention then deletes nothing."""
    from contract_platform.errors import ArchiveError
    from contract_platform.retention import holds_file, holds_in_force, read_investigation_holds

    try:
        investigations = read_investigation_holds(holds_file())
    except ArchiveError as exc:
        return (f"the investigation holds cannot be read: {exc}",)
    return tuple(h.describe() for h in holds_in_force(catalog, investigations, today).get(message_type, ()))


def runtime_view(registry: Registry, contract: Contract, now: datetime) -> RuntimeWindow | None:
    """Services' guards over the validation window, summed as the promotion guard sums them; None when no service
    reported any (a type no service guards)."""
    days = contract.validation.window_days
    since = now - timedelta(days=days)
    records = registry.evidence(contract.message_type, EvidenceKind.RUNTIME_VALIDATION, since=since, limit=MANY)
    if not records:
        return None
    figures = (RuntimeValidationFigures.of(record) for record in records)
    return runtime_window(figures, days=days, target=contract.validation.invalid_rate_target)


def _latest_quality(recent: Sequence[Any], registry: Registry, message_type: str) -> EvidenceItem | None:
    record = next((r for r in recent if r.kind == EvidenceKind.ENVELOPE_QUALITY), None)
    if record is None:
        record = registry.latest_evidence(message_type, EvidenceKind.ENVELOPE_QUALITY)
    return evidence_item(record) if record is not None else None


def _single(catalog: Catalog, contract: Contract) -> Catalog:
    return Catalog(catalog.root, catalog.envelope_schema, {contract.message_type: contract})


CONSUMERS_WINDOW = timedelta(days=30)  # how far back the consumers chart reads reader sessions


def consumer_series(registry: Registry, versions: Sequence[Contract], now: datetime) -> tuple[Series, ...]:
    """Consumers per version over time: the distinct readers of each version's consumer queues at every moment
    (``migration.readers``), from the reader sessions the broker activity recorder stored over the last
    ``CONSUMERS_WINDOW``, drawn from the first moment any version of the family was read. No series has a
    point when nothing was recorded: the chart says so instead of drawing zero readers."""
    vhost, since = platform_vhost(), now - CONSUMERS_WINDOW
    sessions = {v.message_type: version_sessions(registry, v, vhost, since=since, until=now) for v in versions}
    starts = [max(s.attached_at or since, since) for found in sessions.values() for s in found]
    if not starts:
        return tuple(Series(name=message_type, points=()) for message_type in sessions)
    start = min(starts)
    return tuple(
        Series(
            name=message_type,
            points=tuple(Point(at=c.at, value=c.readers) for c in readers_over_time(found, since=start, until=now)),
        )
        for message_type, found in sessions.items()
    )

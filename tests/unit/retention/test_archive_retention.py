"""Archive retention: partitions past their contract's retention.archive are deleted with evidence; a hold keeps
them; a second run, or one at the same time, does nothing and fails nothing."""

from __future__ import annotations

import gzip
import multiprocessing
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from contract_platform.catalog import Catalog
from contract_platform.evidence import EvidenceKind
from contract_platform.evidence.figures import ArchiveRetentionFigures
from contract_platform.retention import (
    Action,
    apply_archive_retention,
    holds_in_force,
    read_investigation_holds,
    release_hold,
    set_hold,
)
from contract_platform.retention.archive import LOCK_NAME, TRASH_NAME
from contract_platform.store import SqlRegistry

NOW = datetime(2026, 7, 1, 6, tzinfo=UTC)  # every contract of the catalogue keeps its archive 90 days
OLD = date(2026, 3, 31)  # its whole day ended 2026-04-01T00:00Z, 91 days before NOW
EDGE = date(2026, 4, 1)  # ends 2026-04-02: 90 days later is 2026-07-01T00:00Z, before NOW: past
RECENT = date(2026, 4, 2)  # past at 2026-07-02T00:00Z: kept
V1, V2 = "billing.invoice-issued.v1", "billing.invoice-issued.v2"  # both on billing.events


def _partition(root: Path, exchange: str, day: date, lines: int, *, gz: bool = False) -> Path:
    folder = root / exchange / f"date={day.isoformat()}"
    folder.mkdir(parents=True, exist_ok=True)
    body = b"".join(b'{"exchange": "%s", "n": %d}\n' % (exchange.encode(), n) for n in range(lines))
    if gz:
        (folder / "host-1-a-000001.jsonl.gz").write_bytes(gzip.compress(body))
    else:
        (folder / "host-1-a-000001.jsonl").write_bytes(body)
    return folder


@pytest.fixture()
def archive(tmp_path: Path) -> Path:
    root = tmp_path / "archive"
    _partition(root, "order.events", OLD, 3)
    _partition(root, "order.events", EDGE, 2, gz=True)
    _partition(root, "order.events", RECENT, 5)
    _partition(root, "billing.events", OLD, 4)
    _partition(root, "nobody.events", OLD, 1)  # no contract declares its retention
    return root


@pytest.fixture()
def registry(tmp_path: Path):  # type: ignore[no-untyped-def]
    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as store:
        yield store


def _no_holds(catalog: Catalog) -> dict:  # type: ignore[type-arg]
    return {t: h for t, h in holds_in_force(catalog, (), NOW.date()).items() if t not in (V1,)}


def test_past_window_partitions_go_with_evidence_and_the_rest_stay(catalog: Catalog, archive: Path, registry) -> None:
    run = apply_archive_retention(catalog, archive, now=NOW, holds=_no_holds(catalog), registry=registry)

    assert sorted((p.exchange, p.day) for p in run.deleted) == [
        ("billing.events", OLD), ("order.events", OLD), ("order.events", EDGE)]  # fmt: skip
    assert not (archive / "order.events" / f"date={OLD}").exists()
    assert not (archive / "order.events" / f"date={EDGE}").exists()
    assert (archive / "order.events" / f"date={RECENT}").is_dir()
    assert (archive / "nobody.events" / f"date={OLD}").is_dir()  # undeclared: kept
    assert list((archive / TRASH_NAME).iterdir()) == []
    decided = {(d.exchange, d.day): d.action for d in run.decisions}
    assert decided[("nobody.events", OLD)] is Action.UNDECLARED
    assert decided[("order.events", RECENT)] is Action.KEEP

    evidence = registry.latest_evidence("order.order-created.v1", EvidenceKind.ARCHIVE_RETENTION)
    figures = ArchiveRetentionFigures.of(evidence)
    assert (figures.exchange, figures.window, figures.files, figures.records) == ("order.events", "90d", 2, 5)
    assert [p["day"] for p in figures.partitions] == [OLD.isoformat(), EDGE.isoformat()]
    assert figures.bytes > 0
    assert "exchange" not in str(figures.partitions)  # counts only: no record content in the evidence
    # every version the exchange carries is told: v1 and v2 of invoice-issued share billing.events
    assert ArchiveRetentionFigures.of(registry.latest_evidence(V2, EvidenceKind.ARCHIVE_RETENTION)).records == 4
    assert ArchiveRetentionFigures.of(registry.latest_evidence(V1, EvidenceKind.ARCHIVE_RETENTION)).records == 4

    again = apply_archive_retention(catalog, archive, now=NOW, holds=_no_holds(catalog), registry=registry)
    assert again.deleted == () and again.evidence_ids == ()
    assert len(registry.evidence("order.order-created.v1", EvidenceKind.ARCHIVE_RETENTION)) == 1


def test_a_catalogue_hold_keeps_the_exchange_and_an_investigation_hold_too(
    catalog: Catalog, archive: Path, registry, tmp_path: Path
) -> None:
    on_hold_day = date(2026, 6, 30)  # invoice-issued v1's audit hold is in force through 2026-06-30
    held = holds_in_force(catalog, (), on_hold_day)
    assert [h.kind for h in held[V1]] == ["audit"]
    run = apply_archive_retention(
        catalog, archive, now=datetime(2026, 6, 30, 12, tzinfo=UTC), holds=held, registry=registry
    )
    assert {(p.exchange, p.day) for p in run.deleted} == {("order.events", OLD)}  # billing.events is held
    decision = next(d for d in run.decisions if d.exchange == "billing.events")
    assert decision.action is Action.HELD and "FY2025 tax audit" in decision.held_by[0].describe()

    holds_path = tmp_path / "data" / "retention" / "holds.json"
    set_hold(holds_path, catalog.require("order.order-created.v1"), reason="INC-42 refund dispute",
             owner="alice", until=None, now=NOW)  # fmt: skip
    investigations = read_investigation_holds(holds_path)
    run = apply_archive_retention(
        catalog, archive, now=NOW, holds=holds_in_force(catalog, investigations, NOW.date()), registry=registry
    )
    assert {(p.exchange, p.day) for p in run.deleted} == {("billing.events", OLD)}  # the audit hold ended
    assert (archive / "order.events" / f"date={EDGE}").is_dir()  # past its window, kept for the investigation

    assert [h.owner for h in release_hold(holds_path, "order.order-created.v1")] == ["alice"]
    assert read_investigation_holds(holds_path) == ()
    run = apply_archive_retention(catalog, archive, now=NOW, holds={}, registry=registry)
    assert {(p.exchange, p.day) for p in run.deleted} == {("order.events", EDGE)}


def test_a_dry_run_deletes_nothing_and_records_nothing(catalog: Catalog, archive: Path, registry) -> None:
    run = apply_archive_retention(catalog, archive, now=NOW, holds={}, registry=None, dry_run=True)
    assert sum(d.action is Action.DELETE for d in run.decisions) == 3
    assert (archive / "order.events" / f"date={OLD}").is_dir()
    assert registry.evidence("order.order-created.v1", EvidenceKind.ARCHIVE_RETENTION) == []


def test_a_run_while_another_holds_the_lock_does_nothing(catalog: Catalog, archive: Path, registry) -> None:
    import fcntl
    import os

    fd = os.open(archive / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        run = apply_archive_retention(catalog, archive, now=NOW, holds={}, registry=registry)
    finally:
        os.close(fd)
    assert run.busy and run.deleted == ()
    assert (archive / "order.events" / f"date={OLD}").is_dir()


def test_a_run_killed_after_the_rename_is_finished_by_the_next(catalog: Catalog, archive: Path, registry) -> None:
    trash = archive / TRASH_NAME
    trash.mkdir()
    (archive / "order.events" / f"date={OLD}").rename(trash / f"order.events@{OLD.isoformat()}@deadbeef")
    run = apply_archive_retention(catalog, archive, now=NOW, holds={}, registry=registry)
    assert ("order.events", OLD) in {(p.exchange, p.day) for p in run.deleted}
    figures = ArchiveRetentionFigures.of(
        registry.latest_evidence("order.order-created.v1", EvidenceKind.ARCHIVE_RETENTION)
    )
    assert figures.records == 5 and list(trash.iterdir()) == []


def _apply_in_process(catalog_dir: str, root: str, url: str, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    from contract_platform.catalog import load_catalog

    with SqlRegistry.open(url) as store:
        run = apply_archive_retention(load_catalog(Path(catalog_dir)), Path(root), now=NOW, holds={}, registry=store)
    queue.put((run.busy, len(run.deleted)))


def test_two_processes_at_once_delete_each_partition_once(
    catalog: Catalog, catalog_dir: Path, archive: Path, tmp_path: Path
) -> None:
    for n in range(40):  # enough work that the two runs overlap
        _partition(archive, "quote.events", OLD - timedelta(days=n), 2000)
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    SqlRegistry.open(url).close()
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    workers = [context.Process(target=_apply_in_process, args=(str(catalog_dir), str(archive), url, queue))
               for _ in range(2)]  # fmt: skip
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    outcomes = sorted(queue.get(timeout=5) for _ in workers)
    assert sum(deleted for _, deleted in outcomes) == 43  # each partition deleted once, by one of them
    with SqlRegistry.open(url) as store:
        quote = store.evidence("quote.quote-approved.v1", EvidenceKind.ARCHIVE_RETENTION)
    assert sum(len(ArchiveRetentionFigures.of(r).partitions) for r in quote) == 40

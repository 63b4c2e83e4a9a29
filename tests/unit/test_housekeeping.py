"""Housekeeping on a data folder: each kind goes once past its retention, what a reader needs stays at any age,
nothing outside the folder is touched, a second run removes nothing, and two runs at once remove each thing once."""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.support.databases import BOTH_STORES, registry_on

from contract_platform import housekeeping as hk
from contract_platform.catalog.model import Status
from contract_platform.errors import HousekeepingError, UsageError
from contract_platform.store import EvidenceKind, SqlRegistry, Verdict

NOW = datetime(2027, 6, 1, 12, 0, tzinfo=UTC)
DAYS = timedelta(days=1)


def write(path: Path, text: str = "x" * 100, *, at: datetime | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if at is not None:
        os.utime(path, (at.timestamp(), at.timestamp()))
    return path


def aged(path: Path, at: datetime) -> Path:
    os.utime(path, (at.timestamp(), at.timestamp()))
    return path


def gx_run(gx: Path, suite: str, at: datetime) -> tuple[Path, Path]:
    stamp = at.strftime("%Y%m%dT%H%M%S.123456Z")
    parts = suite.split(".")
    result = write(gx / "uncommitted" / "validations" / Path(*parts) / "__none__" / stamp / f"{suite}-envelopes.json")
    page = gx / "uncommitted" / "data_docs" / "local_site" / "validations" / Path(*parts) / "__none__" / stamp
    return result.parent, write(page / f"{suite}-envelopes.html").parent


# -- data docs ------------------------------------------------------------------------------------------------


def test_data_docs_past_retention_go_and_each_suites_newest_run_stays(tmp_path: Path) -> None:
    gx = tmp_path / "gx"
    old_result, old_page = gx_run(gx, "envelope_quality.order.order-created.v1", NOW - 40 * DAYS)
    new_result, new_page = gx_run(gx, "envelope_quality.order.order-created.v1", NOW - 2 * DAYS)
    lone_result, lone_page = gx_run(gx, "envelope_quality.quote.quote-approved.v1", NOW - 200 * DAYS)
    index = write(gx / "uncommitted" / "data_docs" / "local_site" / "index.html", at=NOW - 300 * DAYS)

    pruned = hk.prune_data_docs(gx, now=NOW, keep=30 * DAYS)

    assert (pruned.kind, pruned.removed) == (hk.Kind.DATA_DOCS, 2)
    assert pruned.bytes == 200
    assert not old_result.exists() and not old_page.exists()
    assert new_result.is_dir() and new_page.is_dir()
    assert lone_result.is_dir() and lone_page.is_dir()  # the suite's only run: kept however old
    assert index.is_file()
    assert not (gx / "uncommitted" / hk.TRASH_NAME).exists()
    assert hk.prune_data_docs(gx, now=NOW, keep=30 * DAYS).removed == 0


def real_site(gx: Path, suites: dict[str, list[datetime]]) -> None:
    """A Data Docs site Great Expectations builds itself: one result per suite and run time, no Spark."""
    import great_expectations as gx_lib
    from great_expectations.core import ExpectationSuiteValidationResult
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
        ValidationResultIdentifier,
    )

    from contract_platform.quality.runner import _open_context

    context = _open_context(gx)
    for suite, times in suites.items():
        context.suites.add_or_update(gx_lib.ExpectationSuite(name=suite))
        for at in times:
            run = RunIdentifier(run_name="__none__", run_time=at)
            key = ValidationResultIdentifier(ExpectationSuiteIdentifier(suite), run, f"{suite}-envelopes")
            result = ExpectationSuiteValidationResult(success=True, results=[], suite_name=suite, meta={"run_id": run})
            context.validation_results_store.set(key, result)
    context.build_data_docs()


_LINK = re.compile(r"""(?:href=\\?"|'_table_row_link_path': ')([^"'\\#]+)""")


def local_links(index: Path) -> set[str]:
    """Every link of the index to a file of the site (its table rows' too), not to the network or an anchor."""
    return {link for link in _LINK.findall(index.read_text("utf-8")) if "://" not in link and link.strip()}


def test_after_pruning_every_link_of_the_data_docs_index_resolves_and_none_names_a_pruned_run(tmp_path: Path) -> None:
    gx = tmp_path / "gx"
    order, quote = "envelope_quality.order.order-created.v1", "envelope_quality.quote.quote-approved.v1"
    real_site(gx, {order: [NOW - 60 * DAYS, NOW - 40 * DAYS, NOW - 2 * DAYS], quote: [NOW - 200 * DAYS]})
    index = gx / "uncommitted" / "data_docs" / "local_site" / "index.html"
    before = [link for link in local_links(index) if link.startswith("validations/")]
    assert len(before) == 4, before
    write(index.with_name("envelope_quality.html"))  # the quality run's one-page results, linked from the index

    pruned = hk.prune_data_docs(gx, now=NOW, keep=30 * DAYS)

    assert pruned.removed == 4  # two runs of order, each a result and a page
    assert "index built again" in pruned.note
    links = local_links(index)
    runs = sorted(link for link in links if link.startswith("validations/"))
    assert len(runs) == 2 and NOW.strftime("%Y") in runs[0], runs  # order's newest and quote's only run
    assert not any((NOW - 60 * DAYS).strftime("%Y%m%dT") in link or (NOW - 40 * DAYS).strftime("%Y%m%dT") in link
                   for link in links)  # fmt: skip
    missing = sorted(link for link in links if not (index.parent / link).exists())
    assert not missing, missing
    assert "envelope_quality.html" in links
    assert "cdn.jsdelivr.net" not in index.read_text("utf-8")  # opened offline still (quality.offline_site)


# -- logs -------------------------------------------------------------------------------------------------------


def test_logs_last_written_before_the_window_go_with_the_folders_they_leave_empty(tmp_path: Path) -> None:
    data = tmp_path / "data"
    old_step = write(data / "logs" / "main-job" / "20270101T000000Z" / "01-step.log", at=NOW - 60 * DAYS)
    aged(old_step.parent, NOW - 60 * DAYS)
    live = write(data / "logs" / "activity-recorder" / "20270101T000000Z.log", at=NOW - DAYS)
    task = data / "airflow" / "logs" / "dag_id=housekeeping" / "run_id=scheduled__x" / "task_id=t" / "attempt=1.log"
    write(task, at=NOW - 45 * DAYS)
    fresh_task = write(task.with_name("attempt=2.log"), at=NOW - 3 * DAYS)

    pruned = hk.prune_logs(data, now=NOW, keep=30 * DAYS)

    assert (pruned.removed, pruned.bytes) == (2, 200)
    assert not old_step.exists() and not old_step.parent.exists()  # its run's folder, left empty and old
    assert live.is_file() and fresh_task.is_file() and not task.exists()
    assert hk.prune_logs(data, now=NOW, keep=30 * DAYS).removed == 0


# -- reports, quarantine, audit copies ---------------------------------------------------------------------------


def test_reports_past_retention_go_except_each_folders_newest(tmp_path: Path) -> None:
    data = tmp_path / "data"
    old = write(data / "reports" / "archive-validation" / "scheduled__a.json", at=NOW - 120 * DAYS)
    new = write(data / "reports" / "archive-validation" / "scheduled__b.json", at=NOW - DAYS)
    only = write(data / "reports" / "replay" / "manual__a.json", at=NOW - 400 * DAYS)
    parity_old = write(data / "migrations" / "billing.invoice-issued.v1" / "parity-a.json", at=NOW - 100 * DAYS)
    parity_new = write(data / "migrations" / "billing.invoice-issued.v1" / "parity-b.json", at=NOW - 95 * DAYS)

    pruned = hk.prune_reports(data, now=NOW, keep=90 * DAYS)

    assert pruned.removed == 2
    assert not old.exists() and not parity_old.exists()
    assert new.is_file() and only.is_file() and parity_new.is_file()


def test_quarantine_folders_past_retention_go_whole(tmp_path: Path) -> None:
    data = tmp_path / "data"
    old = write(data / "quarantine" / "scheduled__a" / "part-00000.txt", "secret payload\n").parent
    aged(old, NOW - 31 * DAYS)
    new = write(data / "quarantine" / "scheduled__b" / "part-00000.txt").parent
    aged(new, NOW - DAYS)

    pruned = hk.prune_quarantine(data, now=NOW, keep=30 * DAYS)

    assert (pruned.removed, pruned.bytes) == (1, len("secret payload\n"))
    assert not old.exists() and new.is_dir()


def test_audit_copies_keep_latest_and_the_newest_stamp(tmp_path: Path) -> None:
    folder = tmp_path / "docs" / "retirement" / "billing.invoice-issued.v1"
    latest = [write(folder / "latest.json", at=NOW - 900 * DAYS), write(folder / "latest.md", at=NOW - 900 * DAYS)]
    old = [write(folder / "20250101T000000Z.json"), write(folder / "20250101T000000Z.md")]
    newest = [write(folder / "20250301T000000Z.json"), write(folder / "20250301T000000Z.md")]
    recent = hk.prune_audit_copies(tmp_path / "docs", now=NOW, keep=365 * DAYS)

    assert recent.removed == 2
    assert all(p.is_file() for p in latest + newest) and not any(p.exists() for p in old)


# -- class-data archives ------------------------------------------------------------------------------------------


def test_class_archives_of_other_versions_go_and_the_current_one_stays(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    current = write(cache / "spark-classes-aaaaaaaaaaaaaaaa.jsa", at=NOW - 400 * DAYS)
    other = write(cache / "spark-classes-bbbbbbbbbbbbbbbb.jsa", at=NOW - 60 * DAYS)
    claim = write(cache / "spark-classes-cccccccccccccccc.jsa.writing", at=NOW - 60 * DAYS)
    recent = write(cache / "spark-classes-dddddddddddddddd.jsa", at=NOW - 2 * DAYS)
    stranger = write(cache / "notes.txt", at=NOW - 999 * DAYS)

    pruned = hk.prune_class_archives(cache, now=NOW, keep=30 * DAYS, current=current)

    assert pruned.removed == 2
    assert current.is_file() and recent.is_file() and stranger.is_file()
    assert not other.exists() and not claim.exists()


# -- the folder's bounds, twice and at once ---------------------------------------------------------------------


def test_airflows_own_log_folder_is_pruned_when_given(tmp_path: Path) -> None:
    task_logs = tmp_path / "opt" / "airflow" / "logs"
    old = write(task_logs / "dag_id=d" / "run_id=r" / "task_id=t" / "attempt=1.log", at=NOW - 40 * DAYS)
    new = write(task_logs / "dag_id=d" / "run_id=s" / "task_id=t" / "attempt=1.log", at=NOW - DAYS)
    assert hk.prune_logs(tmp_path / "data", now=NOW, keep=30 * DAYS).removed == 0  # not given: not touched
    assert hk.prune_logs(tmp_path / "data", now=NOW, keep=30 * DAYS, airflow_logs=task_logs).removed == 1
    assert not old.exists() and new.is_file()


def test_nothing_outside_the_data_folder_is_touched_through_a_link(tmp_path: Path) -> None:
    outside = write(tmp_path / "elsewhere" / "old.log", at=NOW - 999 * DAYS)
    data = tmp_path / "data"
    (data / "logs").mkdir(parents=True)
    (data / "logs" / "linked").symlink_to(outside.parent, target_is_directory=True)
    (data / "logs" / "linked.log").symlink_to(outside)

    assert hk.prune_logs(data, now=NOW, keep=DAYS).removed == 0
    assert outside.is_file()
    assert (data / "logs" / "linked").is_symlink()


def test_two_runs_at_once_remove_each_thing_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for n in range(300):
        write(data / "logs" / "cli" / f"validate-{n:03d}.log", at=NOW - 90 * DAYS)
    results: list[hk.Pruned] = []
    barrier = threading.Barrier(2)

    def run() -> None:
        barrier.wait()
        results.append(hk.prune_logs(data, now=NOW, keep=30 * DAYS))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sum(r.removed or 0 for r in results) == 300
    assert sum(r.bytes for r in results) == 300 * 100
    assert list((data / "logs").rglob("*.log")) == []


def test_a_trash_a_killed_run_left_is_emptied_by_the_next(tmp_path: Path) -> None:
    data = tmp_path / "data"
    left = write(data / "quarantine" / hk.TRASH_NAME / "0123abcd" / "part-00000.txt")
    hk.prune_quarantine(data, now=NOW, keep=30 * DAYS)
    assert not left.exists() and not (data / "quarantine" / hk.TRASH_NAME).exists()


def a_bit_of_everything(data: Path, cache: Path) -> None:
    """One thing past its retention of each kind in the data folder and the class cache, one to keep beside it."""
    gx_run(data / "gx", "envelope_quality.order.order-created.v1", NOW - 40 * DAYS)
    gx_run(data / "gx", "envelope_quality.order.order-created.v1", NOW - 2 * DAYS)
    write(data / "logs" / "cli" / "old.log", "x" * 10, at=NOW - 40 * DAYS)
    write(data / "logs" / "cli" / "new.log", at=NOW - DAYS)
    write(data / "reports" / "replay" / "a.json", "x" * 20, at=NOW - 100 * DAYS)
    write(data / "reports" / "replay" / "b.json", at=NOW - DAYS)
    aged(write(data / "quarantine" / "scheduled__a" / "part-00000.txt", "x" * 30).parent, NOW - 40 * DAYS)
    write(data / "docs" / "retirement" / "t.v1" / "20250101T000000Z.json", "x" * 40, at=NOW - 400 * DAYS)
    write(data / "docs" / "retirement" / "t.v1" / "20270501T000000Z.json", at=NOW - 30 * DAYS)
    write(cache / "spark-classes-bbbbbbbbbbbbbbbb.jsa", "x" * 50, at=NOW - 60 * DAYS)


def tree(*roots: Path) -> dict[str, int]:
    return {str(p): p.lstat().st_size for root in roots for p in sorted(root.rglob("*"))}


def test_a_dry_run_says_what_each_kind_would_remove_and_removes_nothing(tmp_path: Path, registry: SqlRegistry) -> None:
    data, cache = tmp_path / "data", tmp_path / "cache"
    a_bit_of_everything(data, cache)
    mt = "billing.invoice-issued.v1"
    for days in (500, 400, 1):
        add(registry, mt, EvidenceKind.REPLAY, NOW - days * DAYS)
    left = tree(data, cache)

    dry = {p.kind: p for p in hk.housekeep(data, now=NOW, class_cache=cache, registry=registry, dry_run=True)}

    assert tree(data, cache) == left and len(registry.evidence(mt, limit=100)) == 3
    assert all(p.dry_run for p in dry.values())
    done = {p.kind: p for p in hk.housekeep(data, now=NOW, class_cache=cache, registry=registry)}
    assert {k: (p.removed, p.bytes) for k, p in dry.items()} == {
        hk.Kind.DATA_DOCS: (2, 200), hk.Kind.LOGS: (1, 10), hk.Kind.REPORTS: (1, 20), hk.Kind.QUARANTINE: (1, 30),
        hk.Kind.AUDIT_COPIES: (1, 40), hk.Kind.CLASS_ARCHIVES: (1, 50), hk.Kind.EVIDENCE: (2, 0),
    }  # fmt: skip
    assert {k: p.removed for k, p in done.items()} == {k: p.removed for k, p in dry.items()}
    assert {k: p.bytes for k, p in done.items() if k is not hk.Kind.EVIDENCE} == {
        k: p.bytes for k, p in dry.items() if k is not hk.Kind.EVIDENCE
    }
    assert not any(p.dry_run for p in done.values())


def test_the_airflow_clean_dry_run_is_airflows_own_and_deletes_nothing() -> None:
    command = hk.airflow_clean_command(now=NOW, keep=90 * DAYS, airflow="airflow", dry_run=True)
    assert command[-1] == "--dry-run" and "--yes" not in command and "--skip-archive" not in command


def test_each_task_of_the_dag_prunes_its_kinds_and_a_bad_setting_stops_it_before_anything_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, cache = tmp_path / "data", tmp_path / "cache"
    a_bit_of_everything(data, cache)
    places = hk.Places(data, data / "docs", class_cache=cache)
    monkeypatch.setenv("CONTRACT_RETENTION_QUARANTINE", "a month")
    left = tree(data, cache)
    with pytest.raises(UsageError, match="CONTRACT_RETENTION_QUARANTINE: .*unset it for the default, 30d"):
        hk.run_task(hk.Task.PRUNE_FILES, places, now=NOW)
    assert tree(data, cache) == left
    monkeypatch.delenv("CONTRACT_RETENTION_QUARANTINE")

    done = hk.run_task(hk.Task.PRUNE_FILES, places, now=NOW)

    assert [p.kind for p in done] == list(hk.TASK_KINDS[hk.Task.PRUNE_FILES])
    assert sum(p.removed or 0 for p in done) == 7
    with pytest.raises(HousekeepingError, match="registry"):
        hk.run_task(hk.Task.PRUNE_EVIDENCE, places, now=NOW)


# -- settings ----------------------------------------------------------------------------------------------------


def test_each_kind_has_a_setting_and_a_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert set(hk.RETENTIONS) == set(hk.Kind)
    for kind, entry in hk.RETENTIONS.items():
        monkeypatch.delenv(entry.setting, raising=False)
        assert hk.retention(kind) == entry.default
    monkeypatch.setenv("CONTRACT_RETENTION_DATA_DOCS", "2w")
    assert hk.retention(hk.Kind.DATA_DOCS) == timedelta(weeks=2)


@pytest.mark.parametrize("raw", ["30", "0d", "thirty days"])
def test_a_bad_setting_names_its_variable(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("CONTRACT_RETENTION_LOGS", raw)
    with pytest.raises(ValueError, match="CONTRACT_RETENTION_LOGS"):
        hk.retention(hk.Kind.LOGS)


def test_housekeep_prunes_every_kind_of_the_folder_with_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTRACT_RETENTION_LOGS", "10d")
    data = tmp_path / "data"
    log = write(data / "logs" / "cli" / "a.log", at=NOW - 11 * DAYS)
    report = write(data / "reports" / "replay" / "a.json", at=NOW - 11 * DAYS)
    write(data / "reports" / "replay" / "b.json", at=NOW - 10 * DAYS)

    done = {p.kind: p for p in hk.housekeep(data, now=NOW)}

    assert set(done) == {hk.Kind.DATA_DOCS, hk.Kind.LOGS, hk.Kind.REPORTS, hk.Kind.QUARANTINE, hk.Kind.AUDIT_COPIES}
    assert done[hk.Kind.LOGS].removed == 1 and not log.exists()
    assert done[hk.Kind.REPORTS].removed == 0 and report.exists()  # 90d by default


# -- evidence -----------------------------------------------------------------------------------------------------


@pytest.fixture(params=BOTH_STORES)
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlRegistry]:
    with registry_on(request, tmp_path, "housekeeping") as opened:
        yield opened


def add(registry: SqlRegistry, message_type: str, kind: EvidenceKind, at: datetime, version: str = "1.0.0") -> int:
    record = registry.add_evidence(message_type, contract_version=version, kind=kind, verdict=Verdict.PASS,
                                   figures={"n": 1}, collected_at=at)  # fmt: skip
    return record.id


def test_old_evidence_goes_but_the_latest_of_each_kind_and_version_and_what_a_status_change_names_stay(
    registry: SqlRegistry,
) -> None:
    mt = "billing.invoice-issued.v1"
    state = registry.register(mt, "1.0.0", actor="test")
    named = add(registry, mt, EvidenceKind.LINT, NOW - 500 * DAYS)
    registry.apply_transition(mt, expected=state, to=Status.ACTIVE, actor="test", reason="promoted",
                              evidence_id=named)  # fmt: skip
    old = [add(registry, mt, EvidenceKind.ARCHIVE_VALIDATION, NOW - d * DAYS) for d in (700, 500, 400)]
    recent = add(registry, mt, EvidenceKind.ARCHIVE_VALIDATION, NOW - 5 * DAYS)
    only_old = add(registry, mt, EvidenceKind.REPLAY, NOW - 900 * DAYS)
    newest_lint = add(registry, mt, EvidenceKind.LINT, NOW - 2 * DAYS)
    earlier_version = add(registry, mt, EvidenceKind.REPLAY, NOW - 800 * DAYS, version="0.9.0")  # its own latest

    pruned = hk.prune_evidence(registry, now=NOW, keep=365 * DAYS)

    assert (pruned.kind, pruned.removed) == (hk.Kind.EVIDENCE, 3)
    kept = {r.id for r in registry.evidence(mt, limit=1000)}
    assert kept == {named, recent, only_old, newest_lint, earlier_version}
    assert not kept & set(old)
    assert hk.prune_evidence(registry, now=NOW, keep=365 * DAYS).removed == 0


def footprint(path: Path) -> int:
    """An SQLite store's bytes on disk: its file and its write-ahead log."""
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def test_a_pruned_sqlite_store_gives_the_space_back_and_a_store_pruned_daily_stays_level(tmp_path: Path) -> None:
    path = tmp_path / "registry.db"
    mt = "billing.invoice-issued.v1"
    with SqlRegistry.open(f"sqlite:///{path}") as registry:

        def collect(days: range) -> None:  # a day's evidence: big figures, as replay and validation write
            for day in days:
                for kind in (EvidenceKind.ARCHIVE_VALIDATION, EvidenceKind.REPLAY):
                    registry.add_evidence(mt, contract_version="1.0.0", kind=kind, verdict=Verdict.PASS,
                                          figures={"rows": "x" * 2000}, collected_at=NOW - day * DAYS)  # fmt: skip

        collect(range(400, 0, -1))
        grown = footprint(path)
        pruned = hk.prune_evidence(registry, now=NOW, keep=30 * DAYS)
        assert pruned.removed == 2 * 370
        shrunk = footprint(path)
        assert shrunk < grown / 5 and pruned.bytes >= grown - shrunk, (grown, shrunk, pruned.bytes)
        assert "compacted" in pruned.note

        level = path.stat().st_size
        sizes = []
        for later in range(1, 61):  # two more months of collecting and pruning daily
            collect(range(-later + 1, -later, -1))
            hk.prune_evidence(registry, now=NOW + later * DAYS, keep=30 * DAYS)
            with contextlib.closing(sqlite3.connect(path)) as checkpoint:  # SQLite's automatic checkpoint, now
                checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            sizes.append(path.stat().st_size)
        assert max(sizes) <= level + 16 * 4096, (level, sizes)  # the pages pruning frees are reused: no growth


def test_a_store_with_little_free_space_is_not_compacted(tmp_path: Path) -> None:
    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as registry:
        ids = [add(registry, "billing.invoice-issued.v1", EvidenceKind.LINT, NOW - d * DAYS) for d in range(40, 0, -1)]
        pruned = hk.prune_evidence(registry, now=NOW, keep=39 * DAYS)
        assert (pruned.removed, pruned.bytes, pruned.note) == (1, 0, "")
        assert len(registry.evidence("billing.invoice-issued.v1", limit=100)) == len(ids) - 1


# -- airflow metadata ---------------------------------------------------------------------------------------------


def test_the_airflow_clean_command_purges_without_archive_tables_or_a_prompt() -> None:
    command = hk.airflow_clean_command(now=NOW, keep=90 * DAYS, airflow="airflow")
    assert command[:3] == ["airflow", "db", "clean"]
    at = command.index("--clean-before-timestamp") + 1
    assert datetime.fromisoformat(command[at]) == NOW - 90 * DAYS
    assert {"--yes", "--skip-archive", "--error-on-cleanup-failure"} <= set(command)


def test_a_failing_airflow_clean_says_so_without_the_password(tmp_path: Path) -> None:
    environ = {**os.environ, "AIRFLOW_HOME": str(tmp_path / "airflow"),
               "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "postgresql+psycopg2://airflow:hunter2@127.0.0.1:1/nowhere"}  # fmt: skip
    with pytest.raises(HousekeepingError, match="airflow db clean") as raised:
        hk.clean_airflow_metadata(now=NOW, keep=90 * DAYS, environ=environ, timeout=300)
    assert "hunter2" not in str(raised.value)
    assert "Traceback" not in str(raised.value) and "refused" in str(raised.value)


def test_inside_an_airflow_task_the_platforms_metadata_url_stands_in_for_the_blocked_one(tmp_path: Path) -> None:
    blocked = {**os.environ, "AIRFLOW_HOME": str(tmp_path / "airflow"),
               "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "airflow-db-not-allowed:///",
               "AIRFLOW__CORE__SQL_ALCHEMY_CONN": "airflow-db-not-allowed:///"}  # fmt: skip
    blocked.pop("CONTRACT_AIRFLOW_DB_URL", None)
    with pytest.raises(HousekeepingError, match="set CONTRACT_AIRFLOW_DB_URL on the workers"):
        hk.clean_airflow_metadata(now=NOW, keep=90 * DAYS, environ=blocked)
    named = {**blocked, "CONTRACT_AIRFLOW_DB_URL": "postgresql+psycopg2://airflow:hunter2@127.0.0.1:1/nowhere"}
    with pytest.raises(HousekeepingError, match="refused") as raised:  # it went to the named database
        hk.clean_airflow_metadata(now=NOW, keep=90 * DAYS, environ=named, timeout=300)
    assert "hunter2" not in str(raised.value)

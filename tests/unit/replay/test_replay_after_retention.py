"""``contractctl check --replay`` after archive retention deleted the oldest days of its window (docs/replay.md,
docs/archive-validation.md#retention): it neither fails nor counts those days, and says which of them are gone.

A contract may replay a longer window (``compatibility.window``) than its archive keeps (``retention.archive``).
The days past the retention are deleted by ``contractctl retention apply`` (the ``archive_retention`` DAG), with
evidence naming each partition: known, not unknown. The replay reads only the days the archive keeps, whether
retention ran yet or not, and its figures and reasons name the deleted part.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support.replay import ORDER, check_replay_args, tighten, write_archive

from contract_platform.catalog import load_catalog
from contract_platform.cli.main import main
from contract_platform.evidence import EvidenceKind
from contract_platform.evidence.figures import ReplayFigures
from contract_platform.replay.local import tally_local
from contract_platform.replay.results import record_result
from contract_platform.replay.run import replay_targets, replay_window
from contract_platform.retention import apply_archive_retention
from contract_platform.store import SqlRegistry
from contract_platform.validation.bundle import CatalogBundle

WINDOW, KEPT = 120, 90  # compatibility.window and retention.archive of order.order-created.v1, in days


def _catalogue(tmp_path: Path, catalog_dir: Path) -> tuple[Path, dict[str, Any]]:
    """The stricter orderId (accepted on evidence), replayed over 120 days while the archive keeps 90."""
    catalog_path, old = tighten(
        Path(shutil.copytree(catalog_dir, tmp_path / "contracts")),
        compatibility={"tightening": "evidence", "window": f"{WINDOW}d"},
    )
    contract_file = catalog_path / "order" / "order-created" / "v1" / "contract.yaml"
    raw = yaml.safe_load(contract_file.read_text(encoding="utf-8"))
    assert raw["retention"]["archive"] == f"{KEPT}d"
    return catalog_path, old


def test_check_replay_after_a_retention_deletion_names_the_deleted_days_and_counts_only_what_is_kept(
    tmp_path: Path, catalog_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog_path, old = _catalogue(tmp_path, catalog_dir)
    now = datetime.now(UTC)
    archive = tmp_path / "archive"
    for days_ago, numbers in ((110, [10_001, 10_002]), (95, [10_003]), (30, [10_004, 10_005]), (0, [10_006])):
        write_archive(archive, catalog_path, numbers, now - timedelta(days=days_ago))
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    catalog = load_catalog(catalog_path)
    with SqlRegistry.open(url) as registry:
        registry.snapshot_schema(ORDER, "1.2.0", old)
        run = apply_archive_retention(catalog, archive, now=now, holds={}, registry=registry)
    kept_since = (now - timedelta(days=KEPT)).date()
    assert sorted(p.day for p in run.deleted) == [(now - timedelta(days=d)).date() for d in (110, 95)]

    code = main([*check_replay_args(catalog_path, url, archive), "--engine", "local"])

    report = json.loads(capsys.readouterr().out)
    (replayed,) = [r for r in report["replay"] if r["messageType"] == ORDER]
    figures = replayed["figures"]
    since = (now - timedelta(days=WINDOW - 1)).date()
    assert code == 0 and figures["decision"] == "accepted-on-evidence", figures
    assert (figures["window_days"], figures["since"]) == (WINDOW, since.isoformat())  # the window asked for
    assert figures["replayed"] == 3  # the kept days' messages only: none of the deleted ones counted
    assert figures["archive_retention"] == {
        "exchange": "order.events",
        "window": f"{KEPT}d",
        "deleted_since": since.isoformat(),
        "deleted_until": kept_since.isoformat(),
        "deleted_days": (kept_since - since).days,
        "replayed_days": WINDOW - (kept_since - since).days,
    }
    last_deleted = kept_since - timedelta(days=1)
    assert (
        f"archive: the window's {(kept_since - since).days} days from {since} to {last_deleted} are past the "
        f"archive's retention ({KEPT}d on order.events) and deleted by archive retention"
    ) in " ".join(figures["reasons"]), figures["reasons"]


def test_the_replay_reads_the_same_days_whether_retention_ran_or_not_and_records_what_is_gone(
    tmp_path: Path, catalog_dir: Path
) -> None:
    """A partition past the window that retention has not deleted yet (or that a hold keeps) is not replayed:
    the figures do not depend on when retention last ran. The evidence keeps the deleted part."""
    catalog_path, old = _catalogue(tmp_path, catalog_dir)
    now = datetime.now(UTC)
    archive = tmp_path / "archive"
    write_archive(archive, catalog_path, [10_001, 10_002], now - timedelta(days=100))  # past 90d, still there
    write_archive(archive, catalog_path, [10_003], now - timedelta(days=1))
    catalog = load_catalog(catalog_path)
    (target,) = replay_targets(catalog, lambda c: [("1.2.0", old)] if c.message_type == ORDER else [], [ORDER])
    bundle_dir = str(catalog_path)

    (before,) = replay_window([target], str(archive), CatalogBundle.read(bundle_dir), tally_local, now=now)
    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as registry:
        apply_archive_retention(catalog, archive, now=now, holds={}, registry=registry)
        (after,) = replay_window([target], str(archive), CatalogBundle.read(bundle_dir), tally_local, now=now)
        record_result(registry, after, run_id="after-retention")
        (stored,) = registry.evidence(ORDER, EvidenceKind.REPLAY)

    assert before.figures() == after.figures()
    assert after.archive.replayed == 1 and after.deleted_until == (now - timedelta(days=KEPT)).date()
    assert ReplayFigures.from_json(stored.figures).archive_retention == after.figures()["archive_retention"]

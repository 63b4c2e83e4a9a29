"""Replay's two archive engines (docs/replay.md#engines) list the same files and count the same tally.

One archive of every kind of line replay meets (``tests.support.replay.mixed_archive``: valid, rejected,
invalid for both versions, undecodable, oversized, CRLF, plain and gzipped, a gzip file cut short, two
dates plus a partition that links outside the archive, and hidden, temporary, out-of-window and dangling
files that must not count), replayed by the Spark job's engine and by the in-process one.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tests.support.replay import NOW, ORDER, mixed_archive, tighten

from contract_platform.catalog import load_catalog
from contract_platform.replay.judge import Tally
from contract_platform.replay.local import replay_locally, tally_local, window_files
from contract_platform.replay.run import replay_targets, window_of
from contract_platform.validation.bundle import CatalogBundle
from spark_jobs import replay as job
from spark_jobs.archive_splits import list_archive


def _counts(tally: Tally) -> dict[str, Any]:
    """Everything a tally says; samples as a set (Spark adds its partitions' tallies in no set order)."""
    return {
        "replayed": tally.replayed,
        "rejected": tally.rejected,
        "already_invalid": tally.already_invalid,
        "pointers": dict(tally.pointers),
        "samples": sorted(tally.samples),
        "unreadable": tally.unreadable,
        "unreadable_reasons": dict(tally.unreadable_reasons),
    }


def test_both_engines_list_the_same_files_and_count_the_same_tally(spark, catalog_dir: Path, tmp_path: Path):
    catalog_path, old = tighten(Path(shutil.copytree(catalog_dir, tmp_path / "contracts")))
    root = mixed_archive(tmp_path / "archive", catalog_path, tmp_path / "outside")
    (target,) = replay_targets(
        load_catalog(catalog_path), lambda c: [("1.2.0", old)] if c.message_type == ORDER else [], [ORDER]
    )
    since, until = window_of(target.contract, NOW)
    bundle = CatalogBundle.read(catalog_path)

    spark_files = list_archive(spark, str(root / target.exchange), since, until)
    local_files = window_files(root, target.exchange, since, until)
    on_spark = job.spark_tally(spark)(str(root), target, bundle, since, until)
    in_process = tally_local(str(root), target, bundle, since, until)

    assert [(uri.removeprefix("file://"), size) for uri, size in spark_files] == local_files
    assert len(local_files) == 4
    assert _counts(in_process) == _counts(on_spark)
    assert (in_process.replayed, in_process.rejected, in_process.unreadable) == (73, 10, 2)  # every kind was met


def test_the_whole_replay_decides_the_same_on_both_engines(spark, catalog_dir: Path, tmp_path: Path):
    catalog_path, old = tighten(
        Path(shutil.copytree(catalog_dir, tmp_path / "contracts")), compatibility={"tightening": "evidence"}
    )
    root = mixed_archive(tmp_path / "archive", catalog_path, tmp_path / "outside")
    catalog = load_catalog(catalog_path)

    def history(contract: Any) -> list[tuple[str, Any]]:
        return [("1.2.0", old)] if contract.message_type == ORDER else []

    on_spark = job.replay_archive(spark, str(root), str(catalog_path), catalog, history, in_flight=False, now=NOW)
    in_process = replay_locally(
        replay_targets(catalog, history), str(root), str(catalog_path), in_flight=False, now=NOW
    )

    def figures(results: list[Any]) -> dict[str, Any]:
        shown = {r.message_type: r.figures() for r in results}
        for each in shown.values():
            each["sample_message_ids"] = sorted(each["sample_message_ids"])
        return shown

    assert figures(in_process) == figures(on_spark)
    assert figures(in_process)[ORDER]["decision"] == "refused"

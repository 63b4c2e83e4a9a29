"""Replay in this process (docs/replay.md#engines): what it lists and counts, when it is chosen, and that
``contractctl check --replay`` on a small archive starts no JVM. Parity with the Spark engine on the same
archive: tests/spark/test_replay_engines.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from tests.support.replay import NOW, ORDER, check_replay_args, mixed_archive, tighten, write_archive

from contract_platform.catalog import load_catalog
from contract_platform.errors import ArchiveError, UsageError
from contract_platform.replay import local
from contract_platform.replay.local import Engine, choose_engine, local_root, replay_locally, tally_local, window_files
from contract_platform.replay.run import ReplayTarget, replay_targets, window_of
from contract_platform.store import SqlRegistry
from contract_platform.validation.bundle import CatalogBundle


@pytest.fixture()
def stricter(tmp_path: Path, catalog_dir: Path) -> tuple[Path, ReplayTarget]:
    """A catalogue copy whose orderId pattern is stricter, and its replay target (1.2.0 in service)."""
    catalog_path, old = tighten(Path(shutil.copytree(catalog_dir, tmp_path / "contracts")))
    (target,) = replay_targets(
        load_catalog(catalog_path), lambda c: [("1.2.0", old)] if c.message_type == ORDER else [], [ORDER]
    )
    return catalog_path, target


def test_the_window_lists_what_spark_lists_links_followed_hidden_and_temporary_files_left_out(stricter, tmp_path):
    catalog_path, target = stricter
    root = mixed_archive(tmp_path / "archive", catalog_path, tmp_path / "outside")
    since, until = window_of(target.contract, NOW)

    listed = [
        Path(path).relative_to(root / "order.events").as_posix()
        for path, _ in window_files(root, target.exchange, since, until)
    ]

    assert listed == [
        "date=2026-11-18/part-0006.jsonl",  # a partition that links outside the archive
        "date=2026-11-19/part-0000.jsonl",
        "date=2026-11-20/part-0001.jsonl.gz",
        "date=2026-11-20/part-0002.jsonl.gz",
    ]


def test_the_in_process_tally_counts_every_kind_of_line_as_the_record_engine_judges_it(stricter, tmp_path):
    catalog_path, target = stricter
    root = mixed_archive(tmp_path / "archive", catalog_path, tmp_path / "outside")
    since, until = window_of(target.contract, NOW)

    tally = tally_local(str(root), target, CatalogBundle.read(catalog_path), since, until)

    assert (tally.replayed, tally.rejected, tally.already_invalid, tally.unreadable) == (73, 10, 2, 2)
    assert tally.top_pointers() == [{"pointer": "/payload/orderId", "keyword": "pattern", "count": 10}]
    assert sorted(tally.samples) == sorted(
        [f"m-2026-11-19-{n}" for n in range(100, 106)]
        + ["m-2026-11-20-106", "m-2026-11-20-107"]
        + ["m-2026-11-18-109", "m-2026-11-18-110"]
    )  # none from the hidden, temporary, out-of-window or dangling files, all of which hold rejected ones
    assert sorted(r["reason"].split(":")[1].strip() for r in tally.unreadable_shown()) == [
        "body is not JSON",
        "body is not UTF-8 text (byte 0 of 1005)",
    ]


def test_a_link_back_to_a_folder_above_is_an_archive_error_naming_it_never_a_loop(stricter, tmp_path):
    _, target = stricter
    partition = tmp_path / "archive" / "order.events" / f"date={NOW.date().isoformat()}"
    (partition / "again").mkdir(parents=True)
    (partition / "again" / "up").symlink_to(partition, target_is_directory=True)
    since, until = window_of(target.contract, NOW)

    with pytest.raises(ArchiveError) as raised:
        window_files(tmp_path / "archive", target.exchange, since, until)

    assert f"{partition / 'again' / 'up'}: a symbolic link back to a folder above it" in str(raised.value)


def test_a_fifo_and_a_link_that_leads_nowhere_are_left_out_and_the_run_does_not_block(stricter, tmp_path):
    catalog_path, target = stricter
    archive = write_archive(tmp_path / "archive", catalog_path, [10_001, 10_002], NOW)
    partition = archive / "order.events" / f"date={NOW.date().isoformat()}"
    os.mkfifo(partition / "pipe.jsonl")  # opening it would wait for a writer forever
    (partition / "gone.jsonl").symlink_to(tmp_path / "nowhere.jsonl")  # Spark's listing leaves it out too
    since, until = window_of(target.contract, NOW)

    tally = tally_local(str(archive), target, CatalogBundle.read(catalog_path), since, until)

    assert tally.replayed == 2


def test_a_file_gone_between_listing_and_reading_is_an_archive_error_naming_it(stricter, tmp_path, monkeypatch):
    catalog_path, target = stricter
    gone = tmp_path / "archive" / "order.events" / f"date={NOW.date().isoformat()}" / "part-0000.jsonl"
    monkeypatch.setattr(local, "window_files", lambda *_: [(str(gone), 120)])  # listed, then moved away
    since, until = window_of(target.contract, NOW)

    with pytest.raises(ArchiveError) as raised:
        tally_local(str(tmp_path / "archive"), target, CatalogBundle.read(catalog_path), since, until)

    assert str(raised.value).startswith(f"{gone}: cannot open the archive file")
    assert "check that it is readable, or run again" in str(raised.value)


def test_replaying_locally_an_archive_that_does_not_exist_says_where(stricter, tmp_path):
    catalog_path, target = stricter

    with pytest.raises(UsageError, match=f"no archive at {tmp_path / 'missing'}: give the archive root"):
        replay_locally([target], str(tmp_path / "missing"), str(catalog_path), in_flight=False, now=NOW)


@pytest.mark.parametrize(
    ("archive", "local"),
    [
        ("/srv/archive", True),
        ("file:///srv/archive", True),
        ("file:/srv/archive", True),
        ("relative/archive", True),
        ("s3a://bucket/archive", False),
        ("hdfs://namenode/archive", False),
        ("file://otherhost/archive", False),
    ],
)
def test_only_plain_paths_and_file_uris_are_local(archive: str, local: bool):
    assert (local_root(archive) is not None) is local


def test_a_small_local_window_runs_in_process_and_a_large_or_remote_one_on_spark(stricter, tmp_path):
    catalog_path, target = stricter
    archive = write_archive(tmp_path / "archive", catalog_path, [10_000 + n for n in range(50)], NOW)
    size = sum(p.stat().st_size for p in archive.rglob("*.jsonl"))

    small = choose_engine("auto", str(archive), [target], NOW)
    assert (small.engine, small.window_bytes) == (Engine.LOCAL, size)
    assert choose_engine("auto", f"file://{archive}", [target], NOW).engine is Engine.LOCAL
    assert choose_engine("auto", str(archive), [target], NOW, limit=size - 1).engine is Engine.SPARK
    assert choose_engine("auto", "s3a://bucket/archive", [target], NOW).engine is Engine.SPARK
    assert choose_engine("spark", str(archive), [target], NOW).engine is Engine.SPARK
    assert choose_engine("local", str(archive), [target], NOW, limit=size - 1).engine is Engine.LOCAL
    with pytest.raises(UsageError, match="--engine local: s3a://bucket/archive is not on the local file system"):
        choose_engine("local", "s3a://bucket/archive", [target], NOW)


def test_a_gzipped_file_weighs_as_the_records_it_holds_not_its_size_on_disk(stricter, tmp_path):
    catalog_path, target = stricter
    root = mixed_archive(tmp_path / "archive", catalog_path, tmp_path / "outside")
    listed = window_files(root, target.exchange, *window_of(target.contract, NOW))
    on_disk = sum(size for _, size in listed)
    gzipped = sum(size for path, size in listed if path.endswith(".gz"))

    assert choose_engine("auto", str(root), [target], NOW, limit=on_disk).engine is Engine.SPARK
    choice = choose_engine("auto", str(root), [target], NOW, limit=on_disk + 7 * gzipped)
    assert (choice.engine, choice.window_bytes) == (Engine.LOCAL, on_disk)


def test_the_window_size_counts_only_the_window_of_each_version(stricter, tmp_path):
    catalog_path, target = stricter
    write_archive(tmp_path / "archive", catalog_path, [10_000 + n for n in range(50)], datetime(2026, 1, 1, tzinfo=UTC))

    choice = choose_engine("auto", str(tmp_path / "archive"), [target], NOW)

    assert (choice.engine, choice.window_bytes) == (Engine.LOCAL, 0)  # January is not in November's window


def _check_in_a_fresh_process(
    catalog_path: Path, archive: Path, url: str, home: Path, *extra: str
) -> tuple[int, dict[str, Any], list[str]]:
    """``contractctl check --replay`` in a new interpreter: exit code, JSON report, and the modules of Spark
    (pyspark, py4j) the process had imported when it finished."""
    probe = (
        "import sys\n"
        "from contract_platform.cli.main import main\n"
        "code = main(sys.argv[1:])\n"
        "sys.stderr.write('SPARK MODULES ' + ','.join(sorted({m.split('.')[0] for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')})) + '\\n')\n"
        "sys.exit(code)\n"
    )
    command = [
        sys.executable,
        "-c",
        probe,
        *check_replay_args(catalog_path, url, archive),
        *extra,
    ]
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("CONTRACT_", "PYSPARK_", "SPARK_"))}
    environment["CONTRACT_PLATFORM_HOME"] = str(home)
    done = subprocess.run(command, capture_output=True, text=True, env=environment, check=False, timeout=120)
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("SPARK MODULES")]
    return done.returncode, json.loads(done.stdout), [m for m in line.removeprefix("SPARK MODULES ").split(",") if m]


def test_check_replay_of_a_small_archive_judges_it_without_starting_a_jvm(tmp_path, catalog_dir):
    """A fresh interpreter (a few seconds): only a new process shows whether Spark was ever imported."""
    catalog_path, old = tighten(
        Path(shutil.copytree(catalog_dir, tmp_path / "contracts")), compatibility={"tightening": "evidence"}
    )
    archive = write_archive(
        tmp_path / "archive", catalog_path, [10_000 + n for n in range(97)] + [1, 2, 3], datetime.now(UTC)
    )
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    registry = SqlRegistry.open(url)
    registry.snapshot_schema(ORDER, "1.2.0", old)
    registry.close()

    code, report, spark_modules = _check_in_a_fresh_process(catalog_path, archive, url, tmp_path / "home", "--verbose")

    (replayed,) = [r for r in report["replay"] if r["messageType"] == ORDER]
    assert code == 1 and replayed["figures"]["decision"] == "refused"
    assert (replayed["figures"]["replayed"], replayed["figures"]["rejected"]) == (100, 3)
    assert spark_modules == []  # neither pyspark nor py4j was imported: no JVM
    assert not list((tmp_path / "home").glob("logs/cli/*.log"))  # and no Spark log written

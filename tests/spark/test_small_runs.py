"""What keeps a small archive validation's fixed cost small, and what it must not change.

A JVM the process launches gets its start-up settings on its command line (no console progress bar,
the client compiler for a small input); a small input is checked in the driver, and the report and
quarantine are the same as when the Python workers check it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from benchmarks.generate_archive import DEFECTS, ArchiveSpec, generate_archive

from contract_platform.validation.request import ValidationRequest
from spark_jobs import validate_archive as job
from spark_jobs.session import DRIVER_MEMORY_RANGE, default_driver_memory, driver_memory_chosen, launch_conf

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
VOLATILE = {"elapsed_seconds", "throughput", "started_at"}  # differ run to run, not result


@pytest.fixture(scope="module")
def defective(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Path:
    """300 records, two of every kind of defect, cross-record ones included, in gzipped and plain files."""
    root = tmp_path_factory.mktemp("small") / "archive"
    spec = ArchiveSpec(
        messages=300,
        defects={kind: 2 for kind in DEFECTS},
        message_types=("billing.invoice-issued.v1", "billing.invoice-issued.v2", "order.order-created.v1"),
        compression="mixed",
        seed=5,
    )
    generated = generate_archive(root, catalog_dir, spec)
    assert {"DUPLICATE", "OUT_OF_ORDER", "CONFLICTING_DUPLICATE"} <= set(generated.expected_by_reason)
    return root


def stable(report: Any) -> dict[str, Any]:
    """The report without what differs from run to run."""
    return {k: v for k, v in report.to_dict().items() if k not in VOLATILE and k != "quarantine"}


def quarantined(folder: Path) -> list[str]:
    return sorted(line for path in folder.glob("part-*") for line in path.read_text().splitlines())


def test_a_small_input_checked_in_the_driver_gives_the_report_and_quarantine_of_the_workers(
    spark: Any, defective: Path, catalog_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_driver = job.run_validation(
        spark, ValidationRequest(defective, catalog=catalog_dir, quarantine=tmp_path / "driver")
    )
    monkeypatch.setattr(job, "_IN_DRIVER_WORK", -1)  # nothing is small enough: the Python workers check it
    by_workers = job.run_validation(
        spark, ValidationRequest(defective, catalog=catalog_dir, quarantine=tmp_path / "workers")
    )

    assert in_driver.totals.records == 300 and in_driver.totals.invalid > 0
    assert stable(in_driver) == stable(by_workers)
    assert quarantined(tmp_path / "driver") == quarantined(tmp_path / "workers") != []


def test_the_shuffle_joins_of_a_large_input_give_the_report_and_quarantine_of_the_broadcasts(
    spark: Any, defective: Path, catalog_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broadcast = job.run_validation(
        spark, ValidationRequest(defective, catalog=catalog_dir, quarantine=tmp_path / "broadcast")
    )
    # as if the input were too large to broadcast anything: records counted, then copies and flags
    monkeypatch.setattr(job, "_SMALL_INPUT", -1)
    monkeypatch.setattr(job, "_BROADCAST_ROWS", 0)
    monkeypatch.setattr(job, "_BROADCAST_KEYS", 0)
    shuffled = job.run_validation(
        spark, ValidationRequest(defective, catalog=catalog_dir, quarantine=tmp_path / "shuffled")
    )

    assert {"DUPLICATE", "CONFLICTING_DUPLICATE", "OUT_OF_ORDER"} <= set(broadcast.to_dict()["by_reason"])
    assert stable(broadcast) == stable(shuffled)
    assert quarantined(tmp_path / "broadcast") == quarantined(tmp_path / "shuffled") != []


@pytest.fixture(scope="module")
def class_cache(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a process whose JVM keeps its class-data archive in a folder of this module."""
    return {**os.environ, "CONTRACT_JVM_CLASS_CACHE": str(tmp_path_factory.mktemp("class-cache"))}


PROBE = """
import argparse, json
from spark_jobs.jobs import JobRun
run = JobRun("launch-probe", argparse.Namespace(master="local[1]"), quick_start=True)
context = run.spark.sparkContext
arguments = list(context._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
print(json.dumps({"progress": context.getConf().get("spark.ui.showConsoleProgress"), "jvm": arguments}))
run.close()
"""


def test_a_jvm_this_process_launches_has_no_progress_bar_a_quick_start_and_its_class_archive(
    class_cache: dict[str, str],
) -> None:
    def probe() -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-c", PROBE], cwd=ROOT, env=class_cache, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))

    first = probe()
    assert first["progress"] == "false"  # pyspark's shell launch would have turned it on
    assert f"-Xmx{default_driver_memory()}" in first["jvm"]  # not Spark's 1g: the driver caches the records
    assert "-XX:TieredStopAtLevel=1" in first["jvm"]
    assert any(argument.startswith("-XX:ArchiveClassesAtExit=") for argument in first["jvm"])
    folder = Path(class_cache["CONTRACT_JVM_CLASS_CACHE"])
    [archive] = folder.iterdir()  # written when the JVM exited, then put in place: nothing half-written left
    assert archive.suffix == ".jsa"
    assert f"-XX:SharedArchiveFile={archive}" in probe()["jvm"]  # the next JVM maps it


@pytest.mark.parametrize(
    ("environment", "defaults", "chosen"),
    [
        ({}, None, False),
        ({"SPARK_DRIVER_MEMORY": "1536m"}, None, True),
        ({"PYSPARK_SUBMIT_ARGS": "--driver-memory 2g pyspark-shell"}, None, True),
        ({"PYSPARK_SUBMIT_ARGS": "--conf spark.driver.memory=2g pyspark-shell"}, None, True),
        ({}, "spark.driver.memory   6g\n", True),
        ({}, "spark.driver.memory=6g\n", True),
        ({}, "# spark.driver.memory 6g\nspark.driver.memoryOverhead 1g\n", False),
    ],
)
def test_a_driver_the_user_sized_keeps_its_size(
    environment: dict[str, str],
    defaults: str | None,
    chosen: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("SPARK_DRIVER_MEMORY", "PYSPARK_SUBMIT_ARGS", "SPARK_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    if defaults is not None:
        (tmp_path / "spark-defaults.conf").write_text(defaults)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert driver_memory_chosen() is chosen
    assert (launch_conf().get("spark.driver.memory") is None) is chosen
    low, high = DRIVER_MEMORY_RANGE
    assert low <= int(default_driver_memory().removesuffix("g")) <= high


def test_contractctl_validate_archive_writes_no_progress_bar(
    defective: Path, tmp_path: Path, class_cache: dict[str, str]
) -> None:
    contractctl = Path(sys.executable).with_name("contractctl")
    done = subprocess.run(
        [str(contractctl), "validate-archive", str(defective), "--report", str(tmp_path / "report.json")],
        cwd=ROOT,
        env=class_cache,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stderr[-2000:]  # the defects are findings
    assert json.loads((tmp_path / "report.json").read_text())["totals"]["records"] == 300
    assert "[Stage" not in done.stderr

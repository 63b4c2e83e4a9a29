"""What keeps a small archive validation's fixed cost small, and what it must not change.

A JVM the process launches gets its start-up settings on its command line (no console progress bar,
the client compiler for a small input); a small input is checked in the driver, and the report and
quarantine are the same as when the Python workers check it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from benchmarks.generate_archive import DEFECTS, ArchiveSpec, generate_archive

from spark_jobs import validate_archive as job

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


def quarantined(folder: Path) -> list[str]:
    return sorted(line for path in folder.glob("part-*") for line in path.read_text().splitlines())


def test_a_small_input_checked_in_the_driver_gives_the_report_and_quarantine_of_the_workers(
    spark: Any, defective: Path, catalog_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_driver = job.run_validation(spark, defective, catalog_dir, quarantine_dir=tmp_path / "driver")
    monkeypatch.setattr(job, "_IN_DRIVER_WORK", -1)  # nothing is small enough: the Python workers check it
    by_workers = job.run_validation(spark, defective, catalog_dir, quarantine_dir=tmp_path / "workers")

    def stable(report: Any) -> dict[str, Any]:
        return {k: v for k, v in report.to_dict().items() if k not in VOLATILE and k != "quarantine"}

    assert in_driver.totals.records == 300 and in_driver.totals.invalid > 0
    assert stable(in_driver) == stable(by_workers)
    assert quarantined(tmp_path / "driver") == quarantined(tmp_path / "workers") != []


def test_a_jvm_this_process_launches_has_no_progress_bar_and_a_quick_start_when_asked() -> None:
    probe = (
        "import json\n"
        "from spark_jobs._common import build_session\n"
        "spark, created = build_session('launch-probe', 'local[1]', quick_start=True)\n"
        "jvm = spark.sparkContext._jvm\n"
        "arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())\n"
        "conf = spark.sparkContext.getConf()\n"
        "print(json.dumps({'created': created, 'progress': conf.get('spark.ui.showConsoleProgress'), 'jvm': arguments}))\n"
        "spark.stop()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300, check=True
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["created"] is True
    assert seen["progress"] == "false"  # pyspark's shell launch would have turned it on
    assert "-XX:TieredStopAtLevel=1" in seen["jvm"]


def test_contractctl_validate_archive_writes_no_progress_bar(defective: Path, tmp_path: Path) -> None:
    contractctl = Path(sys.executable).with_name("contractctl")
    done = subprocess.run(
        [str(contractctl), "validate-archive", str(defective), "--report", str(tmp_path / "report.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stderr[-2000:]  # the defects are findings
    assert json.loads((tmp_path / "report.json").read_text())["totals"]["records"] == 300
    assert "[Stage" not in done.stderr

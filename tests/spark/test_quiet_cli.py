"""A Spark-backed verb prints only the platform's lines; the JVM's and Spark's go to a log under the data folder.

Each test is one ``contractctl validate-archive`` process: it starts its own JVM (the shared session
fixture would hide the launch), so each costs a JVM start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks.generate_archive import DEFECTS, ArchiveSpec, generate_archive

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
# What a JVM and Spark print on their own when pyspark starts them (measured on a plain run before this change)
JVM_CHATTER = ("log4j", "WARN NativeCodeLoader", "Using Spark's default", "incubator", "WARN Utils", "WARNING")
SESSION_PREFIXES = ("AIRFLOW", "CONTRACT_", "PYSPARK_")  # the test session's settings, not a user's


def contractctl(*argv: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SESSION_PREFIXES)}
    env |= {"CONTRACT_PLATFORM_HOME": str(home), "CONTRACT_JVM_CLASS_CACHE": os.environ["CONTRACT_JVM_CLASS_CACHE"]}
    return subprocess.run(
        [str(Path(sys.executable).with_name("contractctl")), *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def archive(root: Path, catalog_dir: Path, defects: dict[str, int]) -> Path:
    spec = ArchiveSpec(messages=30, defects=defects, message_types=("order.order-created.v1",), seed=11)
    generate_archive(root, catalog_dir, spec)
    return root


def only_log_line(stderr: str, home: Path) -> Path:
    """stderr holds one line, the log's path, and the log is under the data folder."""
    [line] = stderr.strip().splitlines()
    prefix = "contractctl: Spark and JVM log: "
    assert line.startswith(prefix), stderr[-2000:]
    path = Path(line.removeprefix(prefix))
    assert path.parent == home / "logs" / "cli" and path.name.startswith("validate-archive-")
    return path


def test_findings_leave_stderr_quiet_but_for_the_log_path(tmp_path: Path, catalog_dir: Path) -> None:
    home = tmp_path / "data"
    defective = archive(tmp_path / "archive", catalog_dir, {kind: 1 for kind in sorted(DEFECTS)[:2]})
    done = contractctl(
        "validate-archive",
        str(defective),
        "--catalog",
        str(catalog_dir),
        "--report",
        str(tmp_path / "r.json"),
        home=home,
    )
    assert done.returncode == 1, done.stderr[-2000:]  # the defects are findings: a failed run
    assert json.loads((tmp_path / "r.json").read_text())["totals"]["invalid"] >= 1
    assert not [marker for marker in JVM_CHATTER if marker in done.stderr]
    log = only_log_line(done.stderr, home).read_text()
    assert "Using incubator modules" in log  # the JVM's own start-up lines are kept, in the log
    # a local driver binds to loopback and logs with the platform's configuration (contract_platform/jvm.py):
    # neither the host name's loopback warning nor Hadoop's native-library notice is there to act on
    assert "resolves to a loopback address" not in log and "NativeCodeLoader" not in log


def test_verbose_prints_the_log_path_of_a_passing_run(tmp_path: Path, catalog_dir: Path) -> None:
    home = tmp_path / "data"
    clean = archive(tmp_path / "archive", catalog_dir, {})
    done = contractctl("validate-archive", str(clean), "--catalog", str(catalog_dir), "--verbose", home=home)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["totals"]["invalid"] == 0  # the report is stdout, untouched by the JVM
    assert not [marker for marker in JVM_CHATTER if marker in done.stderr]
    assert "Setting default log level" in only_log_line(done.stderr, home).read_text()

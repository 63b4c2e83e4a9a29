"""The main job's console: one line per step; what a step prints goes to its log; a warning is kept once."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from contract_platform_airflow.main_job import Progress, note

STEP_LINE = re.compile(r"^\[(\d+)/(\d+)\] (.+) \((\d+\.\d)s, total (\d+\.\d)s\)$")


@pytest.fixture
def progress(tmp_path: Path) -> Progress:
    return Progress(total=2, logs=tmp_path / "logs")


def noisy() -> int:
    print('{"report": "a Spark job\'s JSON report"}')
    print("a task log line", file=sys.stderr)
    subprocess.run([sys.executable, "-c", "print('spark-submit output')"], check=True)
    note("3 contracts")
    return 3


def test_a_step_is_one_console_line_and_its_output_is_in_its_log(
    progress: Progress, capfd: pytest.CaptureFixture[str]
) -> None:
    assert progress.step("check the catalogue", noisy) == 3

    out, err = capfd.readouterr()
    assert err == ""
    [line] = out.splitlines()
    match = STEP_LINE.match(line)
    assert match and match.group(3) == "check the catalogue: 3 contracts", line
    [log] = (progress.logs).iterdir()
    assert log.name == "01-check-the-catalogue.log"
    text = log.read_text()
    assert "JSON report" in text and "a task log line" in text and "spark-submit output" in text


SPARK_JOB = """
print("26/11/24 08:42:12 WARN Utils: Set SPARK_LOCAL_IP if you need to bind to another address")
print("26/11/24 08:42:14 WARN NativeCodeLoader: Unable to load native-hadoop library for your platform")
"""


def test_a_warning_repeated_in_steps_is_listed_once(progress: Progress, capfd: pytest.CaptureFixture[str]) -> None:
    def spark_job() -> None:
        for _ in range(2):
            subprocess.run([sys.executable, "-c", SPARK_JOB], check=True)
        print("2026-11-24T08:39:47Z [warning  ] Plugin 'contract_platform' already registered [airflow.plugins]")
        print("dags.py:3: DeprecationWarning: the old setting is deprecated", file=sys.stderr)

    progress.step("first Spark job", spark_job)
    progress.step("second Spark job", spark_job)

    out, _ = capfd.readouterr()
    assert len(out.splitlines()) == 2 and "WARN" not in out and "deprecated" not in out
    assert list(progress.warnings.seen) == [
        "Utils: Set SPARK_LOCAL_IP if you need to bind to another address",
        "NativeCodeLoader: Unable to load native-hadoop library for your platform",
        "Plugin 'contract_platform' already registered",
        "DeprecationWarning: the old setting is deprecated",
    ]


def test_a_failing_step_says_so_on_its_line_and_names_its_log(
    progress: Progress, capfd: pytest.CaptureFixture[str]
) -> None:
    def fail() -> None:
        print("what went wrong, in detail")
        raise SystemExit("airflow db migrate failed")

    with pytest.raises(SystemExit):
        progress.step("prepare Airflow's metadata DB", fail)

    out, _ = capfd.readouterr()
    [line] = out.splitlines()
    assert "FAILED" in line and str(progress.logs / "01-prepare-airflow-s-metadata-db.log") in line
    assert "what went wrong" in (progress.logs / "01-prepare-airflow-s-metadata-db.log").read_text()

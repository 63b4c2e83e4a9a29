"""The main job's console: one line per step; what a step prints goes to its log; a warning is listed once.

Each test runs the steps in a child process whose stdout and stderr are real file descriptors, as in
``bash scripts/main-job`` (pytest's own capture would stand between them otherwise).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STEP_LINE = re.compile(r"^\[(\d+)/(\d+)\] (.+) \((\d+\.\d)s, total (\d+\.\d)s\)$")

PRELUDE = """
import logging, subprocess, sys
from pathlib import Path
from tests.support.scripts import load_script

main_job = load_script("main_job")
Progress, note = main_job.Progress, main_job.note

progress = Progress(total=2, logs=Path(sys.argv[1]))
held = logging.getLogger("held")
held.setLevel(logging.INFO)


def set_up_logging():  # as Airflow does when a step first imports it: a handler keeps the sys.stdout it found
    held.addHandler(logging.StreamHandler(sys.stdout))
SPARK = '''
print("26/11/24 08:42:12 WARN Utils: Set SPARK_LOCAL_IP if you need to bind to another address")
print("26/11/24 08:42:14 WARN NativeCodeLoader: Unable to load native-hadoop library for your platform")
print("WARNING: Using incubator modules: jdk.incubator.vector")
'''
"""


def run_steps(body: str, logs: Path) -> subprocess.CompletedProcess[str]:
    """The steps in a child process started in the repository root, where ``tests.support`` imports from."""
    return subprocess.run(
        [sys.executable, "-c", PRELUDE + body, str(logs)], cwd=REPO, capture_output=True, text=True, timeout=60
    )


def test_a_step_is_one_console_line_and_its_output_is_in_its_log(tmp_path: Path) -> None:
    body = """
def noisy():
    set_up_logging()
    print('{"report": "a Spark job report"}')
    print("a task log line", file=sys.stderr)
    subprocess.run([sys.executable, "-c", "print('spark-submit output')"], check=True)
    held.info("first step's log line")
    note("3 contracts")

def quiet():
    held.info("second step's log line")

progress.step("check the catalogue", noisy)
progress.step("run a DAG", quiet)
held.info("after the steps")
"""
    done = run_steps(body, tmp_path)

    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert [STEP_LINE.match(line).group(3) for line in lines[:2]] == [  # type: ignore[union-attr]
        "check the catalogue: 3 contracts",
        "run a DAG",
    ]
    assert lines[2:] == ["after the steps"]  # the handler set up in a step writes to the console again
    first, second = sorted(tmp_path.iterdir())
    assert first.name == "01-check-the-catalogue.log" and second.name == "02-run-a-dag.log"
    text = first.read_text()
    assert "Spark job report" in text and "a task log line" in text and "spark-submit output" in text
    assert "first step's log line" in text and "second step's log line" not in text
    assert second.read_text() == "second step's log line\n"


def test_a_warning_repeated_in_steps_is_listed_once(tmp_path: Path) -> None:
    body = """
def spark_job():
    for _ in range(2):
        subprocess.run([sys.executable, "-c", SPARK], check=True)
    print("2026-11-24T08:39:47Z [warning  ] Plugin 'contract_platform' already registered [airflow.plugins]")
    print("dags.py:3: DeprecationWarning: the old setting is deprecated", file=sys.stderr)

progress.step("first Spark job", spark_job)
progress.step("second Spark job", spark_job)
print("\\n".join(progress.warnings.seen))
"""
    done = run_steps(body, tmp_path)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(STEP_LINE.match(line) for line in lines[:2])
    assert lines[2:] == [
        "Utils: Set SPARK_LOCAL_IP if you need to bind to another address",
        "NativeCodeLoader: Unable to load native-hadoop library for your platform",
        "Plugin 'contract_platform' already registered",
        "DeprecationWarning: the old setting is deprecated",
    ]  # the JVM's notice of the incubating vector API Spark asks for is no warning (main_job.NOTICES)


def test_a_failing_step_says_so_on_its_line_and_names_its_log(tmp_path: Path) -> None:
    body = """
def fail():
    print("what went wrong, in detail")
    raise SystemExit("airflow db migrate failed")

progress.step("prepare Airflow's metadata DB", fail)
"""
    done = run_steps(body, tmp_path)

    log = tmp_path / "01-prepare-airflow-s-metadata-db.log"
    assert done.returncode == 1 and "airflow db migrate failed" in done.stderr
    [line] = done.stdout.splitlines()
    assert "FAILED" in line and str(log) in line
    assert "what went wrong" in log.read_text()

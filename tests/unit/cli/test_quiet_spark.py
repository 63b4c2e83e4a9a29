"""The quiet start of the Spark-backed verbs, without a JVM: a child launched as the JVM is goes to the log.

``jvm_output`` points file descriptors 1 and 2 at the verb's log while the driver JVM starts; a child
process started there stands in for the JVM (it inherits them the same way). The real JVM is in
``tests/spark/test_quiet_cli.py``.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from spark_jobs.quiet import jvm_output, quiet_spark, run_quietly

CHATTER = "import sys; print('WARN NativeCodeLoader: chatter on stdout'); print('log4j chatter', file=sys.stderr)"


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CONTRACT_PLATFORM_HOME", str(tmp_path))
    return tmp_path


def launch_like_the_jvm() -> None:
    with jvm_output():
        subprocess.run([sys.executable, "-c", CHATTER], check=True)


def logs(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "logs" / "cli").glob("*.log"))


def test_a_jvm_launched_by_a_quiet_verb_writes_to_the_log_not_the_terminal(capfd, data_dir: Path) -> None:
    def verb() -> int:
        print("platform line")
        launch_like_the_jvm()
        print("platform line after the launch", file=sys.stderr)
        return 1  # findings: the log's path is printed

    assert run_quietly("validate-archive", False, verb) == 1
    out, err = capfd.readouterr()
    assert "chatter" not in out + err
    assert "platform line" in out and "platform line after the launch" in err
    [log] = logs(data_dir)
    assert log.name.startswith("validate-archive-")
    assert "WARN NativeCodeLoader" in log.read_text() and "log4j chatter" in log.read_text()
    assert err.strip().endswith(f"contractctl: Spark and JVM log: {log}")


def test_the_path_is_printed_only_on_failure_or_when_verbose(capfd, data_dir: Path) -> None:
    assert run_quietly("quality", False, lambda: (launch_like_the_jvm(), 0)[1]) == 0
    assert "Spark and JVM log" not in capfd.readouterr().err
    assert run_quietly("quality", True, lambda: (launch_like_the_jvm(), 0)[1]) == 0
    assert "Spark and JVM log" in capfd.readouterr().err
    assert run_quietly("quality", True, lambda: 0) == 0  # no JVM launched: no log, nothing to point at
    assert "Spark and JVM log" not in capfd.readouterr().err


def test_an_exception_prints_the_path(capfd, data_dir: Path) -> None:
    def verb() -> int:
        launch_like_the_jvm()
        raise RuntimeError("the JVM died")

    with pytest.raises(RuntimeError):
        run_quietly("audit", False, verb)
    [log] = logs(data_dir)
    assert f"Spark and JVM log: {log}" in capfd.readouterr().err


def test_a_reader_that_left_is_no_failure_and_the_path_is_not_printed(capfd, data_dir: Path) -> None:
    """``contractctl quality ... | head -1``: the verb's table meets a closed pipe; contractctl ends quietly."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone

    def verb() -> int:
        launch_like_the_jvm()
        os.write(write_end, b"TYPE  EXPECTATION  MOSTLY\n")
        return 0

    try:
        with pytest.raises(BrokenPipeError):
            run_quietly("quality", False, verb)
    finally:
        os.close(write_end)
    assert logs(data_dir)  # a JVM was launched: there is a log it could have pointed at
    assert "Spark and JVM log" not in capfd.readouterr().err


def test_python_warnings_and_pyspark_logs_go_to_the_log(capfd, data_dir: Path) -> None:
    with quiet_spark("check", verbose=False) as log:
        warnings.warn("pyspark deprecation chatter", FutureWarning, stacklevel=1)
        logging.getLogger("py4j.clientserver").warning("py4j chatter")
        log.exit_code = 0
    err = capfd.readouterr().err
    assert "chatter" not in err
    text = log.path.read_text()
    assert "pyspark deprecation chatter" in text and "py4j chatter" in text
    assert logging.getLogger("py4j").propagate  # restored afterwards


def test_deferred_announcement_waits_for_the_verdict(capfd, data_dir: Path) -> None:
    with quiet_spark("check", verbose=False, defer=True) as log:
        launch_like_the_jvm()
    assert "Spark and JVM log" not in capfd.readouterr().err
    log.announce(failed=True)
    assert f"Spark and JVM log: {log.path}" in capfd.readouterr().err


def test_outside_a_quiet_verb_the_jvm_keeps_the_terminal(capfd) -> None:
    launch_like_the_jvm()
    out, err = capfd.readouterr()
    assert "WARN NativeCodeLoader" in out and "log4j chatter" in err

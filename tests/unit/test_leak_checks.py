"""The suite's own guard: a test that leaves the process environment changed fails the run and is named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.leaks import changed_variables

REPO = Path(__file__).resolve().parents[2]

CONFTEST = """
from tests.support import leaks

def pytest_configure(config):
    leaks.register(config)
"""

TESTS = """
import os

import pytest

@pytest.fixture(scope="module")
def module_setting():
    os.environ["CONTRACT_TEST_MODULE"] = "1"  # the module's own setting, for all its tests
    yield
    del os.environ["CONTRACT_TEST_MODULE"]

def test_leaks_a_variable():
    os.environ["CONTRACT_TEST_LEAKED"] = "1"

def test_restores_what_it_sets(monkeypatch):
    monkeypatch.setenv("CONTRACT_TEST_RESTORED", "1")

def test_uses_the_module_setting(module_setting):
    assert os.environ["CONTRACT_TEST_MODULE"] == "1"

def test_still_has_the_module_setting(module_setting):
    assert os.environ["CONTRACT_TEST_MODULE"] == "1"  # not taken away between the module's tests
"""


def test_a_set_changed_or_removed_variable_is_named() -> None:
    before = {"A": "1", "B": "2", "PYSPARK_GATEWAY_SECRET": "x"}
    after = {"A": "1", "B": "3", "C": "4", "PYSPARK_GATEWAY_SECRET": "y"}
    assert changed_variables(before, after) == {"B": ("2", "3"), "C": (None, "4")}
    assert changed_variables(after, before) == {"B": ("3", "2"), "C": ("4", None)}


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(CONFTEST, "utf-8")
    (tmp_path / "test_leaky.py").write_text(TESTS, "utf-8")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), *args, str(tmp_path)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip


def test_a_leaking_test_fails_the_run_and_is_named(tmp_path: Path) -> None:
    result = run(tmp_path, "-p", "no:xdist")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "4 passed" in result.stdout  # each test passed; the run failed on what one left behind
    assert (
        "environment not restored by test_leaky.py::test_leaks_a_variable: CONTRACT_TEST_LEAKED (set)" in result.stdout
    )
    assert "CONTRACT_TEST_RESTORED" not in result.stdout and "CONTRACT_TEST_MODULE" not in result.stdout


def test_a_leak_in_a_parallel_worker_reaches_the_run_s_verdict(tmp_path: Path) -> None:
    result = run(tmp_path, "-n", "2")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "environment not restored by test_leaky.py::test_leaks_a_variable" in result.stdout

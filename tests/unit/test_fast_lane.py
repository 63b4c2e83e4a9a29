"""The fast lane (`pytest -m "not slow"`) leaves out exactly what tests/lanes.py calls slow."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.lanes import SLOW_UNIT_TESTS

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_every_slow_unit_test_named_in_the_conftest_still_exists():
    for node in SLOW_UNIT_TESTS:
        path, _, name = node.partition("::")
        source = (REPO_ROOT / path).read_text(encoding="utf-8")
        assert re.search(rf"^def {re.escape(name)}\(", source, re.MULTILINE), f"{node} is gone: update tests/lanes.py"


def test_the_fast_lane_keeps_unit_tests_and_leaves_out_spark_and_the_named_slow_ones():
    [slow_unit] = sorted(SLOW_UNIT_TESTS)
    paths = ["tests/spark/test_envelope_quality_commands.py", "tests/unit/test_traffic.py", slow_unit.split("::")[0]]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "not slow", *paths],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    collected = [line for line in result.stdout.splitlines() if "::" in line]
    files = {line.split("::")[0] for line in collected}
    assert "tests/unit/test_traffic.py" in files and "tests/spark/test_envelope_quality_commands.py" not in files
    assert slow_unit not in {line.split("[")[0] for line in collected}
    assert any(line.startswith(slow_unit.split("::")[0]) for line in collected)  # the rest of that file stays

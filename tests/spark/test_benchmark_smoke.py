"""The archive validation benchmark runs and produces its figures (CI runs it small; no timing is asserted).

Its size is not under test: 200 messages (two archives of 100 and 200, each with defects) go through every
step the benchmark times, as 2,000 did, for a tenth of the generated and validated records.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmarks.archive_validation import run_benchmark

pytestmark = pytest.mark.spark


def test_the_benchmark_produces_its_figures(spark, catalog_dir: Path, tmp_path: Path):
    figures = run_benchmark(spark, messages=200, catalog_dir=catalog_dir, work_dir=tmp_path, repeat=1)
    json.dumps(figures)  # one JSON line
    assert [row["messages"] for row in figures["sizes"]] == [100, 200]
    for row in figures["sizes"]:
        assert row["records"] >= row["messages"] and row["invalid"] > 0
        for key in (
            "bare_count_seconds",
            "jvm_pass_seconds",
            "check_seconds",
            "validate_seconds",
            "validate_records_per_second",
            "validate_over_jvm",
        ):
            assert row[key] > 0, key
        assert row["fraction_of_bare_throughput"] > 0
    assert figures["naive_udf"]["records_per_second"] > 0 and figures["speedup_over_naive"] > 0
    assert set(figures["targets"]) == {"half_of_bare_throughput", "ten_times_naive"}
    assert figures["machine"]["cores"] >= 1 and figures["machine"]["pyspark"]

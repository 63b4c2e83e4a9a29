"""The per-record cost benchmark runs and produces its figures (CI runs it small; no timing is asserted)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.record_costs import measure


def test_the_record_cost_benchmark_produces_its_figures(catalog_dir: Path):
    figures = measure(messages=300, repeat=1, catalog_dir=catalog_dir)
    json.dumps(figures)  # one JSON line
    archive, bridge = figures["archive"], figures["bridge"]
    assert archive["records"] >= 300 and 0 < archive["valid_records"] < archive["records"]
    for key in (
        "read",
        "parse_record",
        "parse_body",
        "check_valid",
        "check_all",
        "worker_loop",
        "worker_loop_gc_default",
    ):
        assert archive[key] > 0, key
    assert bridge["migrate"] > 0 and bridge["translate"] > 0
    assert set(measure(messages=20, repeat=1, catalog_dir=catalog_dir, parts=("bridge",))) == {
        "benchmark",
        "date",
        "python",
        "unit",
        "bridge",
    }

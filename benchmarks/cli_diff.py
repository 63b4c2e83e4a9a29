"""Wall time of ``contractctl diff`` as a user runs it (a fresh process each time), against a 0.3 s target.

    .venv/bin/python benchmarks/cli_diff.py [--runs 20]

Prints one JSON line: median, p95 and max wall seconds for two cases (two schema files; two
messageTypes, which loads the catalogue), and whether the target is met.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 0.3


def measure(argv: list[str], runs: int) -> dict[str, float]:
    contractctl = str(Path(sys.executable).parent / "contractctl")
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run([contractctl, *argv], capture_output=True, cwd=ROOT, check=False)
        times.append(time.perf_counter() - start)
        if result.returncode not in (0, 1):
            raise SystemExit(f"contractctl {' '.join(argv)} failed: {result.stderr.decode()}")
    times.sort()
    return {
        "median_s": round(statistics.median(times), 3),
        "p95_s": round(times[max(0, int(len(times) * 0.95) - 1)], 3),
        "max_s": round(times[-1], 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    v1 = "contracts/billing/invoice-issued/v1/payload.schema.json"
    v2 = "contracts/billing/invoice-issued/v2/payload.schema.json"
    cases = {
        "files": measure(["diff", v1, v2, "--mode", "full", "--format", "json"], args.runs),
        "message_types": measure(
            ["diff", "billing.invoice-issued.v1", "billing.invoice-issued.v2", "--format", "json"], args.runs
        ),
    }
    figures = {"benchmark": "cli_diff", "runs": args.runs, "target_s": TARGET_SECONDS, **cases}
    figures["target_met"] = all(case["p95_s"] < TARGET_SECONDS for case in cases.values())
    print(json.dumps(figures))
    return 0 if figures["target_met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

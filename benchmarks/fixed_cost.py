"""The fixed cost of archive validation: ``contractctl validate-archive`` on a tiny archive, as a whole process.

    .venv/bin/python benchmarks/fixed_cost.py [--runs 5] [--messages 20] [--archive DIR] [--no-floor]

Generates a ``--messages``-record archive (``benchmarks/generate_archive.py``; or takes ``--archive``),
then runs, ``--runs`` times each, alternating:

* ``validate``: ``contractctl validate-archive ARCHIVE --report FILE``, a fresh process each time, the
  way a user or a DAG task runs it;
* ``floor``: a minimal Spark job in a fresh process that only parses the same archive
  (``spark.read.text`` + ``from_json`` + ``count``, session start and stop included), started as
  the job starts (``spark_jobs.jobs.JobRun`` with a quick start): what any Spark job pays.

The first run on a machine also writes the JVM's class-data archive (``CONTRACT_JVM_CLASS_CACHE``,
``spark_jobs/session.py``) and is slower; ``--warm-up`` runs once, unmeasured, first.

For each it records wall seconds and CPU seconds (user + sys of the process **and of the JVM and
Python workers it starts**). ``/usr/bin/time`` misses the JVM: PySpark does not wait for it, so it
is never reaped by the process ``time`` watches. This script makes itself the JVM's reaper
(``PR_SET_CHILD_SUBREAPER``, Linux) and waits for every process of the run. CPU time is much less
sensitive to other work on the machine than wall time; the load average is printed with each run.

Prints one JSON line: per measure every run's wall and CPU seconds, the medians, and the load
averages. Nothing is asserted (benchmarks/README.md has the figures and the target, 8 s wall).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

__all__ = ["main", "measure"]

_PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> bool:
    """Orphaned descendants (the JVM, its Python workers) become our children, so their CPU time is counted."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def measure(command: Sequence[str], *, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Wall and CPU seconds of ``command`` and every process it leaves behind, waited for until all are gone."""
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    with open(os.devnull, "wb") as sink, tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(command, stdout=sink, stderr=errors, env=env, cwd=ROOT)
        cpu = 0.0
        wall = None
        code = None
        while True:  # the command first, then whatever it orphaned (the JVM exits once its stdin closes)
            try:
                pid, status, usage = os.wait4(-1, 0)
            except ChildProcessError:
                break
            cpu += usage.ru_utime + usage.ru_stime
            if pid == process.pid:
                wall = time.perf_counter() - started
                code = os.waitstatus_to_exitcode(status)
                process.returncode = code
        errors.seek(0)
        stderr = errors.read().decode("utf-8", "replace")
    return {
        "wall": round(wall or 0.0, 2),
        "cpu": round(cpu, 2),
        "exit": code,
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "progress_bar": "[Stage " in stderr,
        "stderr_tail": stderr.strip().splitlines()[-1:] if code not in (0, 1) else [],
    }


def floor_job(archive: str, kind: str = "parse") -> int:
    """The floor in one process, session start and stop included.

    ``parse``: parse every line of the archive and count. ``jvm``: the JVM pass of
    ``benchmarks/archive_validation.py`` (every field read in the JVM, no Python per record), for a
    whole-process comparison with the job on a large archive.
    """
    from pyspark.sql import functions as F

    from spark_jobs.archive_io import read_archive
    from spark_jobs.jobs import JobRun

    run = JobRun("fixed-cost-floor", argparse.Namespace(master=None))
    run.reads(archive)  # as the job starts
    try:
        if kind == "jvm":
            from benchmarks.archive_validation import _jvm_pass

            return int(_jvm_pass(run.spark, archive))
        records = read_archive(run.spark, archive).select(
            F.from_json("value", "exchange string, body string").alias("r")
        )
        return int(records.where(F.col("r").isNotNull()).count())
    finally:
        run.close()


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "wall_median": round(statistics.median(r["wall"] for r in runs), 2),
        "cpu_median": round(statistics.median(r["cpu"] for r in runs), 2),
        "runs": runs,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each measure (medians are reported)")
    parser.add_argument("--messages", type=int, default=20, help="records in the generated archive")
    parser.add_argument("--archive", type=Path, default=None, help="use this archive instead of generating one")
    parser.add_argument("--no-floor", action="store_true", help="skip the minimal Spark job")
    parser.add_argument("--warm-up", action="store_true", help="one unmeasured run first (writes the class archive)")
    parser.add_argument("--floor", choices=("parse", "jvm"), default="parse", help="the floor job (default: parse)")
    parser.add_argument("--floor-job", default=None, metavar="ARCHIVE", help=argparse.SUPPRESS)  # one floor run
    args = parser.parse_args(argv)
    if args.floor_job:
        floor_job(args.floor_job, args.floor)
        return 0
    subreaper = _become_subreaper()
    with tempfile.TemporaryDirectory(prefix="fixed-cost-") as work:
        archive = args.archive
        if archive is None:
            archive = Path(work) / "archive"
            subprocess.run(
                [sys.executable, str(ROOT / "benchmarks" / "generate_archive.py"), str(archive)]
                + ["--messages", str(args.messages), "--seed", "1"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        contractctl = str(Path(sys.executable).with_name("contractctl"))
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
        results: dict[str, list[dict[str, Any]]] = {"validate": [], "floor": []}
        if args.warm_up:
            measure([contractctl, "validate-archive", str(archive)], env=env)
        for run in range(args.runs):
            report = Path(work) / f"report-{run}.json"
            results["validate"].append(
                measure([contractctl, "validate-archive", str(archive), "--report", str(report)], env=env)
            )
            if not args.no_floor:
                floor = [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--floor-job",
                    str(archive),
                    "--floor",
                    args.floor,
                ]
                results["floor"].append(measure(floor, env=env))
    figures = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "cpu_of_jvm": subreaper},
        "archive": str(args.archive) if args.archive else f"generated, {args.messages} records, seed 1",
        **{name: _summary(runs) for name, runs in results.items() if runs},
    }
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())

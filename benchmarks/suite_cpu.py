"""Where the test suite's CPU goes: one pytest run under Linux process accounting.

    .venv/bin/python benchmarks/suite_cpu.py [--top 12] [-- PYTEST ARGUMENTS]

As root, with the ``acct`` package (``accton``, ``dump-acct``: ``apt-get install acct``). ``getrusage``
in the test process misses most of it: the JVMs PySpark starts are never reaped by the test, served
Airflow components and private RabbitMQ nodes run detached. Process accounting records every process
that exits during the run, whoever its parent.

Prints one JSON line: the run's wall seconds, the machine's busy and idle core-seconds over it
(``/proc/stat``: other work on the machine counts too, so run it on a quiet one), the CPU seconds
(user + system) of every process that exited, summed by command name (``java``, ``python``, ``airflow``,
``beam.smp``...), the largest single processes, and pytest's exit code. Nothing is asserted
(benchmarks/README.md, "Test suite CPU", has the figures; docs/contributing.md#tests what they led to).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def parse_dump_acct(lines: Iterable[str]) -> list[dict[str, Any]]:
    """``dump-acct``'s lines (``comm|v3|utime|stime|etime|uid|gid|mem|io|pid|ppid|...``, times in clock ticks)
    as processes: command, CPU and elapsed seconds, pid and parent pid. Lines of another shape are skipped."""
    processes = []
    for line in lines:
        fields = [field.strip() for field in line.split("|")]
        if len(fields) < 11:
            continue
        try:
            user, system, elapsed = (float(value) for value in fields[2:5])
            pid, parent = int(fields[9]), int(fields[10])
        except ValueError:
            continue
        processes.append(
            {
                "command": fields[0],
                "cpu": (user + system) / TICKS,
                "elapsed": elapsed / TICKS,
                "pid": pid,
                "ppid": parent,
            }
        )
    return processes


def by_command(processes: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """CPU seconds and process count per command name, largest first."""
    totals: dict[str, dict[str, float]] = defaultdict(lambda: {"cpu": 0.0, "processes": 0})
    for process in processes:
        totals[process["command"]]["cpu"] += process["cpu"]
        totals[process["command"]]["processes"] += 1
    ordered = sorted(totals.items(), key=lambda item: -item[1]["cpu"])
    return {name: {"cpu": round(t["cpu"], 1), "processes": int(t["processes"])} for name, t in ordered}


def cpu_times() -> list[int]:
    """The machine's ``cpu`` line of /proc/stat, in clock ticks."""
    with open("/proc/stat", encoding="ascii") as stat:
        return [int(value) for value in stat.readline().split()[1:]]


def run(pytest_args: Sequence[str], top: int) -> dict[str, Any]:
    accton, dump = shutil.which("accton"), shutil.which("dump-acct")
    if accton is None or dump is None or os.geteuid() != 0:
        raise SystemExit("suite_cpu: needs root and the acct package (accton, dump-acct): apt-get install acct")
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "pacct"
        log.touch()
        subprocess.run([accton, str(log)], check=True, capture_output=True)
        before, started = cpu_times(), time.monotonic()
        try:
            code = subprocess.run(
                [str(Path(sys.executable).with_name("pytest")), "-q", *pytest_args], cwd=ROOT
            ).returncode
        finally:
            after, wall = cpu_times(), time.monotonic() - started
            subprocess.run([accton, "off"], check=False, capture_output=True)
        listing = subprocess.run([dump, str(log)], check=True, capture_output=True, text=True).stdout
    delta = [b - a for a, b in zip(before, after, strict=False)]
    busy = (delta[0] + delta[1] + delta[2] + delta[5] + delta[6]) / TICKS  # user nice system irq softirq
    idle = (delta[3] + delta[4]) / TICKS  # idle iowait
    processes = parse_dump_acct(listing.splitlines())
    largest = sorted(processes, key=lambda p: -p["cpu"])[:top]
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "pytest": list(pytest_args),
        "exit_code": code,
        "wall_seconds": round(wall),
        "busy_core_seconds": round(busy),
        "idle_core_seconds": round(idle),
        "accounted_cpu_seconds": round(sum(p["cpu"] for p in processes)),
        "by_command": dict(list(by_command(processes).items())[:top]),
        "largest": [{k: round(v, 1) if isinstance(v, float) else v for k, v in p.items()} for p in largest],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=12, help="commands and single processes to list")
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments (default: the whole suite)")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.pytest_args, args.top)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

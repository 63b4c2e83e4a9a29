"""Start-up of every ``contractctl`` verb that needs no Spark, as a user meets it: a whole process each time.

    .venv/bin/python benchmarks/cli_startup.py [--runs 11] [--only VERB ...] [--broker private|refused]

Each case is one verb with ordinary arguments on the repository's catalogue (``contracts/``), run as
the installed ``contractctl`` in a fresh process, ``--runs`` times. The cases take turns, one run of
each per round, so that whatever else the machine does falls on all of them alike.

The cases come from the verb table, ``contract_platform.cli.main.VERBS``: every verb has a case here
or is one of ``SPARK_VERBS`` (they start a JVM, which ``benchmarks/fixed_cost.py`` measures), and a
verb added to the table without either stops this script. ``--help`` is no start-up and is not timed.

The registry store is a fresh SQLite file (``CONTRACT_PLATFORM_HOME`` is a temporary folder). The
broker verbs (``archive``, ``bridge``, ``migration status``) talk to a broker that holds nothing:
``--broker private`` (the default when the local management API answers) makes a virtual host of the
run's own on the local RabbitMQ (``tests.support.broker.private_vhost``, deleted afterwards), so each
connects, finds no archive queue, exchange or tap queue, and says so (exit 2, 1 and 0); ``--broker
refused`` names a port where nothing listens, so each stops at its first broker call (exit 3; ``migration
status`` shows the tap queue as unknown), after asking the management API why. Nothing is drained or
bridged either way. ``record-activity`` is timed with ``--status`` (it reads the store): the recorder
itself is a service that runs until it is stopped.

Python's bytecode is cached as on a user's machine, in a folder of the run's own (``PYTHONPYCACHEPREFIX``;
``PYTHONDONTWRITEBYTECODE`` is dropped), and one round runs unmeasured first to fill it: without it each
run compiles every module of the platform it imports again, which is no part of a start-up after the first.

Prints one JSON line: per case the median and maximum wall seconds, the median CPU seconds (user +
sys of the process, from ``os.wait4``), the exit code, and whether the median is under the target
(0.3 s); with the date, the machine and the load average before and after. CPU seconds are the
steadier figure when other work shares the cores; the target is wall time, as a user waits.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the private virtual host is the tests' own (docs/contributing.md#test-support)
    sys.path.insert(0, str(ROOT))

from tests.support import broker  # noqa: E402

from contract_platform.cli.main import VERBS  # noqa: E402

TARGET_SECONDS = 0.3
SPARK_VERBS = frozenset({"validate-archive", "quality", "audit"})
REFUSING_BROKER = "amqp://guest:guest@127.0.0.1:1/%2F"
_SCHEMAS = "contracts/billing/invoice-issued"


def cases(work: Path) -> dict[str, tuple[str, list[str], tuple[int, ...]]]:
    """case name -> (verb, argv, the exit codes it may end with)."""
    return {
        "lint": ("lint", ["lint", "contracts"], (0,)),
        "diff files": (
            "diff",
            ["diff", f"{_SCHEMAS}/v1/payload.schema.json", f"{_SCHEMAS}/v2/payload.schema.json", "--format", "json"],
            (0, 1),
        ),
        "diff messageTypes": ("diff", ["diff", "billing.invoice-issued.v1", "billing.invoice-issued.v2"], (0, 1)),
        "check": ("check", ["check", "contracts"], (0,)),
        "docs": ("docs", ["docs", "contracts", "--out", str(work / "docs")], (0,)),
        "status": ("status", ["status"], (0,)),
        "status TYPE": ("status", ["status", "billing.invoice-issued.v1"], (0,)),
        # a step the guards refuse (no successor): the same work on every run, and the registry keeps the refusal
        "transition": (
            "transition",
            ["transition", "order.order-created.v1", "superseded", "--reason", "start-up benchmark"],
            (1,),
        ),
        "export asyncapi (JSON)": ("export", ["export", "asyncapi", "--out", str(work / "asyncapi.json")], (0,)),
        "export asyncapi (YAML)": ("export", ["export", "asyncapi", "--out", str(work / "asyncapi.yaml")], (0,)),
        "migration status": ("migration", ["migration", "status", "billing.invoice-issued.v1"], (0,)),
        "record-activity --status": ("record-activity", ["record-activity", "--status"], (1,)),
        "archive": ("archive", ["archive"], (2, 3)),
        "bridge": ("bridge", ["bridge", "billing.invoice-issued.v2"], (1, 3)),
    }


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds, exit code, last line of stderr) of one whole ``contractctl`` process."""
    contractctl = str(Path(sys.executable).with_name("contractctl"))
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        process = subprocess.Popen([contractctl, *argv], stdout=subprocess.DEVNULL, stderr=errors, env=env, cwd=ROOT)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = code = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        tail = errors.read().decode("utf-8", "replace").strip().splitlines()[-1:]
    return wall, usage.ru_utime + usage.ru_stime, code, tail[0] if tail else ""


@contextlib.contextmanager
def broker_url(kind: str) -> Iterator[str]:
    if kind == "refused":
        yield REFUSING_BROKER
        return
    with broker.private_vhost() as vhost:
        yield broker.url_of(vhost)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="runs of each case (the median is reported)")
    parser.add_argument("--only", action="append", default=None, metavar="VERB", help="only this verb's cases")
    parser.add_argument("--broker", choices=("private", "refused"), default=None, help="see above")
    args = parser.parse_args(argv)
    kind = args.broker or ("private" if broker.management_answers() else "refused")

    with tempfile.TemporaryDirectory(prefix="cli-startup-") as folder, broker_url(kind) as url:
        work = Path(folder)
        table = cases(work)
        missing = set(VERBS) - SPARK_VERBS - {verb for verb, _, _ in table.values()}
        if missing:
            raise SystemExit(f"no start-up case for the verb(s) {', '.join(sorted(missing))}: add one to cases()")
        chosen = {name: case for name, case in table.items() if not args.only or case[0] in args.only}
        env = {
            **os.environ,
            "CONTRACT_PLATFORM_HOME": str(work),
            "CONTRACT_RABBITMQ_URL": url,
            "PYTHONPYCACHEPREFIX": str(work / "bytecode"),
        }
        for name in ("CONTRACT_CATALOG", "CONTRACT_REGISTRY_URL", "CONTRACT_RABBITMQ_MANAGEMENT_URL"):
            env.pop(name, None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        for _, command, _ in chosen.values():  # the unmeasured round: bytecode compiled once, as after installing
            run_once(command, env)
        load_before = os.getloadavg()
        measured: dict[str, list[tuple[float, float]]] = {name: [] for name in chosen}
        codes: dict[str, int] = {}
        for _ in range(args.runs):
            for name, (_, command, expected) in chosen.items():
                wall, cpu, code, tail = run_once(command, env)
                if code not in expected:
                    raise SystemExit(f"contractctl {' '.join(command)} exited {code}, not {expected}: {tail}")
                measured[name].append((wall, cpu))
                codes[name] = code
        load_after = os.getloadavg()
    figures: dict[str, Any] = {
        "benchmark": "cli_startup",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "runs": args.runs,
        "broker": kind,
        "target_s": TARGET_SECONDS,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in load_after],
        "cases": {},
    }
    for name, samples in measured.items():
        median_wall = statistics.median(wall for wall, _ in samples)
        figures["cases"][name] = {
            "wall_median_s": round(median_wall, 3),
            "wall_max_s": round(max(wall for wall, _ in samples), 3),
            "cpu_median_s": round(statistics.median(cpu for _, cpu in samples), 3),
            "exit": codes[name],
            "under_target": median_wall < TARGET_SECONDS,
        }
    figures["target_met"] = all(case["under_target"] for case in figures["cases"].values())
    print(json.dumps(figures))
    return 0 if figures["target_met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

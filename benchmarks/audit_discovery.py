"""How long the retirement audit takes to decide which queues to consider, on a broker with many services.

A synthetic topology (no broker needed): per service ``<svc>.in`` bound to ``billing.events`` (one in
ten with a pattern that matches v1), a DLX ``<svc>.dlx`` with ``<svc>.dead`` bound to it, ``<svc>_error``,
and 20 policies naming a shared DLX every ``<svc>.dead`` is bound to (so each of those
queues is found 20 times over, as on a broker where teams share dead-letter exchanges). ``discover_queues`` is timed per size (median of
``--repeat``); the reading of the topology from the management API and the DLQ peeks are not included.

    .venv/bin/python benchmarks/audit_discovery.py --services 1000 5000 20000 --repeat 3

Figures (2026-11-24 06:25 UTC, 2 cores shared with other work, load average 9 to 12, Python 3.11.7,
median of 3): 1,000 services (3,000 queues, 3,000 bindings) 0.08 s; 5,000 (15,000 queues) 0.65 s;
20,000 (60,000 queues) 4.0 s, i.e. 27, 43 and 67 microseconds per queue. Before the bindings were
indexed once per virtual host and a queue kept only a few of the reasons it was found, the same
20,000-service broker took 117 s (quadratic: every dead-letter exchange re-indexed every binding).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the topology builder is shared with the tests (docs/contributing.md#test-support)
    sys.path.insert(0, str(ROOT))

from tests.support.contracts import V1, build_contract  # noqa: E402
from tests.support.topologies import many_services  # noqa: E402

from contract_platform.amqp import plan_topology  # noqa: E402
from contract_platform.catalog.model import Status  # noqa: E402
from contract_platform.retirement.discovery import discover_queues  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    version = build_contract(
        V1, status=Status.DEPRECATED, consumers=("accounting-service",), retry_delays=(timedelta(seconds=30),)
    )
    plan = plan_topology(version)
    figures = []
    for services in args.services:
        broker = many_services(services)
        hosted = broker.vhosts["/"]
        times = []
        for _ in range(args.repeat):
            began = time.perf_counter()
            found = discover_queues(version, plan, broker, home_vhost="/")
            times.append(time.perf_counter() - began)
        seconds = statistics.median(times)
        figures.append(
            {
                "services": services,
                "queues": len(hosted.queues),
                "bindings": len(hosted.bindings),
                "seconds": round(seconds, 4),
                "microsecondsPerQueue": round(seconds / len(hosted.queues) * 1e6, 2),
                "receivers": len(found.receivers),
                "deadLetterQueues": len(found.dead_letter_queues),
            }
        )
    json.dump({"python": sys.version.split()[0], "repeat": args.repeat, "sizes": figures}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

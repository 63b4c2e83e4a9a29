"""A first import of an estate in Airflow: N new versions through contract_catalog_watch -> contract_change.

The same scenario as ``tests/e2e/test_airflow_scheduler.py::test_a_first_import_of_an_estate_is_batched_and_settles``
(``tests.support.served_airflow.first_import``), at a size the test cannot afford:

- a generated catalogue of ``--versions`` new versions (``tests/support/estate.py``: copies of
  ``order.order-created.v1``, declared experimental, about ten queues each);
- a private RabbitMQ node with ``ulimit -n`` raised to 65,536 (``tests/support/private_node.py``; the shared
  node's 1,024 file handles would run out at about 300 versions) and no management API;
- ``scripts/airflow-local`` (scheduler, dag-processor, triggerer, api-server; LocalExecutor) with its
  metadata in a PostgreSQL database of its own on the local server, dropped afterwards;
- the watch and contract_change unpaused; timed until every version is *experimental* in the registry
  and every contract_change run has ended.

    .venv/bin/python benchmarks/estate_airflow.py --versions 2000

It prints one JSON object: the seconds from unpausing to the watch's success and to every version
settled, the watch's task instances and asset events, the contract_change runs and their task
instances. Figures: benchmarks/README.md, "Estate scale: first import in Airflow".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the scenario is shared with the tests (docs/contributing.md#test-support)
    sys.path.insert(0, str(ROOT))

from tests.support.databases import scratch_database  # noqa: E402
from tests.support.estate import generate_catalog  # noqa: E402
from tests.support.ports import closed_port  # noqa: E402
from tests.support.private_node import PrivateNode  # noqa: E402
from tests.support.served_airflow import Served, first_import  # noqa: E402

POSTGRES = "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=2000, help="new versions in the estate (default 2000)")
    parser.add_argument("--timeout", type=float, default=3600, help="give up after this many seconds")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs) and print its path")
    args = parser.parse_args(argv)

    for name in [k for k in os.environ if k.startswith(("AIRFLOW", "CONTRACT_"))]:
        del os.environ[name]  # the served Airflow finds its settings as a user's shell would
    work = Path(tempfile.mkdtemp(prefix="estate-airflow-"))
    types = set(generate_catalog(work / "contracts", args.versions))
    node = PrivateNode(work / "node")
    node.start(nofile=65_536)
    started = time.monotonic()
    try:
        with scratch_database(POSTGRES, "airflow_bench", create=False) as database, closed_port() as nowhere:
            airflow = Served(work, "/", database, broker_url=node.url, management_url=f"http://127.0.0.1:{nowhere}")
            try:
                figures = first_import(airflow, types, f"sqlite:///{work / 'data' / 'registry.db'}", args.timeout)
                failed = [r["dag_run_id"] for r in figures["runs"] if r["state"] != "success"]
                diagnosis = [airflow.diagnose("contract_change", run) for run in failed]
            finally:
                airflow.stop()
    finally:
        node.stop()
    result = {
        "versions": args.versions,
        "seconds_to_serve": figures["seconds_to_serve"],
        "seconds_watch": figures["seconds_watch"],
        "seconds_settled": figures["seconds_settled"],
        "watch_task_instances": len(figures["watch_task_instances"]),
        "asset_events": len(figures["events"]),
        "contract_change_runs": [
            (r["dag_run_id"], r["state"], r["start_date"], r["end_date"]) for r in figures["runs"]
        ],
        "contract_change_task_instances": figures["change_task_instances"],
        "failed": diagnosis,
        "wall_seconds": round(time.monotonic() - started, 1),
        "work": str(work) if args.keep else None,
    }
    print(json.dumps(result, indent=1))
    if not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

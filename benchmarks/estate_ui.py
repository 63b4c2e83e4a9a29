"""Estate scale: the Contracts page (``/contracts/``) and its JSON (``/contracts/api/contracts``).

Writes a catalogue of ``--contracts`` generated contracts (``tests.support.ui_seed.write_estate_catalog``),
seeds a SQLite registry with ``--days`` of daily history for each (``seed_estate``), then times whole
requests through the contracts app in process (FastAPI routing, the catalogue's change check, the
view model, the template or the JSON): the login dependency is the only thing replaced. Prints one
JSON line: per request, the median and max seconds over ``--repeat`` runs, and the SQL statements one
request ran.

    .venv/bin/python benchmarks/estate_ui.py --contracts 2000 --days 30 --repeat 5
    .venv/bin/python benchmarks/estate_ui.py --postgres postgresql+psycopg2://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # runs as a script: tests.support is the estate's one generator

from tests.support.ui_seed import seed_estate, write_estate_catalog  # noqa: E402

REQUESTS = {
    "page 1": "/contracts/",
    "page 2": "/contracts/?page=2",
    "page 40": "/contracts/?page=40",
    "findings filter": "/contracts/?findings=true",
    "search + domain + page 2": "/contracts/?q=recorded&domain=stock&page=2",
    "sorted by invalid rate, desc": "/contracts/?sort=invalidRate&order=desc",
    "api page 1": "/contracts/api/contracts",
    "api findings, 100 per page": "/contracts/api/contracts?findings=true&per_page=100",
}


class _Reader:
    def get_name(self) -> str:
        return "benchmark"


def _client(catalog_dir: Path, url: str) -> tuple[Any, Any]:
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from contract_platform.store import SqlRegistry
    from contract_platform_airflow.ui import create_app
    from contract_platform_airflow.ui.auth import require_reader
    from contract_platform_airflow.ui.deps import get_registry

    os.environ["CONTRACT_CATALOG"] = str(catalog_dir)
    registry = SqlRegistry.open(url)
    app = create_app()
    app.dependency_overrides[require_reader] = lambda: _Reader()
    app.dependency_overrides[get_registry] = lambda: registry
    root = FastAPI()
    root.mount("/contracts", app)
    return TestClient(root), registry


def _count_statements(registry: Any) -> list[int]:
    """Count every statement the store runs from now on (``registry`` is the one being measured)."""
    from contract_platform.store import sql

    counter = [0]
    run, run_many = sql.Transaction._run, sql.Transaction.execute_many

    def counted(self: Any, *args: Any) -> Any:
        counter[0] += 1
        return run(self, *args)

    def counted_many(self: Any, *args: Any) -> Any:
        counter[0] += 1
        return run_many(self, *args)

    sql.Transaction._run = counted  # type: ignore[method-assign]
    sql.Transaction.execute_many = counted_many  # type: ignore[method-assign]
    return counter


@contextmanager
def _registry_url(postgres: str | None, work: str) -> Iterator[str]:
    """SQLite in ``work``, or a scratch database on the PostgreSQL server ``postgres`` (dropped at the end)."""
    if postgres is None:
        yield f"sqlite:///{Path(work) / 'registry.db'}"
        return
    from tests.support.databases import scratch_database

    with scratch_database(postgres, "estate_ui") as url:
        yield url


def _run_pages(catalog_dir: Path, registry: Any, repeat: int) -> dict[str, Any]:
    """The view models of the run pages (routes that also ask Airflow's auth manager, so timed without it):
    one run (``/runs/<dag>/<run>``, the Airflow run tab) and a DAG's latest 20 runs (``/dags/<dag>/tasks/<task>``)."""
    from contract_platform.catalog import load_catalog
    from contract_platform_airflow.ui import views

    catalog = load_catalog(catalog_dir)
    timed: dict[str, Any] = {}
    for name, build in (
        ("one run", lambda: views.run_activity(catalog, registry, "contract_change", "estate__2")),
        ("latest 20 runs of envelope_quality", lambda: views.dag_activity(catalog, registry, "envelope_quality")),
        (
            "task page: a page of envelope_quality runs",
            lambda: views.dag_activity(catalog, registry, "envelope_quality", limit=views.RUNS_PER_PAGE + 1),
        ),
        (
            "task page 3",
            lambda: views.dag_activity(
                catalog, registry, "envelope_quality", limit=views.RUNS_PER_PAGE + 1, offset=2 * views.RUNS_PER_PAGE
            ),
        ),
    ):
        seconds = []
        for _ in range(repeat):
            started = time.perf_counter()
            build()
            seconds.append(time.perf_counter() - started)
        timed[name] = {"median_s": round(statistics.median(seconds), 3), "max_s": round(max(seconds), 3)}
    return timed


def _baseline(catalog_dir: Path, registry: Any, statements: list[int]) -> dict[str, Any]:
    """The catalogue's rows built the way they were before the batched reads: every version asked alone."""
    from contract_platform.catalog import load_catalog
    from contract_platform_airflow.ui import views

    catalog = load_catalog(catalog_dir)
    before, started = statements[0], time.perf_counter()
    views.catalogue_per_version(catalog, registry, None)
    return {"seconds": round(time.perf_counter() - started, 2), "sql_statements": statements[0] - before}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contracts", type=int, default=2000)
    parser.add_argument("--days", type=int, default=30, help="days of daily evidence per contract")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--baseline", action="store_true", help="also time the rows read per version (the reads before batching)"
    )
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="a PostgreSQL server (postgresql+psycopg2://user@host:port/db): the registry goes into a scratch "
        "database created there and dropped afterwards, instead of SQLite",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="estate-ui-") as work, _registry_url(args.postgres, work) as url:
        catalog_dir = Path(work) / "contracts"
        started = time.perf_counter()
        plan = write_estate_catalog(catalog_dir, args.contracts)
        evidence_rows = seed_estate(url, plan, days=args.days)
        seeded = time.perf_counter() - started
        client, registry = _client(catalog_dir, url)
        statements = _count_statements(registry)
        started = time.perf_counter()
        first = client.get("/contracts/")
        assert first.status_code == 200, first.text[:2000]
        cold = time.perf_counter() - started  # loads the catalogue once
        figures: dict[str, Any] = {}
        for name, path in REQUESTS.items():
            seconds, before = [], statements[0]
            for _ in range(args.repeat):
                started = time.perf_counter()
                response = client.get(path)
                seconds.append(time.perf_counter() - started)
                assert response.status_code == 200, (path, response.text[:2000])
            figures[name] = {
                "median_s": round(statistics.median(seconds), 3),
                "max_s": round(max(seconds), 3),
                "sql_statements": (statements[0] - before) // args.repeat,
            }
        api = client.get("/contracts/api/contracts?findings=true&per_page=500").json()
        figures["run pages, view model only"] = _run_pages(catalog_dir, registry, args.repeat)
        if args.baseline:
            figures["baseline: rows read per version"] = _baseline(catalog_dir, registry, statements)
        registry.close()
    print(
        json.dumps(
            {
                "contracts": args.contracts,
                "registry": "postgresql" if args.postgres else "sqlite",
                "days": args.days,
                "evidence_rows": evidence_rows,
                "seed_s": round(seeded, 1),
                "first_request_s (loads the catalogue)": round(cold, 2),
                "with_findings": api["matching"],
                "requests": figures,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

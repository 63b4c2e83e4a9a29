"""The main job: the platform's lifecycle on embedded defaults, through the real DAGs.

    bash scripts/main-job            (what the README's first command runs)

Everything lives under ./data (SQLite registry, Airflow's SQLite DB, archives, reports, docs);
RabbitMQ is the local broker. Progress is printed as it goes; a summary comes last. Running it
again is safe: every step is idempotent and the lifecycle only moves forward.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path.cwd()


def configure_environment(root: Path) -> dict[str, str]:
    """Embedded defaults; anything already set in the environment wins. Must run before Airflow is imported."""
    data = root / "data"
    defaults = {
        "CONTRACT_PLATFORM_HOME": str(data),
        "CONTRACT_CATALOG": str(root / "contracts"),
        "AIRFLOW_HOME": str(data / "airflow"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(root / "dags"),
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW_CONN_SPARK_DEFAULT": '{"conn_type": "spark", "host": "local[*]"}',
        "PYSPARK_PYTHON": sys.executable,
    }
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    Path(os.environ["AIRFLOW_HOME"]).mkdir(parents=True, exist_ok=True)
    return {k: os.environ[k] for k in defaults}


class Progress:
    """One line per step with elapsed time, so a person sees the run move."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.index = 0
        self.started = time.monotonic()

    def step(self, title: str, action: Callable[[], Any]) -> Any:
        self.index += 1
        began = time.monotonic()
        print(f"[{self.index}/{self.total}] {title} ...", flush=True)
        result = action()
        print(
            f"      done in {time.monotonic() - began:.1f}s (total {time.monotonic() - self.started:.1f}s)", flush=True
        )
        return result


def migrate_airflow_db() -> None:
    airflow = Path(sys.executable).parent / "airflow"
    result = subprocess.run([str(airflow), "db", "migrate"], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"airflow db migrate failed:\n{result.stderr[-3000:]}")


def run_dag(dag_id: str, conf: dict[str, Any] | None = None) -> Any:
    import logging

    from airflow.dag_processing.dagbag import DagBag

    logging.getLogger("pika").setLevel(logging.WARNING)
    bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    if bag.import_errors:
        raise SystemExit(f"DAGs do not import: {bag.import_errors}")
    dag_run = bag.get_dag(dag_id).test(run_conf=conf)
    failed = [ti.task_id for ti in dag_run.get_task_instances() if str(ti.state) == "failed"]
    print(
        f"      {dag_id}: {dag_run.state} (run {dag_run.run_id}){' — failed: ' + ', '.join(failed) if failed else ''}"
    )
    return dag_run


def check_catalog() -> dict[str, Any]:
    from contract_platform import settings
    from contract_platform.catalog import load_catalog
    from contract_platform.checks import check_catalog as check
    from contract_platform.docs import write_docs

    catalog = load_catalog(settings.catalog_dir())
    report = check(catalog)
    pages = write_docs(catalog, settings.docs_dir() / "contracts")
    print(f"      {report.contracts} contracts, {len(report.findings)} lint findings; {len(pages)} docs pages")
    return {"catalog": catalog, "ok": report.ok()}


def states() -> list[dict[str, Any]]:
    from contract_platform import settings
    from contract_platform.catalog import load_catalog
    from contract_platform.status import overview
    from contract_platform.store import Registry

    registry = Registry.open()
    try:
        return overview(load_catalog(settings.catalog_dir()), registry)
    finally:
        registry.close()


def print_states(title: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n{title}")
    width = max(len(r["messageType"]) for r in rows)
    for r in rows:
        mark = "" if r["inSync"] else "   <- " + (r["lastRefusal"] or "not reconciled yet")[:100]
        print(
            f"  {r['messageType']:<{width}}  declared {r['declared']:<11} effective {r['effective'] or '-':<12}{mark}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="main-job", description=__doc__.splitlines()[1])
    parser.parse_args(argv)
    env = configure_environment(ROOT)
    from contract_platform.settings import redact_url, registry_url

    print(
        f"Contract Lifecycle Platform — main job\n  data: {env['CONTRACT_PLATFORM_HOME']}\n  registry: {redact_url(registry_url())}"
    )
    progress = Progress(total=3)
    progress.step("prepare Airflow's metadata DB (SQLite)", migrate_airflow_db)
    before = states()
    checked = progress.step("check the catalogue and write its docs", check_catalog)
    if not checked["ok"]:
        print("the catalogue has problems: run `contractctl check` for details", file=sys.stderr)
        return 1
    dag_run = progress.step(
        "run contract_change (lint, compatibility, topology, lifecycle)", lambda: run_dag("contract_change")
    )
    after = states()
    print_states("Before:", before)
    print_states("After:", after)
    print(
        "\nWhere to look:\n"
        f"  docs:      {Path(env['CONTRACT_PLATFORM_HOME']) / 'docs' / 'contracts' / 'index.md'}\n"
        "  status:    .venv/bin/contractctl status\n"
        f"  airflow:   AIRFLOW_HOME={env['AIRFLOW_HOME']} .venv/bin/airflow standalone"
    )
    return 0 if str(dag_run.state) == "success" else 1


if __name__ == "__main__":
    raise SystemExit(main())

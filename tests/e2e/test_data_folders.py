"""Two data folders served side by side keep their Airflow metadata apart (README, "Watching it in Airflow").

Each ``scripts/airflow-local`` picks the PostgreSQL database of its own data folder
(``settings.default_metadata_url``), says which in its banner, and creates it, with the Spark tasks' pool
(docs/deploy.md, "The Spark pool"). A run triggered in one is not seen by the other. Both databases are
dropped afterwards.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from tests.support.databases import drop_database
from tests.support.served_airflow import PLATFORM_DAGS, REPO, Served, wait_for

from contract_platform_airflow.settings import SPARK_POOL, default_metadata_url, sizing

pytestmark = [pytest.mark.integration, pytest.mark.airflow, pytest.mark.timeout(600)]


def banner_database(airflow: Served) -> str:
    """The metadata DB the serve command says it uses (its banner's ``metadata DB:`` line)."""
    found = re.search(r"metadata DB: (\S+)", airflow.output(200))
    assert found, airflow.output()
    return found.group(1)


def test_two_data_folders_served_side_by_side_see_only_their_own_runs(tmp_path: Path, vhost: str) -> None:
    folders = [tmp_path / "checkout-a", tmp_path / "checkout-b"]
    served = []
    for folder in folders:
        shutil.copytree(REPO / "contracts", folder / "contracts")
        served.append(Served(folder, vhost, None))
    urls = [default_metadata_url(folder / "data") for folder in folders]
    assert urls[0] != urls[1]
    try:
        for airflow in served:
            airflow.start()
        for airflow in served:
            wait_for("the api-server", airflow.answers, 300, airflow.output)
            airflow.log_in()
            wait_for("the platform's DAGs", lambda a=airflow: a.dag_ids() >= PLATFORM_DAGS, 300, airflow.output)
        first, second = served
        assert [banner_database(airflow) for airflow in served] == urls  # no password in these URLs
        for airflow in served:  # the serve command made the Spark tasks' pool, sized for this machine
            assert airflow.request("GET", f"/api/v2/pools/{SPARK_POOL}")["slots"] == sizing().spark_slots

        run_id = first.trigger("contract_catalog_watch")
        assert [r["dag_run_id"] for r in first.runs("contract_catalog_watch")] == [run_id]
        assert second.runs("contract_catalog_watch") == []
    finally:
        for airflow in served:
            airflow.stop()
        for url in urls:
            drop_database(url)
    assert not any(airflow.stragglers() for airflow in served)

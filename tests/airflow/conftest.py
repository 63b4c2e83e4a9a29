"""A temporary, uniquely named copy of the catalogue and a fresh registry for DAG runs."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.contracts import prefixed_catalog

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def platform_env(tmp_path, monkeypatch, airflow_db) -> Iterator[dict[str, object]]:
    prefix = f"t{uuid.uuid4().hex[:8]}"
    catalog = prefixed_catalog(tmp_path / "contracts", f"{prefix}.")
    registry_url = f"sqlite:///{tmp_path / 'registry.db'}"
    monkeypatch.setenv("CONTRACT_CATALOG", str(catalog))
    monkeypatch.setenv("CONTRACT_REGISTRY_URL", registry_url)
    monkeypatch.setenv("CONTRACT_PLATFORM_HOME", str(tmp_path / "data"))
    yield {"prefix": prefix, "catalog": catalog, "registry_url": registry_url, "home": tmp_path / "data"}
    _delete_topology(prefix)


def _delete_topology(prefix: str) -> None:
    from contract_platform.amqp import ManagementClient, open_connection
    from contract_platform.amqp.connection import close_quietly

    client = ManagementClient.from_amqp_url("amqp://guest:guest@127.0.0.1:5672/%2F")
    connection = open_connection()
    try:
        channel = connection.channel()
        for name in client.queue_names(prefix="") or []:
            if prefix in name:
                channel.queue_delete(name)
        for name in client.exchange_names(prefix="") or []:
            if name.startswith(prefix):
                channel.exchange_delete(name)
    finally:
        close_quietly(connection)


@pytest.fixture(scope="session")
def dagbag(airflow_db):
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(REPO / "dags"))

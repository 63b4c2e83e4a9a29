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


INVOICE_STATUSES = {"billing.invoice-issued.v2": "active", "billing.invoice-issued.v1": "deprecated"}


@pytest.fixture()
def contracts_app(airflow_db, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    """``contracts_app(seed, family=..., statuses=...)``: a client of the contracts app (and its auth header) over a
    catalogue of the envelope and ``family`` and a store where each of ``statuses`` (by default
    billing.invoice-issued.v2 active, v1 deprecated) was registered and stepped up to its status, and
    ``seed(registry, catalog)`` recorded the rest."""
    import shutil

    from airflow.api_fastapi.app import create_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from contract_platform.catalog.loading import load_catalog
    from contract_platform.catalog.model import Status
    from contract_platform.store import SqlRegistry
    from contract_platform_airflow.ui import create_app

    folder = tmp_path / "contracts"
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    monkeypatch.setenv("CONTRACT_REGISTRY_URL", url)
    monkeypatch.setenv("CONTRACT_CATALOG", str(folder))
    clients = []

    def start(seed, family="billing/invoice-issued", statuses=INVOICE_STATUSES):  # type: ignore[no-untyped-def]
        shutil.copytree(REPO / "contracts" / "envelope", folder / "envelope", dirs_exist_ok=True)
        shutil.copytree(REPO / "contracts" / family, folder / family, dirs_exist_ok=True)
        catalog = load_catalog(folder)
        with SqlRegistry.open(url) as registry:
            for message_type, status_name in statuses.items():
                target = Status(status_name)
                state = registry.register(message_type, catalog.contracts[message_type].version, actor="test")
                for status in Status:
                    if state.status.rank < status.rank <= target.rank:
                        state = registry.apply_transition(
                            message_type, expected=state, to=status, actor="test", reason="seeded"
                        )
            seed(registry, catalog)
        root = FastAPI()
        root.mount("/contracts", create_app())
        client = TestClient(root).__enter__()
        clients.append(client)
        token = create_auth_manager().generate_jwt(SimpleAuthManagerUser(username="admin", role="admin"))
        return client, {"Authorization": f"Bearer {token}"}

    yield start
    for client in clients:
        client.__exit__(None, None, None)

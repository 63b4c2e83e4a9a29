"""The default registry store is one rule: the data folder's SQLite file, for every caller."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_the_default_registry_is_the_data_folder_s_sqlite_file_for_every_caller(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """settings.registry_url, check's readers perspective and the Airflow connection name the same store."""
    from contract_platform import settings
    from contract_platform_airflow.settings import airflow_environment

    monkeypatch.delenv("CONTRACT_REGISTRY_URL", raising=False)
    monkeypatch.setenv("CONTRACT_PLATFORM_HOME", str(tmp_path))
    url = f"sqlite:///{tmp_path.resolve() / 'registry.db'}"
    assert settings.registry_url() == settings.default_registry_url() == url
    assert settings.registry_file() == tmp_path.resolve() / "registry.db"
    env = airflow_environment(tmp_path, data=tmp_path, environ={})
    assert json.loads(env["AIRFLOW_CONN_CONTRACT_REGISTRY_DEFAULT"])["extra"]["url"] == url


def test_a_url_given_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    from contract_platform import settings

    monkeypatch.setenv("CONTRACT_REGISTRY_URL", "postgresql+psycopg2://registry@db/registry")
    assert settings.registry_url() == "postgresql+psycopg2://registry@db/registry"


def test_earlier_schemas_leave_the_version_itself_out_oldest_first(tmp_path, catalog):
    """The one rule for 'what a version is compared with': the registry's schemas of its major, not its own."""
    from contract_platform.evidence.registry import earlier_schemas
    from contract_platform.store import SqlRegistry

    v1 = catalog.get("billing.invoice-issued.v1")
    with SqlRegistry.open(f"sqlite:///{tmp_path / 'r.db'}") as registry:
        for version in ("1.10.0", v1.version, "1.2.0"):
            registry.snapshot_schema(v1.message_type, version, {"title": version})
        assert [v for v, _ in earlier_schemas(registry, v1)] == sorted(
            {"1.2.0", "1.10.0"} - {v1.version}, key=lambda v: tuple(int(p) for p in v.split("."))
        )
    assert earlier_schemas(None, v1) == []

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

"""scripts/airflow-local's preparation: the components' environment and the admin login it prints.

Serving itself (the real components) is tests/e2e/test_airflow_scheduler.py.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from unittest import mock

import pytest

from contract_platform_airflow import serve

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def environ(tmp_path):
    """A user's shell: no Airflow or platform settings, the venv not on PATH; restored afterwards."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "CONTRACT_", "PYSPARK_"))}
    clean["PATH"] = "/usr/bin:/bin"
    with mock.patch.dict(os.environ, clean, clear=True):
        yield os.environ


def test_serves_the_main_jobs_data_and_working_catalogue(environ, tmp_path):
    data = tmp_path / "data"
    (data / "demo" / "contracts").mkdir(parents=True)
    environ["CONTRACT_PLATFORM_HOME"] = str(data)

    env = serve.serve_environment(REPO, 8080)

    assert env["AIRFLOW_HOME"] == str(data.resolve() / "airflow")
    assert env["CONTRACT_CATALOG"] == str(data.resolve() / "demo" / "contracts")
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == str(REPO / "dags")
    assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "False"
    assert json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"])["host"] == "local[*]"
    assert json.loads(env["AIRFLOW_CONN_CONTRACT_REGISTRY_DEFAULT"])["extra"]["url"].endswith("data/registry.db")
    assert environ["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)  # standalone starts `airflow`
    assert all(environ[key] == value for key, value in env.items())


def test_before_the_main_job_it_serves_the_repository_catalogue(environ, tmp_path):
    environ["CONTRACT_PLATFORM_HOME"] = str(tmp_path / "fresh")

    assert serve.serve_environment(REPO, 8080)["CONTRACT_CATALOG"] == str(REPO / "contracts")


def test_the_port_on_the_command_line_wins_and_tasks_follow_it(environ, tmp_path):
    environ["CONTRACT_PLATFORM_HOME"] = str(tmp_path)
    environ["AIRFLOW__API__PORT"] = "8080"

    env = serve.serve_environment(REPO, 18123)

    assert env["AIRFLOW__API__PORT"] == environ["AIRFLOW__API__PORT"] == "18123"
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://127.0.0.1:18123/execution/"
    assert env["AIRFLOW__API__HOST"] == "127.0.0.1"


def test_the_admin_password_is_made_once_and_kept_private(environ, tmp_path):
    first = serve.admin_password(tmp_path)
    again = serve.admin_password(tmp_path)

    path = tmp_path / "simple_auth_manager_passwords.json.generated"
    assert first == again and len(first) >= 12
    assert json.loads(path.read_text()) == {"admin": first}
    assert path.stat().st_mode & 0o077 == 0


def test_an_earlier_generated_password_is_reused(environ, tmp_path):
    (tmp_path / "simple_auth_manager_passwords.json.generated").write_text('{"admin": "from-standalone"}')

    assert serve.admin_password(tmp_path) == "from-standalone"


def test_the_summary_shows_no_broker_or_registry_password(environ, tmp_path):
    environ["CONTRACT_PLATFORM_HOME"] = str(tmp_path)
    environ["CONTRACT_RABBITMQ_URL"] = "amqp://svc:broker-secret@rabbit:5672/%2F"
    environ["CONTRACT_REGISTRY_URL"] = "postgresql+psycopg2://reg:store-secret@db/registry"
    env = serve.serve_environment(REPO, 8080)

    text = serve.describe(env, "http://127.0.0.1:8080", "admin-pw")

    assert "broker-secret" not in text and "store-secret" not in text
    assert "admin / admin-pw" in text and "rabbit:5672" in text and "reg:***@db/registry" in text

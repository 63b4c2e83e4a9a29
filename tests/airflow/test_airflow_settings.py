"""The platform's Airflow settings: one definition, and everything that runs Airflow follows it.

``docker-compose.yml`` cannot import Python, so it is read here and held to the definition.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from contract_platform_airflow import settings
from contract_platform_airflow.settings import (
    CONNECTION_IDS,
    FIXED,
    SPARK_POOL,
    airflow_environment,
    apply,
    connection_env_name,
    rabbitmq_connection,
    registry_connection,
    sizing,
)

REPO = Path(__file__).resolve().parents[2]


def test_a_checkout_serves_its_own_dags_without_examples(tmp_path):
    env = airflow_environment(REPO, data=tmp_path, environ={})

    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == str(REPO / "dags")
    assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "False"
    assert env["AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION"] == "False"
    assert env["AIRFLOW_HOME"] == str(tmp_path.resolve() / "airflow")
    assert env["CONTRACT_PLATFORM_HOME"] == str(tmp_path.resolve())
    assert {name for name in env if name.startswith("AIRFLOW_CONN_")} == {
        connection_env_name(conn_id) for conn_id in CONNECTION_IDS
    }


def test_connections_follow_the_platform_settings(monkeypatch, tmp_path):
    """Airflow's hooks and contractctl reach the same broker and store, whatever the settings say."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    from contract_platform_airflow.hooks.rabbitmq import RabbitMQHook
    from contract_platform_airflow.hooks.registry import RegistryHook

    broker = "amqp://svc:p%40ss@rabbit.internal:5673/billing"
    env = airflow_environment(REPO, data=tmp_path, spark_master="local[3]", environ={"CONTRACT_RABBITMQ_URL": broker})
    for name, value in env.items():
        if name.startswith("AIRFLOW_CONN_"):
            monkeypatch.setenv(name, value)

    assert SparkSubmitHook(conn_id="spark_default")._connection["master"] == "local[3]"
    assert RabbitMQHook().get_url() == broker
    assert RegistryHook().get_url() == f"sqlite:///{tmp_path.resolve() / 'registry.db'}"


@pytest.mark.parametrize(
    "url",
    ["amqp://guest:guest@127.0.0.1:5672/%2F", "amqps://u:p%2Fw@host:5671/vh", "amqp://a:b@h:5672/t-main-1234"],
)
def test_broker_connection_round_trips_through_the_hook(monkeypatch, url):
    from contract_platform_airflow.hooks.rabbitmq import RabbitMQHook

    monkeypatch.setenv("AIRFLOW_CONN_RABBITMQ_DEFAULT", rabbitmq_connection(url))

    assert RabbitMQHook().get_url() == url


def test_registry_connection_keeps_any_sqlalchemy_url(monkeypatch):
    from contract_platform_airflow.hooks.registry import RegistryHook

    url = "postgresql+psycopg2://registry:s3cret@db.internal:5432/registry"
    monkeypatch.setenv("AIRFLOW_CONN_CONTRACT_REGISTRY_DEFAULT", registry_connection(url))

    assert RegistryHook().get_url() == url


def test_a_broker_url_that_is_not_amqp_is_refused_without_its_password():
    with pytest.raises(ValueError) as exc:
        rabbitmq_connection("http://user:hunter2@rabbit:15672/")
    assert "hunter2" not in str(exc.value)


def test_values_already_set_win():
    environ = {"AIRFLOW_HOME": "/srv/airflow", "AIRFLOW__CORE__LOAD_EXAMPLES": ""}

    applied = apply({"AIRFLOW_HOME": "/tmp/x", "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}, environ)

    assert applied == {"AIRFLOW_HOME": "/srv/airflow", "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}


@pytest.mark.parametrize(("cpus", "parallelism", "spark"), [(1, 4, 1), (2, 4, 1), (8, 16, 4)])
def test_sizing_follows_the_cores(cpus, parallelism, spark):
    sized = sizing(cpus)

    assert (sized.parallelism, sized.spark_slots) == (parallelism, spark)
    env = airflow_environment(REPO, cpus=cpus, environ={})
    assert env["AIRFLOW__CORE__PARALLELISM"] == str(parallelism)


def test_the_pool_is_created_with_its_slots(airflow_db):
    from airflow.models.pool import Pool

    settings.ensure_pools(cpus=8)
    assert Pool.get_pool(SPARK_POOL).slots == 4
    settings.ensure_pools(cpus=2)
    assert Pool.get_pool(SPARK_POOL).slots == 1


# --- docker-compose.yml, held to the definition ------------------------------------------------


def compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text("utf-8"))


def compose_airflow_env() -> dict[str, str]:
    """The Airflow environment of the default stack: ``${NAME:-default}`` is its default (.env leaves it unset)."""
    return {
        key: re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", str(value)) for key, value in compose()["x-airflow-env"].items()
    }


def test_compose_sets_the_fixed_settings_and_the_sizing_of_its_two_core_worker():
    env = compose_airflow_env()
    cores = int(re.search(r"SPARK_WORKER_CORES:-(\d+)", json.dumps(compose()["services"]["spark-worker"])).group(1))

    expected = {**FIXED, **sizing(cores).environment()}
    assert {key: env.get(key) for key in expected} == expected


def test_compose_s_celery_settings_are_the_platform_s():
    env = compose_airflow_env()
    expected = settings.celery_environment("redis://redis:6379/0", env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
    expected.pop("AIRFLOW__CORE__EXECUTOR")  # LocalExecutor by default; CeleryExecutor with the celery profile
    assert {key: env.get(key) for key in expected} == expected


@pytest.mark.parametrize(
    ("metadata", "backend"),
    [
        ("postgresql+psycopg2://u:p@db:5432/airflow", "db+postgresql+psycopg2://u:p@db:5432/airflow"),
        ("postgresql://u:p@db/airflow", "db+postgresql+psycopg2://u:p@db/airflow"),
        ("postgres://db/airflow", "db+postgresql+psycopg2://db/airflow"),
    ],
)
def test_celery_s_result_backend_names_the_driver_the_platform_installs(metadata, backend):
    assert settings.celery_result_backend(metadata) == backend
    assert settings.celery_environment("redis://r:6379/3", metadata)["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"


@pytest.mark.parametrize("metadata", ["sqlite:////tmp/airflow.db", "mysql://u:p@db/airflow", "not a url"])
def test_celery_s_result_backend_is_refused_on_another_database_without_the_password(metadata):
    with pytest.raises(ValueError, match="PostgreSQL") as error:
        settings.celery_result_backend(metadata)
    assert ":p@" not in str(error.value)


def test_the_spark_queue_is_optional():
    assert settings.spark_queue({}) is None
    assert settings.spark_queue({"CONTRACT_SPARK_QUEUE": " "}) is None
    assert settings.spark_queue({"CONTRACT_SPARK_QUEUE": "spark"}) == "spark"


def test_compose_defines_every_platform_connection():
    env = compose_airflow_env()

    assert all(env.get(connection_env_name(conn_id)) for conn_id in CONNECTION_IDS)


def test_compose_creates_the_spark_pool_before_anything_is_scheduled():
    services = compose()["services"]
    init = " ".join(services["airflow-init"]["command"])
    cores = int(re.search(r"SPARK_WORKER_CORES:-(\d+)", json.dumps(services["spark-worker"])).group(1))

    match = re.search(rf"airflow pools set {SPARK_POOL} (\d+) ", init)
    assert match, f"airflow-init does not create the {SPARK_POOL} pool"
    assert int(match.group(1)) == sizing(cores).spark_slots
    assert init.index("airflow db migrate") < match.start()
    for name, service in services.items():
        if name.startswith("airflow-") and name != "airflow-init":  # the components and the celery profile's workers
            assert service["depends_on"]["airflow-init"] == {"condition": "service_completed_successfully"}, name


# --- docs/deploy.md's commands for several machines, held to Airflow's defaults -----------------


def deploy_commands() -> tuple[str, int]:
    """The command block of docs/deploy.md's CeleryExecutor section, and the Spark cores it is written for."""
    text = (REPO / "docs" / "deploy.md").read_text("utf-8")
    found = re.search(r"a Spark cluster of (\d+) cores\):\n\n```bash\n(.*?)```", text, re.S)
    assert found, "docs/deploy.md has no command block for several machines"
    return found.group(2), int(found.group(1))


def test_the_deployment_doc_s_workers_serve_every_queue_on_log_ports_of_their_own():
    from airflow.configuration import conf

    commands, _ = deploy_commands()
    workers = [line for line in commands.splitlines() if "airflow celery worker" in line]
    default_port = int(conf.get_default_value("logging", "worker_log_server_port"))
    taken = {int(conf.get_default_value("logging", "trigger_log_server_port"))}  # a triggerer on the same host
    for worker in workers:
        chosen = re.search(r"AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT=(\d+)", worker)
        port = int(chosen.group(1)) if chosen else default_port
        assert port not in taken, worker
        taken.add(port)
    served = [set(re.search(r"--queues (\S+)", worker).group(1).split(",")) for worker in workers]
    assert {conf.get_default_value("operators", "default_queue"), "spark"} in served, served


def test_the_deployment_doc_creates_the_spark_pool_after_the_migration():
    commands, cores = deploy_commands()

    match = re.search(rf"airflow pools set {SPARK_POOL} (\d+) ", commands)
    assert match, f"docs/deploy.md does not create the {SPARK_POOL} pool"
    assert int(match.group(1)) == sizing(cores).spark_slots
    assert commands.index("airflow db migrate") < match.start() < commands.index("airflow scheduler")

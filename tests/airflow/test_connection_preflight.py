"""A task whose connection cannot work fails at once, without retry, with one line that says how to fix it.

Connections come from ``AIRFLOW_CONN_*`` variables (no metadata DB), as in the Airflow providers' tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk.exceptions import AirflowFailException

from contract_platform_airflow import spark as spark_module
from contract_platform_airflow.hooks.rabbitmq import RabbitMQHook
from contract_platform_airflow.hooks.registry import RegistryHook
from contract_platform_airflow.settings import SPARK_POOL, spark_connection
from contract_platform_airflow.spark import check_spark_connection, spark_submit


@pytest.fixture()
def submitted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replaces the provider's submission: records the connection instead of running spark-submit."""
    calls: list[str] = []
    monkeypatch.setattr(SparkSubmitOperator, "execute", lambda self, context: calls.append(self._conn_id))
    return calls


def operator() -> spark_module.PlatformSparkSubmitOperator:
    op = spark_submit(task_id="validate_archive", job="validate_archive", application_args=["--help"])
    assert isinstance(op, spark_module.PlatformSparkSubmitOperator)
    return op


def one_line(exc: pytest.ExceptionInfo[AirflowFailException]) -> str:
    message = str(exc.value)
    assert "\n" not in message, message
    return message


def refusal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """The one line a Spark task over a registry of ``tmp_path`` fails with."""
    monkeypatch.setenv("CONTRACT_REGISTRY_URL", f"sqlite:///{tmp_path / 'registry.db'}")
    with pytest.raises(AirflowFailException) as exc:
        operator().execute({})
    return one_line(exc)


def test_missing_spark_default_fails_before_submitting(monkeypatch, submitted, tmp_path):
    monkeypatch.delenv("AIRFLOW_CONN_SPARK_DEFAULT", raising=False)

    message = refusal(monkeypatch, tmp_path)
    assert "'spark_default' is not defined" in message and "YARN" in message
    assert """AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[*]"}'""" in message
    assert submitted == []


@pytest.mark.parametrize("conn", ['{"conn_type": "spark", "host": "yarn"}', "yarn://"])
def test_yarn_without_a_hadoop_configuration_fails_before_submitting(monkeypatch, submitted, tmp_path, conn):
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", conn)
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)

    message = refusal(monkeypatch, tmp_path)
    assert "'spark_default' points at YARN" in message and "HADOOP_CONF_DIR" in message
    assert "local[*]" in message
    assert submitted == []


def test_yarn_with_a_hadoop_configuration_is_submitted(monkeypatch, submitted, tmp_path):
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "yarn"}')
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    monkeypatch.setenv("CONTRACT_REGISTRY_URL", f"sqlite:///{tmp_path / 'registry.db'}")

    operator().execute({})

    assert submitted == ["spark_default"]


@pytest.mark.parametrize(
    ("conn", "master"),
    [
        (spark_connection("local[2]"), "local[2]"),
        ('{"conn_type": "spark", "host": "spark://spark-master", "port": 7077}', "spark://spark-master:7077"),
    ],
)
def test_other_masters_pass_the_check_as_the_provider_reads_them(monkeypatch, conn, master):
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", conn)

    assert check_spark_connection("spark_default") == master
    assert SparkSubmitHook(conn_id="spark_default")._connection["master"] == master


def test_kubernetes_without_its_provider_fails_with_the_fix(monkeypatch):
    if spark_module._installed("airflow.providers.cncf.kubernetes"):
        pytest.skip("the cncf-kubernetes provider is installed here")
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "k8s://https://api:6443"}')

    with pytest.raises(AirflowFailException) as exc:
        check_spark_connection("spark_default")

    assert "points at Kubernetes" in one_line(exc) and "cncf-kubernetes" in str(exc.value)


def test_spark_tasks_run_in_the_platform_pool():
    assert operator().pool == SPARK_POOL


def test_missing_registry_connection_and_settings_fail_with_the_fix(monkeypatch):
    monkeypatch.delenv("AIRFLOW_CONN_CONTRACT_REGISTRY_DEFAULT", raising=False)
    monkeypatch.delenv("CONTRACT_REGISTRY_URL", raising=False)
    monkeypatch.delenv("CONTRACT_PLATFORM_HOME", raising=False)

    with pytest.raises(AirflowFailException) as exc:
        RegistryHook().get_url()

    message = one_line(exc)
    assert "'contract_registry_default' is not defined" in message
    assert "AIRFLOW_CONN_CONTRACT_REGISTRY_DEFAULT=" in message


def test_registry_without_connection_uses_the_platform_home_when_set(monkeypatch, tmp_path):
    monkeypatch.delenv("AIRFLOW_CONN_CONTRACT_REGISTRY_DEFAULT", raising=False)
    monkeypatch.delenv("CONTRACT_REGISTRY_URL", raising=False)
    monkeypatch.setenv("CONTRACT_PLATFORM_HOME", str(tmp_path))

    assert RegistryHook().get_url() == f"sqlite:///{tmp_path.resolve() / 'registry.db'}"


def test_missing_broker_connection_and_url_fail_with_the_fix(monkeypatch):
    monkeypatch.delenv("AIRFLOW_CONN_RABBITMQ_DEFAULT", raising=False)
    monkeypatch.delenv("CONTRACT_RABBITMQ_URL", raising=False)

    with pytest.raises(AirflowFailException) as exc:
        RabbitMQHook().get_url()

    message = one_line(exc)
    assert "'rabbitmq_default' is not defined" in message and "AIRFLOW_CONN_RABBITMQ_DEFAULT=" in message

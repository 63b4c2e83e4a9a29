"""No credential reaches a rendered template field: what the UI's "Rendered Template" view shows of every task."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

pytestmark = pytest.mark.airflow

PASSWORD = "s3cr3t-pw"


class _TaskInstance:
    """Enough of a task instance for the DAGs' templates (``ti.xcom_pull(...)['key']``)."""

    def xcom_pull(self, *args: Any, **kwargs: Any) -> defaultdict[str, str]:
        return defaultdict(lambda: "planned")


def test_no_template_field_of_any_task_renders_the_registry_password(dagbag, monkeypatch) -> None:
    monkeypatch.setenv("CONTRACT_REGISTRY_URL", f"postgresql://platform:{PASSWORD}@db.example:5432/registry")
    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", f"amqp://platform:{PASSWORD}@mq.example:5672/%2F")
    context = {"ti": _TaskInstance(), "run_id": "manual__1", "params": {}, "ds": "2026-07-01"}
    rendered_fields = 0
    for dag in dagbag.dags.values():
        env = dag.get_template_env()
        for task in dag.tasks:
            for name in task.template_fields:
                value = task.render_template(getattr(task, name, None), context, jinja_env=env)
                rendered_fields += 1
                assert PASSWORD not in repr(value), f"{dag.dag_id}.{task.task_id}.{name} renders a password"
    assert rendered_fields > 10


def test_the_spark_task_gets_the_registry_url_only_when_it_runs(dagbag, monkeypatch) -> None:
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from contract_platform_airflow import spark

    url = f"postgresql://platform:{PASSWORD}@db.example:5432/registry"
    monkeypatch.setenv("CONTRACT_REGISTRY_URL", url)
    monkeypatch.setattr(spark, "check_spark_connection", lambda conn_id, env_vars=None: "local[2]")
    submitted: dict[str, Any] = {}
    monkeypatch.setattr(SparkSubmitOperator, "execute", lambda self, context: submitted.update(self.env_vars))
    task = dagbag.get_dag("envelope_quality").get_task("check_envelopes")
    assert "CONTRACT_REGISTRY_URL" not in (task.env_vars or {})
    monkeypatch.setattr(task, "env_vars", dict(task.env_vars or {}))  # the session's DAG gets it back unchanged

    task.execute({})

    assert submitted["CONTRACT_REGISTRY_URL"] == url


def test_the_replay_task_reads_messages_in_flight_through_rabbitmq_default(dagbag, monkeypatch) -> None:
    """The broker a user set as ``rabbitmq_default`` is the one replay peeks, not the worker's environment."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from contract_platform_airflow import spark

    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")
    monkeypatch.setenv("AIRFLOW_CONN_RABBITMQ_DEFAULT", f"amqp://platform:{PASSWORD}@broker.example:5673/orders")
    monkeypatch.setattr(spark, "check_spark_connection", lambda conn_id, env_vars=None: "local[2]")
    submitted: dict[str, Any] = {}
    monkeypatch.setattr(SparkSubmitOperator, "execute", lambda self, context: submitted.update(self.env_vars))
    task = dagbag.get_dag("contract_change").get_task("replay_traffic")
    assert "CONTRACT_RABBITMQ_URL" not in (task.env_vars or {})
    monkeypatch.setattr(task, "env_vars", dict(task.env_vars or {}))

    task.execute({})

    assert submitted["CONTRACT_RABBITMQ_URL"] == f"amqp://platform:{PASSWORD}@broker.example:5673/orders"

"""A Spark job that rejects its input fails its task without retry; any other failure keeps the retries.

The bad-input case goes through a real ``spark-submit`` (the exit code must survive it); the other
case replaces the submission, since making Spark itself fail on purpose takes far longer.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from airflow.exceptions import AirflowException
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk.exceptions import AirflowFailException

from contract_platform_airflow.spark import BAD_INPUT, spark_submit

pytestmark = [pytest.mark.airflow, pytest.mark.spark]


@pytest.fixture()
def local_spark(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[1]"}')
    monkeypatch.setenv("CONTRACT_REGISTRY_URL", f"sqlite:///{tmp_path / 'registry.db'}")


def test_bad_input_through_spark_submit_fails_without_retry(local_spark, tmp_path) -> None:
    task = spark_submit(
        task_id="validate_archive",
        job="validate_archive",
        application_args=[str(tmp_path), "--catalog", str(tmp_path / "no-catalogue-here")],
    )
    with pytest.raises(AirflowFailException, match=f"rejected its input \\(exit {BAD_INPUT}\\)"):
        task.execute({})


def test_any_other_failure_is_left_to_the_retries(local_spark, monkeypatch) -> None:
    def crash(self, context):  # type: ignore[no-untyped-def]
        self._hook = SimpleNamespace(_submit_sp=SimpleNamespace(returncode=1))
        raise AirflowException("Cannot execute: spark-submit ... Error code is: 1.")

    monkeypatch.setattr(SparkSubmitOperator, "execute", crash)
    task = spark_submit(task_id="validate_archive", job="validate_archive", application_args=["x"])
    with pytest.raises(AirflowException) as raised:
        task.execute({})
    assert not isinstance(raised.value, AirflowFailException)

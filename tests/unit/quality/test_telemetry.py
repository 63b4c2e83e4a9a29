"""Great Expectations' usage analytics: off for every process that runs GX, unless the user opted in.

The quality run itself (the real GX path, guarded against any connection off the machine) is
``tests/spark/test_quality_telemetry.py``; here, the rule and the environments it reaches without a JVM.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark import SparkConf

from contract_platform.quality.telemetry import ANALYTICS_VARIABLE, analytics_off
from contract_platform_airflow.settings import airflow_environment, apply
from spark_jobs.session import session_conf


@pytest.mark.parametrize(("before", "after"), [(None, "False"), ("", "False"), ("True", "True"), ("false", "false")])
def test_analytics_are_off_unless_the_user_set_them(before: str | None, after: str) -> None:
    environ = {} if before is None else {ANALYTICS_VARIABLE: before}

    assert analytics_off(environ) == after
    assert environ == {ANALYTICS_VARIABLE: after}


@pytest.mark.parametrize(("before", "after"), [(None, "False"), ("True", "True")])
def test_every_component_of_the_served_airflow_gets_it(before: str | None, after: str, repo_root: Path) -> None:
    """What ``scripts/airflow-local`` and the main job put in the environment of Airflow and its tasks."""
    environ = {} if before is None else {ANALYTICS_VARIABLE: before}

    apply(airflow_environment(repo_root, environ=environ), environ)

    assert environ[ANALYTICS_VARIABLE] == after


@pytest.mark.parametrize(("before", "after"), [(None, "False"), ("True", "True")])
def test_the_spark_executors_get_it(before: str | None, after: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if before is None:
        monkeypatch.delenv(ANALYTICS_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(ANALYTICS_VARIABLE, before)

    conf = session_conf(SparkConf(loadDefaults=False))

    assert conf.get(f"spark.executorEnv.{ANALYTICS_VARIABLE}") == after


def test_a_job_s_own_executor_setting_wins() -> None:
    conf = session_conf(SparkConf(loadDefaults=False).set(f"spark.executorEnv.{ANALYTICS_VARIABLE}", "True"))

    assert conf.get(f"spark.executorEnv.{ANALYTICS_VARIABLE}") == "True"

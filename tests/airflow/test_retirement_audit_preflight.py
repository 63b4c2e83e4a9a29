"""retirement_audit's first task: no management API, no audit, and the failure says the one command that fixes it."""

from __future__ import annotations

import pytest
from airflow.sdk.exceptions import AirflowFailException

from contract_platform.amqp.management import ENABLE_COMMAND

pytestmark = [pytest.mark.airflow, pytest.mark.timeout(120)]


def test_the_management_check_runs_first(dagbag) -> None:
    dag = dagbag.get_dag("retirement_audit")
    first = dag.get_task("check_management_api")
    assert first.retries == 0 and not first.upstream_task_ids
    assert [t.task_id for t in dag.roots] == ["check_management_api"]


def test_without_the_management_api_it_fails_without_retry_and_says_the_fix(dagbag, monkeypatch, closed_port) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_RABBITMQ_DEFAULT", "amqp://guest:guest@127.0.0.1:5672/%2F")
    monkeypatch.setenv("CONTRACT_RABBITMQ_MANAGEMENT_URL", f"http://127.0.0.1:{closed_port}")
    task = dagbag.get_dag("retirement_audit").get_task("check_management_api")

    with pytest.raises(AirflowFailException) as failed:
        task.python_callable()

    assert ENABLE_COMMAND in str(failed.value)

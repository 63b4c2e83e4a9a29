"""Both evidence DAGs validate the days of their run: a scheduled run its data interval, a manual run its params."""

from __future__ import annotations

import inspect
from datetime import datetime
from types import SimpleNamespace
from typing import Any

import pendulum
import pytest

from contract_platform.errors import UsageError

pytestmark = pytest.mark.airflow

START = pendulum.datetime(2026, 7, 2, tz="UTC")
END = pendulum.datetime(2026, 7, 3, tz="UTC")


def context(run_type: str, start: datetime | None = START, end: datetime | None = END) -> dict[str, Any]:
    """The run as a task sees it: its ``run_type`` is the task SDK's ``DagRunType``, as in a real task
    (``tests/e2e/test_celery_workers.py`` runs scheduled runs under the real scheduler)."""
    from airflow.sdk.api.datamodels._generated import DagRunType

    run = SimpleNamespace(run_type=DagRunType(run_type), run_id=f"{run_type}__2026-07-03")
    return {"dag_run": run, "run_id": run.run_id, "data_interval_start": start, "data_interval_end": end}


def test_a_scheduled_or_backfill_run_covers_its_data_interval_and_a_manual_one_its_params() -> None:
    from contract_platform_airflow.intervals import run_range

    assert str(context("scheduled")["dag_run"].run_type) == "DagRunType.SCHEDULED"  # why str() cannot compare
    assert run_range(context("scheduled")) == ("2026-07-02", "2026-07-03")
    assert run_range(context("backfill")) == ("2026-07-02", "2026-07-03")
    assert run_range(context("manual")) == ("", "")  # the whole archive
    assert run_range(context("manual"), {"since": "2026-06-01", "until": ""}) == ("2026-06-01", "")
    assert run_range(context("scheduled"), {"since": "2026-06-01", "until": "2026-06-08"}) == (
        "2026-06-01",
        "2026-06-08",
    )
    assert run_range(context("scheduled", END, END)) == ("", "")  # an empty interval is no range
    with pytest.raises(UsageError, match="YYYY-MM-DD"):
        run_range(context("manual"), {"since": "yesterday"})
    with pytest.raises(UsageError, match="not after"):
        run_range(context("manual"), {"since": "2026-07-03", "until": "2026-07-02"})


def test_the_evidence_dags_have_day_long_data_intervals(dagbag) -> None:
    for dag_id in ("topic_archive_validation", "envelope_quality"):
        interval = dagbag.get_dag(dag_id).timetable.infer_manual_data_interval(
            run_after=pendulum.datetime(2026, 7, 3, 5, tz="UTC")
        )
        assert (interval.start, interval.end) == (START, END), dag_id


class FakeTI:
    def __init__(self, plans: dict[str, dict[str, str]]) -> None:
        self.plans = plans

    def xcom_pull(self, task_ids: str) -> dict[str, str]:
        return self.plans[task_ids]


def run_task(dag, task_id: str, ctx: dict[str, Any], monkeypatch, **kwargs: Any) -> Any:  # type: ignore[no-untyped-def]
    body = inspect.unwrap(dag.get_task(task_id).python_callable)
    monkeypatch.setitem(body.__globals__, "get_current_context", lambda: ctx)
    return body(**kwargs)


@pytest.mark.parametrize(
    ("dag_id", "plan_task", "spark_task"),
    [
        ("topic_archive_validation", "plan_paths", "validate_archive"),
        ("envelope_quality", "plan_run", "check_envelopes"),
    ],
)
def test_a_scheduled_run_hands_its_data_interval_to_the_spark_job(
    dagbag, dag_id: str, plan_task: str, spark_task: str, monkeypatch, tmp_path, catalog_dir
) -> None:
    monkeypatch.setenv("CONTRACT_PLATFORM_HOME", str(tmp_path))
    monkeypatch.setenv("CONTRACT_CATALOG", str(catalog_dir))
    (tmp_path / "archive").mkdir()
    dag = dagbag.get_dag(dag_id)
    ctx = context("scheduled")
    kwargs: dict[str, Any] = {"params": {}}
    if plan_task == "plan_paths":
        kwargs["_archived"] = {}
    plan = run_task(dag, plan_task, ctx, monkeypatch, **kwargs)
    assert (plan["since"], plan["until"]) == ("2026-07-02", "2026-07-03")

    task = dag.get_task(spark_task)
    args = task.render_template(task.application_args, {"ti": FakeTI({plan_task: plan}), "run_id": ctx["run_id"]})
    rendered = dict(zip(args, args[1:], strict=False))
    assert rendered["--since"] == "2026-07-02" and rendered["--until"] == "2026-07-03"
    assert rendered["--run-id"] == "scheduled__2026-07-03"
    assert "--no-fail-on-findings" in args  # findings are evidence first; the last task turns the run red


def test_archive_validation_ends_red_on_invalid_records_of_its_days(dagbag, tmp_path) -> None:
    import json

    from airflow.sdk.exceptions import AirflowFailException

    report = tmp_path / "report.json"
    report.write_text(
        json.dumps({"by_type": {"billing.invoice-issued.v1": {"records": 21, "invalid": 1}, "x.y.v1": {"invalid": 0}}})
    )
    plan = {"report": str(report), "quarantine": "/q", "since": "2026-07-02", "until": "2026-07-03"}
    body = inspect.unwrap(dagbag.get_dag("topic_archive_validation").get_task("report_findings").python_callable)
    with pytest.raises(AirflowFailException, match=r"2026-07-02 to 2026-07-03:\n.*1 of 21 records invalid"):
        body(plan, {})
    report.write_text(json.dumps({"by_type": {"billing.invoice-issued.v1": {"records": 21, "invalid": 0}}}))
    body(plan, {})  # nothing invalid: green

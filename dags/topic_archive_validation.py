"""
### Topic archive validation

Daily and on demand: what actually travelled on each topic, checked against the catalogue.
A scheduled run validates its data interval's day only (docs/archive-validation.md): the date
partitions `date=YYYY-MM-DD` of that day, with duplicates and ordering carried across days by the
job's state; the 7-day invalid rate is the sum of the daily runs' evidence.

1. **archive_topics** — drains every `archive.<exchange>` queue into the topic archive
   (`<archive>/<exchange>/date=YYYY-MM-DD/*.jsonl`), acknowledging only what is fsynced.
2. **plan_paths** — where this run's report and quarantine go, and which days it validates: the
   data interval of a scheduled or backfill run; params *since*/*until* (`YYYY-MM-DD`, until
   exclusive) for a manual run, which without them validates the whole archive.
3. **validate_archive** — the Spark job (`spark_jobs/validate_archive.py`, submitted on
   `spark_default`): every record checked for the reason codes of docs/design.md#reason-codes; invalid
   records go to the quarantine with all their reasons and JSON pointers. The job records one
   `archive_validation` evidence per message type in the registry store, linked to this run.
4. **reconcile_lifecycle** — the evidence feeds the experimental → active guard (invalid rate
   under the contract's target over its window), so the lifecycle is reconciled.
5. **report_findings** — ends the run red when records of the validated days are invalid, naming
   the counts and the quarantine; evidence and lifecycle are already done.

Param *archive* validates another archive (a folder or one file) instead of the platform's.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from airflow.sdk import get_current_context, task

from contract_platform_airflow.dags import platform_dag
from contract_platform_airflow.intervals import DAILY, archive_param, interval_params, run_range
from contract_platform_airflow.runtime import (
    actor_of,
    broker,
    fail_if,
    fail_on_bad_input,
    registry,
    run_id_of,
)
from contract_platform_airflow.spark import spark_submit

PATHS = "{{ ti.xcom_pull(task_ids='plan_paths')"


@platform_dag(
    __doc__,
    schedule=DAILY,
    tags=["evidence", "spark"],
    retries=2,
    retry_delay=timedelta(minutes=1),
    params={
        **archive_param("a folder or one file to validate instead"),
        **interval_params(),
    },
)
def topic_archive_validation() -> None:
    @task
    @fail_on_bad_input
    def archive_topics(params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        from contract_platform import settings
        from contract_platform.archiving import drain_archives
        from contract_platform.catalog import load_catalog

        if (params or {}).get("archive"):
            return {"skipped": "validating the archive given by the archive param"}
        with broker() as connection:
            return drain_archives(load_catalog(), connection, settings.archive_dir())

    @task(retries=0)
    @fail_on_bad_input
    def plan_paths(_archived: dict[str, Any], params: Mapping[str, Any] | None = None) -> dict[str, str]:
        from contract_platform import settings
        from contract_platform.runs import run_file_name

        context = get_current_context()
        since, until = run_range(dict(context), dict(params or {}))
        run = run_file_name(run_id_of(context))
        reports = settings.data_dir() / "reports" / "archive-validation"
        reports.mkdir(parents=True, exist_ok=True)
        return {
            "since": since,
            "until": until,
            "archive": (params or {}).get("archive") or str(settings.archive_dir()),
            "catalog": str(settings.catalog_dir()),
            "report": str(reports / f"{run}.json"),
            "quarantine": str(settings.data_dir() / "quarantine" / run),
        }

    validate = spark_submit(
        task_id="validate_archive",
        job="validate_archive",
        reads=PATHS + "['archive'] }}",
        application_args=[
            PATHS + "['archive'] }}",
            "--catalog",
            PATHS + "['catalog'] }}",
            "--report",
            PATHS + "['report'] }}",
            "--quarantine",
            PATHS + "['quarantine'] }}",
            "--since",
            PATHS + "['since'] }}",
            "--until",
            PATHS + "['until'] }}",
            "--run-id",
            "{{ run_id }}",
            "--no-fail-on-findings",  # findings are evidence first; report_findings turns the run red
        ],
    )

    @task
    @fail_on_bad_input
    def reconcile_lifecycle() -> dict[str, Any]:
        from contract_platform.catalog import load_catalog
        from contract_platform.change import reconcile_catalog

        context = get_current_context()
        with registry() as store:
            return reconcile_catalog(
                load_catalog(), store, actor=actor_of(context), run_id=run_id_of(context)
            ).to_dict()

    @task(retries=0)
    def report_findings(plan: dict[str, str], _reconciled: dict[str, Any]) -> None:
        import json
        from pathlib import Path

        report = json.loads(Path(plan["report"]).read_text(encoding="utf-8"))
        days = f"{plan['since'] or 'the start'} to {plan['until'] or 'now'}"
        fail_if(
            [
                f"{name}: {figures['invalid']} of {figures['records']} records invalid "
                f"(quarantine {plan['quarantine']})"
                for name, figures in report["by_type"].items()
                if figures["invalid"]
            ],
            f"invalid records in the archive from {days}",
        )

    # Wiring: each call passes the XComArg of an upstream task, resolved to the value its parameter declares
    # when the task runs; Airflow's @task types the call with those parameters, hence arg-type ignores here.
    plan = plan_paths(archive_topics())  # type: ignore[arg-type]
    reconciled = reconcile_lifecycle()
    plan >> validate >> reconciled
    report_findings(plan, reconciled)  # type: ignore[arg-type]


topic_archive_validation()

"""
### Housekeeping

Daily: nothing the platform keeps on its own account grows without bound (docs/deploy.md#what-the-platform-keeps).
Each kind is kept for its `CONTRACT_RETENTION_*` setting (defaults in `contract_platform.housekeeping.RETENTIONS`);
archive partitions have their own DAG, `archive_retention`, by each contract's `retention.archive`.

Each task is `contract_platform.housekeeping.run_task` (`contractctl housekeeping` runs the same three, in order;
`--dry-run` says what they would remove):

1. **prune_files** — over the data folder: Great Expectations results and Data Docs pages (each suite's newest run
   stays; the Data Docs index is built again from the runs kept), step logs and Airflow's task logs (its
   `base_log_folder`), per-run reports (each folder's newest stays), quarantined records, the retirement audit's
   timestamped copies (`latest.*` and the newest stay), and the class-data archives of Java/Spark versions this
   machine no longer runs.
2. **prune_evidence** — evidence rows older than `CONTRACT_RETENTION_EVIDENCE`; the latest of each type, kind and
   contract version, and any a status change names, stay. An SQLite store a quarter or more free is compacted
   (`VACUUM`); PostgreSQL's autovacuum reuses the space.
3. **clean_airflow_metadata** — `airflow db clean --clean-before-timestamp <now - CONTRACT_RETENTION_AIRFLOW_METADATA>
   --yes --skip-archive --error-on-cleanup-failure` on the metadata database `CONTRACT_AIRFLOW_DB_URL` names (Airflow
   keeps a task's own `AIRFLOW__DATABASE__SQL_ALCHEMY_CONN` from it); each DAG's latest scheduled run stays. The task
   logs which database it cleaned from which host and how many rows Airflow found past the window; without
   `CONTRACT_AIRFLOW_DB_URL` on the worker it fails saying so (never a silent pass). A failure of the command is
   retried; a bad setting fails every task at once, naming it.

Safe to run twice or at once: what goes is renamed aside before it is deleted, and a second run finds nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pendulum
from airflow.sdk import dag, task

from contract_platform_airflow.runtime import fail_on_bad_input, registry

DEFAULT_ARGS = {"owner": "platform-team", "retries": 3, "retry_delay": timedelta(minutes=5)}


@dag(
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    tags=["platform", "retention"],
    doc_md=__doc__,
)
def housekeeping() -> None:
    @task
    @fail_on_bad_input
    def prune_files() -> list[dict[str, Any]]:
        from airflow.configuration import conf

        from contract_platform import housekeeping as hk

        task_logs = conf.get("logging", "base_log_folder", fallback=None)
        places = hk.Places.configured(airflow_logs=Path(task_logs) if task_logs else None)
        return [p.to_dict() for p in hk.run_task(hk.Task.PRUNE_FILES, places, now=datetime.now(UTC))]

    @task
    @fail_on_bad_input
    def prune_evidence() -> list[dict[str, Any]]:
        from contract_platform import housekeeping as hk

        with registry() as store:
            pruned = hk.run_task(hk.Task.PRUNE_EVIDENCE, hk.Places.configured(), now=datetime.now(UTC), registry=store)
        return [p.to_dict() for p in pruned]

    @task
    def clean_airflow_metadata() -> list[dict[str, Any]]:
        from airflow.sdk.exceptions import AirflowFailException

        from contract_platform import housekeeping as hk
        from contract_platform.errors import UsageError

        try:  # a bad setting fails at once; airflow db clean failing is retried
            pruned = hk.run_task(hk.Task.CLEAN_AIRFLOW_METADATA, hk.Places.configured(), now=datetime.now(UTC))
        except UsageError as exc:
            raise AirflowFailException(str(exc)) from exc
        for p in pruned:
            print(f"{p.kind}: {p.note}; {p.removed if p.removed is not None else 'no'} rows past {p.before:%Y-%m-%d}")
        return [p.to_dict() for p in pruned]

    prune_files()
    prune_evidence()
    clean_airflow_metadata()


housekeeping()

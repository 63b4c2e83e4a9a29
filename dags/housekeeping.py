"""
### Housekeeping

Daily: nothing the platform keeps on its own account grows without bound (docs/deploy.md#what-the-platform-keeps).
Each kind is kept for its `CONTRACT_RETENTION_*` setting (defaults in `contract_platform.housekeeping.RETENTIONS`);
archive partitions have their own DAG, `archive_retention`, by each contract's `retention.archive`.

1. **prune_files** — `contract_platform.housekeeping.housekeep` over the data folder: Great Expectations results
   and Data Docs pages (each suite's newest run stays), step logs and Airflow's task logs (its `base_log_folder`), per-run reports (each folder's newest
   stays), quarantined records, the retirement audit's timestamped copies (`latest.*` and the newest stay), and the
   class-data archives of Java/Spark versions this machine no longer runs.
2. **prune_evidence** — evidence rows older than `CONTRACT_RETENTION_EVIDENCE`; the latest of each type, kind and
   contract version, and any a status change names, stay.
3. **clean_airflow_metadata** — `airflow db clean --clean-before-timestamp <now - CONTRACT_RETENTION_AIRFLOW_METADATA>
   --yes --skip-archive --error-on-cleanup-failure` on the metadata database `CONTRACT_AIRFLOW_DB_URL` names (Airflow
   keeps a task's own `AIRFLOW__DATABASE__SQL_ALCHEMY_CONN` from it); each DAG's latest scheduled run stays. A failure
   is retried.

Safe to run twice or at once: what goes is renamed aside before it is deleted, and a second run finds nothing.
"""

from __future__ import annotations

from datetime import timedelta
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
        from datetime import UTC, datetime
        from pathlib import Path

        from airflow.configuration import conf

        from contract_platform import jvm, settings
        from contract_platform.housekeeping import housekeep

        folder = jvm.class_cache_folder()
        current = jvm.class_archive(write=False)
        task_logs = conf.get("logging", "base_log_folder", fallback=None)
        pruned = housekeep(
            settings.data_dir(), now=datetime.now(UTC), docs=settings.docs_dir(),
            airflow_logs=Path(task_logs) if task_logs else None,
            class_cache=Path(folder) if folder else None, current_class_archive=current.path if current else None,
        )  # fmt: skip
        return [p.to_dict() for p in pruned]

    @task
    @fail_on_bad_input
    def prune_evidence() -> dict[str, Any]:
        from datetime import UTC, datetime

        from contract_platform import housekeeping as hk

        with registry() as store:
            return hk.prune_evidence(store, now=datetime.now(UTC), keep=hk.retention(hk.Kind.EVIDENCE)).to_dict()

    @task
    def clean_airflow_metadata() -> dict[str, Any]:
        from datetime import UTC, datetime

        from contract_platform import housekeeping as hk

        keep = hk.retention(hk.Kind.AIRFLOW_METADATA)
        return hk.clean_airflow_metadata(now=datetime.now(UTC), keep=keep).to_dict()

    prune_files()
    prune_evidence()
    clean_airflow_metadata()


housekeeping()

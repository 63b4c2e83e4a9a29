"""
### Archive retention

Daily: the topic archive keeps each contract's messages for its `retention.archive`, and no longer
(docs/design.md#retention).

1. **apply_retention** — `contract_platform.retention.apply_archive_retention`, the function
   `contractctl retention apply` runs: every `<archive>/<exchange>/date=D/` partition whose whole day is past
   the longest `retention.archive` of the contracts on its exchange is deleted, unless a hold on one of them
   is in force (a catalogue `holds:` entry, or an investigation hold set with `contractctl retention hold`).
   Each deletion records `archive_retention` evidence (partitions, files, records, bytes; never contents)
   for every version the exchange carries; the Contracts page shows it, and the holds.

Safe to run twice or at once (two Celery workers sharing the archive volume): a run holds the archive's
retention lock, and a run that finds it taken does nothing and succeeds. A catalogue that does not load
fails the task without retry; a registry outage fails it and Airflow retries it (nothing is deleted
without its evidence: a partition already moved aside is recorded and removed by the retry).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import get_current_context, task

from contract_platform_airflow.dags import platform_dag
from contract_platform_airflow.runtime import fail_on_bad_input, registry, run_id_of


@platform_dag(
    __doc__,
    schedule="@daily",
    tags=["retention"],
    retries=3,
    retry_delay=timedelta(minutes=2),
)
def archive_retention() -> None:
    @task
    @fail_on_bad_input
    def apply_retention() -> dict[str, Any]:
        from datetime import UTC, datetime

        from contract_platform import settings
        from contract_platform.catalog import load_catalog
        from contract_platform.retention import (
            apply_archive_retention,
            holds_file,
            holds_in_force,
            read_investigation_holds,
        )

        catalog, now = load_catalog(), datetime.now(UTC)
        holds = holds_in_force(catalog, read_investigation_holds(holds_file()), now.date())
        with registry() as store:
            run = apply_archive_retention(
                catalog, settings.archive_dir(), now=now, holds=holds, registry=store,
                run_id=run_id_of(get_current_context()),
            )  # fmt: skip
        return {
            "busy": run.busy,
            "deleted": [p.to_dict() for p in run.deleted],
            "held": [d.to_dict() for d in run.decisions if d.action == "held"],
        }

    apply_retention()


archive_retention()

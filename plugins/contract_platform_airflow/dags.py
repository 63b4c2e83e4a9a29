"""What every platform DAG shares, said once: ``@platform_dag(__doc__, ...)`` in place of ``@dag(...)``.

Each DAG file keeps what is its own (schedule, tags, retries, params); the rest is the same everywhere:
the owner, a start date in the past with no catch-up, one run at a time, and the module docstring as the
DAG's docs (docs/design.md#dags).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

import pendulum
from airflow.sdk import dag

__all__ = ["platform_dag"]


def platform_dag(
    doc: str | None,
    *,
    schedule: Any,
    tags: list[str],
    retries: int,
    retry_delay: timedelta,
    params: Mapping[str, Any] | None = None,
) -> Callable[[Callable[[], None]], Any]:
    """``@dag`` with the platform's settings; ``tags`` come after "contracts"."""
    return dag(
        schedule=schedule,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,  # one run at a time: one bridge per migration, one pass over an archive window
        default_args={"owner": "platform-team", "retries": retries, "retry_delay": retry_delay},
        tags=["contracts", *tags],
        doc_md=doc,
        params=dict(params or {}),
    )

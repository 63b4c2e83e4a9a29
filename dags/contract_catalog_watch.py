"""
### Contract catalogue watch

Every five minutes, fingerprints each contract version folder under `contracts/` and compares it
with the fingerprint the registry store last saw. For **each changed contract version** it emits
one event on the `contract_catalog` asset (extra: `messageType`, `fingerprint`), which triggers
the `contract_change` DAG. Nothing changed, nothing emitted.
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import dag, get_current_context, task

from contract_platform_airflow.assets import CONTRACT_CATALOG
from contract_platform_airflow.runtime import catalog_root, fail_on_bad_input, registry

DEFAULT_ARGS = {"owner": "platform-team", "retries": 2, "retry_delay": timedelta(seconds=30)}


@dag(
    schedule="*/5 * * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    tags=["contracts", "lifecycle"],
    doc_md=__doc__,
)
def contract_catalog_watch() -> None:
    @task
    @fail_on_bad_input
    def find_changed_contracts() -> list[dict[str, str]]:
        from contract_platform.change import changed_contracts

        with registry() as store:
            return changed_contracts(catalog_root(), store)

    @task(outlets=[CONTRACT_CATALOG], map_index_template="{{ contract_label }}")
    @fail_on_bad_input
    def emit_change(change: dict[str, str], outlet_events=None) -> str:  # type: ignore[no-untyped-def]
        get_current_context()["contract_label"] = change["messageType"]  # type: ignore[typeddict-unknown-key]
        outlet_events[CONTRACT_CATALOG].extra = change
        with registry() as store:
            store.set_fingerprint(change["messageType"], change["fingerprint"])
        return change["messageType"]

    emit_change.expand(change=find_changed_contracts())


contract_catalog_watch()

"""
### Contract catalogue watch

Every five minutes, fingerprints each contract version folder under `contracts/` and compares it
with the fingerprint the registry store last saw. The changed versions go out in **batches**: one
event on the `contract_catalog` asset per run up to 2,500 changed versions, at most eight events
beyond (each naming more), so a first import of thousands of versions costs three task instances. An event's extra is `messageTypes` and `count` (and `messageType`, `fingerprint` when it
names one version); the events trigger the `contract_change` DAG. Nothing changed, nothing emitted.

1. **find_changed_contracts** — the changed versions, in batches.
2. **emit_changes** — one asset event per batch (a mapped task: one instance per batch).
3. **record_fingerprints** — once every event is emitted, the new fingerprints are stored: a run that
   fails before that emits the same change again next time, never loses it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import get_current_context, task

from contract_platform_airflow.assets import CONTRACT_CATALOG
from contract_platform_airflow.dags import platform_dag
from contract_platform_airflow.runtime import fail_on_bad_input, registry


@platform_dag(
    __doc__,
    schedule="*/5 * * * *",
    tags=["lifecycle"],
    retries=2,
    retry_delay=timedelta(seconds=30),
)
def contract_catalog_watch() -> None:
    @task
    @fail_on_bad_input
    def find_changed_contracts() -> list[dict[str, Any]]:
        from contract_platform import settings
        from contract_platform.change import change_batches, changed_contracts

        with registry() as store:
            return change_batches(changed_contracts(settings.catalog_dir(), store))

    @task(outlets=[CONTRACT_CATALOG], map_index_template="{{ batch_label }}")
    @fail_on_bad_input
    def emit_changes(batch: dict[str, Any]) -> int:
        from contract_platform.change import event_extra

        types = batch["messageTypes"]
        label = types[0] if len(types) == 1 else f"{types[0]} .. {types[-1]} ({len(types)})"
        context = get_current_context()
        context["batch_label"] = label  # type: ignore[typeddict-unknown-key]
        context["outlet_events"][CONTRACT_CATALOG].extra = event_extra(batch)
        return len(types)

    @task
    @fail_on_bad_input
    def record_fingerprints(batches: list[dict[str, Any]]) -> int:
        with registry() as store:
            for batch in batches:
                for message_type, fingerprint in batch["fingerprints"].items():
                    store.set_fingerprint(message_type, fingerprint)
        return sum(len(batch["fingerprints"]) for batch in batches)

    # Wiring: each call passes the XComArg of an upstream task, resolved to the value its parameter declares
    # when the task runs; Airflow's @task types the call with those parameters, hence arg-type ignores here.
    batches = find_changed_contracts()
    emit_changes.expand(batch=batches) >> record_fingerprints(batches)  # type: ignore[arg-type]


contract_catalog_watch()

"""
### Retirement audit

Daily evidence for every deprecated contract version, and retirement where it is declared and proven
(docs/design.md#lifecycle-and-guards, docs/design.md#retirement-audit).

1. **check_management_api** — the broker's management API must answer (the audit reads every queue,
   binding, policy, consumer and delivery counter through it) and RabbitMQ's event exchange must be on
   (the broker activity recorder stores every reader from it). Fails at once, without retry, with the
   command that enables what is missing (`rabbitmq-plugins enable rabbitmq_management`,
   `rabbitmq-plugins enable rabbitmq_event_exchange`), as `contractctl audit` says.
2. **locate_inputs** — the catalogue must load (no retry otherwise: fix the files and push again);
   says where the topic archive and the last-seen file are.
3. **find_last_seen** (Spark, `spark_jobs/archive_last_seen.py` on `spark_default`) — when each
   messageType was last archived, into `<data>/retirement/last-seen.json`.
4. **list_deprecated** — every catalogue version whose effective status is *deprecated* (whether it
   declares `deprecated` or already `retired`).
5. **audit_versions** (one task for every version, one after the other, over one read of the broker's
   topology shared by them: `retirement.audit_versions`; each DLQ is read once per run) — queues (the version's own and every queue its
   exchange routes to, whoever declared it), readers over the whole observation span (reader sessions
   stored by `contractctl record-activity`, its coverage gaps, each queue's delivery counters between
   audits), dead letters (every DLQ found by
   dead-letter topology, policies or naming convention, read and requeued in order), retention,
   holds, successor consumers. Writes
   `<docs>/retirement/<messageType>/latest.md` (and `.json`) and records `retirement_audit` evidence.
   Blockers are recorded with when each might clear; they do not fail the task. A version that could
   not be audited (bad input) fails the task after the others were audited and recorded.
6. **retire_where_proven** (mapped) — a version declared `retired` whose audit passed and is fresh
   moves to *retired* through the lifecycle guards (a refusal is recorded with its reasons); its
   retirement bundle is kept under `<data>/retirement-bundles/<messageType>/` and, with
   `topology.removeOnRetire`, its queues are removed (exchanges other contracts use stay).

The audit searches the connection's virtual host and those in `CONTRACT_RABBITMQ_VHOSTS`; the DLQ
naming net is `CONTRACT_DEAD_LETTER_SUFFIXES` (see `docs/retirement-audit.md`).
A broker or registry outage fails the task and Airflow retries it. **Trigger by hand** with
*dead_letter_prefix* to scan only the DLQs and parking lots whose names start with it (a virtual
host shared with others); empty scans every one on the broker.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from airflow.sdk import Param, get_current_context, task

from contract_platform_airflow.dags import platform_dag
from contract_platform_airflow.runtime import (
    actor_of,
    broker,
    fail_on_bad_input,
    registry,
    run_id_of,
)
from contract_platform_airflow.spark import spark_submit

INPUTS = "ti.xcom_pull(task_ids='locate_inputs')"


@platform_dag(
    __doc__,
    schedule="@daily",
    tags=["lifecycle", "retirement"],
    retries=3,
    retry_delay=timedelta(minutes=2),
    params={
        "dead_letter_prefix": Param(
            "",
            type="string",
            title="Dead-letter scope",
            description="scan only DLQs and parking lots whose names start with this; empty: all of them",
        ),
    },
)
def retirement_audit() -> None:
    @task(retries=0)
    def check_management_api() -> str:
        from airflow.sdk.exceptions import AirflowFailException

        from contract_platform.amqp.management import management_client_for_url, require_management
        from contract_platform.errors import EventExchangeUnavailable, ManagementUnavailable
        from contract_platform_airflow.hooks.rabbitmq import RabbitMQHook

        try:
            client = management_client_for_url(RabbitMQHook().get_url())
            return require_management(client, event_exchange=True).base_url
        except (ManagementUnavailable, EventExchangeUnavailable) as exc:
            raise AirflowFailException(str(exc)) from exc

    @task(retries=0)
    @fail_on_bad_input
    def locate_inputs() -> dict[str, str]:
        from contract_platform import settings
        from contract_platform.catalog import load_catalog

        catalog = load_catalog()  # fail before Spark starts when the catalogue does not load
        return {
            "catalog": str(catalog.root),
            "archive": str(settings.archive_dir()),
            "lastSeen": str(settings.data_dir() / "retirement" / "last-seen.json"),
        }

    find_last_seen = spark_submit(
        task_id="find_last_seen",
        job="archive_last_seen",
        reads=f"{{{{ {INPUTS}['archive'] }}}}",
        application_args=[f"{{{{ {INPUTS}['archive'] }}}}", "--out", f"{{{{ {INPUTS}['lastSeen'] }}}}"],
    )

    @task
    @fail_on_bad_input
    def list_deprecated() -> list[str]:
        from contract_platform.catalog import load_catalog
        from contract_platform.retirement import versions_to_audit

        with registry() as store:
            return versions_to_audit(load_catalog(), store)

    # One task audits every version, one after the other, over one read of the broker's topology (a snapshot
    # shared by the versions: at 60,000 queues a read takes tens of seconds) and reads each DLQ once. One at a
    # time also because two dead-letter scans of the same queue would each hold back (unacked) what the other
    # needs to see.
    @task
    @fail_on_bad_input
    def audit_versions(
        message_types: list[str], inputs: dict[str, str], params: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        import logging

        from contract_platform import settings
        from contract_platform.catalog import load_catalog
        from contract_platform.retirement import LastSeen, audit_versions, keep_audit

        context = get_current_context()
        catalog = load_catalog()
        contracts = [catalog.get(message_type) for message_type in message_types]
        missing = [name for name, contract in zip(message_types, contracts, strict=True) if contract is None]
        last_seen = LastSeen.read(inputs["lastSeen"])
        scope = str((params or {}).get("dead_letter_prefix") or "")
        audited: list[dict[str, Any]] = []
        with registry() as store, broker() as connection:

            def keep(result: Any) -> None:
                kept = keep_audit(result, store, settings.docs_dir())
                audited.append(
                    {
                        "messageType": result.message_type,
                        "verdict": str(result.verdict),
                        "failed_checks": result.failed_checks,
                        "blockers": result.figures()["blockers"],
                        "evidenceId": kept.evidence.id,
                        "report": str(kept.paths.markdown),
                    }
                )

            run = audit_versions(
                [contract for contract in contracts if contract is not None],
                catalog,
                store,
                connection,
                last_seen,
                run_id=run_id_of(context),
                dead_letter_scope=scope,
                on_result=keep,
            )
        logging.getLogger(__name__).info("retirement audit run: %s", run.figures())
        failures = run.failures | {name: "no longer in the catalogue" for name in missing}
        if failures:
            from contract_platform.errors import UsageError

            listed = "; ".join(f"{name}: {why}" for name, why in failures.items())
            raise UsageError(f"{len(failures)} of {len(message_types)} versions could not be audited: {listed}")
        return audited

    @task(map_index_template="{{ contract_label }}")
    @fail_on_bad_input
    def retire_where_proven(audited: dict[str, Any]) -> dict[str, Any]:
        from datetime import UTC, datetime

        from contract_platform.catalog import load_catalog
        from contract_platform.retirement import retire_if_proven

        context = get_current_context()
        context["contract_label"] = audited["messageType"]  # type: ignore[typeddict-unknown-key]
        catalog = load_catalog()
        contract = catalog.require(audited["messageType"], "it is no longer there: it cannot be audited or retired")
        with registry() as store, broker() as connection:
            outcome = retire_if_proven(
                contract,
                catalog,
                store,
                connection,
                actor=actor_of(context),
                run_id=run_id_of(context),
                now=datetime.now(UTC),
            )
        return outcome.to_dict()

    inputs = locate_inputs()
    versions = list_deprecated()
    check_management_api() >> inputs >> find_last_seen >> versions
    audits = audit_versions(versions, inputs)  # type: ignore[arg-type]
    retire_where_proven.expand(audited=audits)


retirement_audit()

"""
### Contract change

Runs when contracts change (events on the `contract_catalog` asset, emitted by
`contract_catalog_watch` in batches of changed versions) and on demand from the trigger form. Events
that arrive while a run is busy are consumed together by the next run (one run at a time).

**Scope.** A run started by asset events checks what they name: the changed versions, the other majors
of their families and the versions they supersede (`contract_platform.change.affected_contracts`), plus
any version the registry has not seen yet (an event consumed late never leaves one unchecked).
A run triggered by hand, or by an event that does not name its versions, covers the whole catalogue.
The catalogue is always loaded whole, so a change that breaks another file still fails the run.

1. **load_catalog** — the catalogue must load; otherwise the run fails, listing every problem
   with file and JSON pointer (no retry: fix the files and push again).
2. **lint_contracts** — every lint rule; `lint` and `fixtures` evidence per contract.
3. **check_compatibility** — each version against the earlier versions of its major the
   registry has seen, under the contract's mode and policy; new majors are checked through
   their `migration.yaml`. The evidence names each consumer a change breaks, with its owner and
   contact; a contract with `compatibility: {perspective: readers}` may pass a break that no declared
   reader reads, judged from the broker's readers (docs/consumer-impact.md).
4. **replay_traffic** — the Spark job (`spark_jobs/replay.py`, submitted on `spark_default`): archived
   messages of each changed version's window (and those still in its queues) checked against it with
   the archive validation's record engine; `replay` evidence per version. It can refuse a change the
   engine calls compatible, or accept a narrowing on evidence when the contract opts in
   (docs/replay.md). **plan_replay** names the report file; **report_replay** reads it.
5. **provision_topology** — exchange, consumer queues, DLX/DLQ, parking lot, retry queues and
   the archive queue for every version from *experimental* on, four versions at a time on
   connections of their own. Conflicts are reported, never deleted. A broker that is down is retried.
6. **reconcile_lifecycle** — moves each effective status toward the declared one, one guarded
   step at a time; refused steps are recorded with their reasons.
7. **write_docs** — one Markdown page per contract.
8. **report_problems** — ends the run red when any check found something to fix.

**Trigger by hand** with *contract* and *target_status* to request one guarded step for one
contract (with a *reason*, kept in the history). Leave them empty to reconcile everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from airflow.sdk import Param, get_current_context, task

from contract_platform_airflow.assets import CONTRACT_CATALOG
from contract_platform_airflow.dags import platform_dag
from contract_platform_airflow.runtime import (
    actor_of,
    broker,
    fail_if,
    fail_on_bad_input,
    registry,
    run_id_of,
    run_type_of,
)
from contract_platform_airflow.spark import spark_submit

REPLAY = "{{ ti.xcom_pull(task_ids='plan_replay')"
STATUSES = ["", "experimental", "active", "superseded", "deprecated", "retired"]
# Versions whose topology is declared at once, each on a connection of its own (an estate's first import
# declares ten queues per version; benchmarks/README.md "Estate scale: first import in Airflow").
PROVISIONING_CONNECTIONS = 4


def change_scope(catalog: Any, context: Any) -> set[str] | None:
    """What this run checks: the versions its triggering asset events name and those they reach, or None
    (everything) for a run triggered by hand or by an event that does not name its versions."""
    from contract_platform.change import affected_contracts, scope_of_events, unseen_contracts

    if run_type_of(context) != "asset_triggered":
        return None
    events = [event for found in context.get("triggering_asset_events", {}).values() for event in found]
    named = scope_of_events(event.extra for event in events)
    if named is None:
        return None
    with registry() as store:
        return affected_contracts(catalog, named) | unseen_contracts(catalog, store)


@platform_dag(
    __doc__,
    schedule=[CONTRACT_CATALOG],
    tags=["lifecycle"],
    retries=3,
    retry_delay=timedelta(seconds=20),
    params={
        "contract": Param(
            "", type="string", title="Contract", description="messageType, e.g. billing.invoice-issued.v1; empty: all"
        ),
        "target_status": Param(
            "",
            type="string",
            enum=STATUSES,
            title="Target status",
            description="one guarded step; empty: reconcile to the declared status",
        ),
        "reason": Param("", type="string", title="Reason", description="why; kept in the append-only history"),
    },
)
def contract_change() -> None:
    @task(retries=0)
    @fail_on_bad_input
    def load_catalog(params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        from contract_platform.catalog import load_catalog  # the domain's loader; this task bears its name

        catalog = load_catalog()
        contract = (params or {}).get("contract") or ""
        if contract and contract not in catalog:  # fail before anything is provisioned
            fail_if([f"{contract!r} is not a messageType of the catalogue"], "the trigger's parameters are wrong")
        scope = change_scope(catalog, get_current_context())
        return {
            "contracts": sorted(c.message_type for c in catalog),
            "root": str(catalog.root),
            "scope": sorted(scope) if scope is not None else None,
        }

    @task(retries=0)
    @fail_on_bad_input
    def lint_contracts(loaded: dict[str, Any]) -> dict[str, Any]:
        from contract_platform.catalog import load_catalog
        from contract_platform.change import lint_contracts as lint

        with registry() as store:
            return lint(load_catalog(), store, run_id=run_id_of(get_current_context()), only=loaded["scope"]).to_dict()

    @task(retries=0)
    @fail_on_bad_input
    def check_compatibility(loaded: dict[str, Any]) -> dict[str, Any]:
        from contract_platform.catalog import load_catalog
        from contract_platform.change import check_compatibility as check
        from contract_platform.retirement.readers_seen import ReadersSource
        from contract_platform_airflow.hooks.rabbitmq import RabbitMQHook

        # The readers perspective (docs/consumer-impact.md) reads the broker only for a contract that asks for it
        with registry() as store, ReadersSource(store, RabbitMQHook().get_conn) as readers:
            return check(
                load_catalog(),
                store,
                run_id=run_id_of(get_current_context()),
                only=loaded["scope"],
                readers=readers,
            ).to_dict()

    @task(retries=0)
    @fail_on_bad_input
    def plan_replay(_compat: dict[str, Any]) -> dict[str, str]:
        from contract_platform import settings
        from contract_platform.runs import run_file_name

        run = run_file_name(run_id_of(get_current_context()))
        reports = settings.data_dir() / "reports" / "replay"
        reports.mkdir(parents=True, exist_ok=True)
        settings.archive_dir().mkdir(parents=True, exist_ok=True)  # nothing archived yet: replay finds no traffic
        return {
            "archive": str(settings.archive_dir()),
            "catalog": str(settings.catalog_dir()),
            "report": str(reports / f"{run}.json"),
        }

    replay_traffic = spark_submit(
        task_id="replay_traffic",
        job="replay",
        reads=REPLAY + "['archive'] }}",
        application_args=[
            REPLAY + "['archive'] }}",
            "--catalog",
            REPLAY + "['catalog'] }}",
            "--report",
            REPLAY + "['report'] }}",
            "--run-id",
            "{{ run_id }}",
            "--no-fail-on-findings",  # a refusal is evidence first; report_problems turns the run red
        ],
        with_broker=True,  # messages in flight are read through rabbitmq_default, as users set it
    )

    @task(retries=0)
    def report_replay(plan: dict[str, str]) -> dict[str, Any]:
        import json
        from pathlib import Path

        from contract_platform.replay.run import replay_summary

        return replay_summary(json.loads(Path(plan["report"]).read_text(encoding="utf-8")))

    @task
    @fail_on_bad_input
    def provision_topology(loaded: dict[str, Any]) -> dict[str, Any]:
        from contract_platform.catalog import load_catalog
        from contract_platform.change import provision_topologies
        from contract_platform_airflow.hooks.rabbitmq import RabbitMQHook

        with registry() as store, broker() as connection:
            return provision_topologies(
                load_catalog(),
                connection,
                store,
                run_id=run_id_of(get_current_context()),
                only=loaded["scope"],
                connect=RabbitMQHook().get_conn,
                workers=PROVISIONING_CONNECTIONS,
            ).to_dict()

    @task
    @fail_on_bad_input
    def reconcile_lifecycle(
        loaded: dict[str, Any], *_checks: dict[str, Any], params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        from contract_platform.catalog import load_catalog
        from contract_platform.change import reconcile_or_request

        context, given = get_current_context(), params or {}
        with registry() as store:
            return reconcile_or_request(
                load_catalog(),
                store,
                actor=actor_of(context),
                run_id=run_id_of(context),
                contract=given.get("contract") or None,
                target_status=given.get("target_status") or None,
                reason=given.get("reason") or None,
                only=loaded["scope"],
            )

    @task(retries=0)
    @fail_on_bad_input
    def write_docs(_reconciled: dict[str, Any]) -> dict[str, Any]:
        from contract_platform import settings
        from contract_platform.catalog import load_catalog
        from contract_platform.docs import write_docs as write

        target = settings.docs_dir() / "contracts"
        return {"out": str(target), "pages": len(write(load_catalog(), target))}

    @task(retries=0)
    def report_problems(*summaries: dict[str, Any]) -> None:
        from contract_platform.replay.run import problems_after_replay

        fail_if(problems_after_replay(summaries), "the contract change has problems to fix")

    # Wiring: each call passes the XComArg of an upstream task, resolved to the value its parameter declares
    # when the task runs; Airflow's @task types the call with those parameters, hence arg-type ignores here.
    loaded = load_catalog()
    linted = lint_contracts(loaded)  # type: ignore[arg-type]
    compat = check_compatibility(loaded)  # type: ignore[arg-type]
    replay_plan = plan_replay(compat)  # type: ignore[arg-type]
    replayed = report_replay(replay_plan)  # type: ignore[arg-type]
    replay_plan >> replay_traffic >> replayed
    topology = provision_topology(loaded)  # type: ignore[arg-type]
    reconciled = reconcile_lifecycle(loaded, linted, compat, replayed, topology)  # type: ignore[arg-type]
    write_docs(reconciled) >> report_problems(linted, compat, replayed, topology)  # type: ignore[arg-type]


contract_change()

"""
### Dual-publish migration

Moves the traffic of one message from v<N-1> to v<N> (docs/design.md#lifecycle-and-guards, docs/design.md#migration-parity): every v1 message must
also exist as v2, migrated as `migration.yaml` says, before v1 is superseded and deprecated.

1. **resolve_migration** — the catalogue loads and the migration spec is checked against every v1
   fixture (no retry otherwise: fix the files and push again).
   **migration_open** — when v1 is retired in the registry the migration is finished: this run does
   nothing more (every later task is skipped, the run succeeds, no parity is recorded) and the task's
   log says why. A v1 message published after the retirement is an alarm of its own: archive
   validation's `RETIRED_TYPE`, recorded as `retired_traffic` evidence on v1 (producer, count, when).
2. **provision_target** — the v2 topology (exchange, consumer queues, DLX/DLQ, parking lots, archive
   queue); in bridge mode also the bridge's tap queue `bridge.<v1 type>` (and its parking lot) on the
   v1 routing key, so every v1 message from now on is kept for the bridge.
3. **choose_path** — *bridge* runs **run_bridge**; *dual-publish* (producers publish both versions,
   with the same messageId) runs **verify_dual_publish** instead.
   - **run_bridge** — one bounded, checkpointing run of the platform's bridge (drain mode, at most
     *bridge_seconds*): a v1 delivery is acknowledged only after its v2 message (or its parked copy) was
     confirmed, so every acknowledged message is done, and the next run continues where this one
     stopped. Nothing holds a worker slot forever: **the schedule (every 30 minutes) or a re-trigger
     keeps the migration going**; for a continuous bridge run `contractctl bridge MIGRATION --follow`
     as a service instead. Messages the spec cannot migrate go to `bridge.<v1 type>.parking-lot`.
   - **verify_dual_publish** — v2 messages are arriving on the v2 consumer queues (a warning, not a
     failure, when none are: parity will show them missing).
4. **archive_exchanges** — drains the archive queues of both exchanges into the topic archive.
5. **check_parity** (Spark, `spark_jobs/dual_publish_parity.py` on `spark_default`) — v1 archive against
   v2 archive since *parity_since*: missing, extra, duplicates, content, order per key, lag. Records
   `migration_parity` evidence on v1; findings do not fail the task, the evidence says them.
6. **track_cutover** — consumers and ready messages of every consumer queue of v1 and v2, recorded as
   observations on each run: the cutover as a time series (`contractctl migration status`).
7. **reconcile_predecessor** — moves v1 toward its declared status, one guarded step at a time:
   *superseded* needs v2 active and this migration running; *deprecated* needs `sunset` and parity that
   holds. A refused step is recorded with its reasons (see `contractctl status`).

**Rollback.** Pause this DAG (or stop `contractctl bridge --follow`): the bridge stops, v1 producers,
consumers and queues were never touched, and v2 consumers simply receive nothing more. Messages
already bridged stay on v2 (same messageIds: consumers that deduplicate are safe). When the migration
is abandoned, delete the tap queue `bridge.<v1 type>` and its parking lot, or v1 messages pile up there.

**Trigger by hand** with *migration* (the target messageType), *mode*, *bridge_seconds*, *tap_queue*
(empty: `bridge.<v1 type>`) and *parity_since* (ISO 8601; empty: the whole archive — set it to when the
bridge or the dual publishing started, or older v1 messages count as missing).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from airflow.sdk import Param, TriggerRule, get_current_context, task

from contract_platform_airflow.dags import platform_dag
from contract_platform_airflow.runtime import (
    actor_of,
    broker,
    fail_if,
    fail_on_bad_input,
    registry,
    run_id_of,
)
from contract_platform_airflow.spark import spark_submit

MODES = ["bridge", "dual-publish"]  # contract_platform.migration.plan.MODES, without importing the domain to parse
PLAN = "ti.xcom_pull(task_ids='resolve_migration')"
AFTER_EITHER_PATH = TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS


def _route(target: str) -> Any:
    from contract_platform.bridge.translation import resolve_route
    from contract_platform.catalog import load_catalog

    catalog = load_catalog()
    return catalog, resolve_route(catalog, target)


def _amqp_url() -> str:
    from contract_platform_airflow.hooks.rabbitmq import RabbitMQHook

    return RabbitMQHook().get_url()


@platform_dag(
    __doc__,
    schedule=timedelta(minutes=30),
    tags=["lifecycle", "migration"],
    retries=3,
    retry_delay=timedelta(minutes=1),
    params={
        "migration": Param(
            "billing.invoice-issued.v2",
            type="string",
            title="Migration",
            description="the target messageType (the contract that holds migration.yaml)",
        ),
        "mode": Param("bridge", type="string", enum=MODES, title="Mode", description="bridge or dual-publish"),
        "bridge_seconds": Param(
            300, type="integer", minimum=1, title="Bridge seconds", description="the most one bridge run may take"
        ),
        "tap_queue": Param("", type="string", title="Tap queue", description="empty: bridge.<v1 messageType>"),
        "parity_since": Param(
            "", type="string", title="Parity since", description="ISO 8601 start of the parity window; empty: all"
        ),
    },
)
def dual_publish_migration() -> None:
    @task(retries=0)
    @fail_on_bad_input
    def resolve_migration(params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        from contract_platform.migration.plan import plan_migration

        given = params or {}
        catalog, route = _route(str(given.get("migration") or ""))
        with registry() as store:
            source_state = store.effective(route.source.message_type)
        plan = plan_migration(
            catalog,
            route.source,
            route.target,
            mode=given.get("mode"),
            parity_since=given.get("parity_since"),
            tap_queue=given.get("tap_queue"),
            run_id=run_id_of(get_current_context()),
            source_state=source_state,
        )
        return plan.to_dict()

    @task.short_circuit(retries=0)
    def migration_open(planned: dict[str, Any]) -> bool:
        import logging

        from contract_platform.migration.plan import MigrationPlan

        plan = MigrationPlan.from_dict(planned)
        if not plan.proceeds:
            logging.getLogger(__name__).warning("nothing to migrate: %s", plan.skipped)
        return plan.proceeds

    @task
    @fail_on_bad_input
    def provision_target(planned: dict[str, Any]) -> dict[str, Any]:
        from contract_platform.bridge import prepare_tap
        from contract_platform.change import provision_topologies
        from contract_platform.errors import UsageError
        from contract_platform.migration.plan import MigrationPlan

        plan = MigrationPlan.from_dict(planned)
        catalog, route = _route(plan.target)
        with registry() as store, broker() as connection:
            summary = provision_topologies(
                catalog, connection, store, run_id=run_id_of(get_current_context()), only=[plan.target]
            )
            if plan.target not in summary.results:
                raise UsageError(
                    f"{plan.target} is declared {route.target.status}: its topology exists from experimental on; "
                    "declare it experimental or active first (contract_change DAG)"
                )
            fail_if(summary.problems, "the target topology conflicts with what the broker holds")
            if plan.bridged:
                prepare_tap(connection, route, plan.tap_queue)
        return summary.to_dict() | {"tapQueue": plan.tap_queue if plan.bridged else None}

    @task.branch(retries=0)
    def choose_path(planned: dict[str, Any]) -> str:
        from contract_platform.migration.plan import MigrationPlan

        return "run_bridge" if MigrationPlan.from_dict(planned).bridged else "verify_dual_publish"

    @task
    @fail_on_bad_input
    def run_bridge(planned: dict[str, Any], params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        from contract_platform.bridge import Bridge, BridgeConfig, Mode
        from contract_platform.migration.plan import MigrationPlan

        plan = MigrationPlan.from_dict(planned)
        catalog, route = _route(plan.target)
        seconds = float((params or {}).get("bridge_seconds") or 300)
        config = BridgeConfig(mode=Mode.DRAIN, url=_amqp_url(), tap_queue=plan.tap_queue, max_seconds=seconds)
        return Bridge(catalog, route, config).run().as_dict()

    @task
    @fail_on_bad_input
    def verify_dual_publish(plan: dict[str, Any]) -> dict[str, Any]:
        import logging

        from contract_platform.amqp.http import ManagementClient
        from contract_platform.amqp.inspection import inspect_queue
        from contract_platform.migration.cutover import consumer_queues

        catalog, route = _route(plan["target"])
        queues: dict[str, dict[str, Any]] = {}
        with broker() as connection:
            client = ManagementClient.for_connection(connection)
            for name in consumer_queues(route.target):
                state = inspect_queue(connection, name, management=client)
                stats = (client.queue(name) or {}).get("message_stats", {}) if client is not None else {}
                queues[name] = {"ready": state.ready, "unacked": state.unacked, "published": stats.get("publish")}
        arriving = any(q["ready"] or q["unacked"] or q["published"] for q in queues.values())
        if not arriving:
            logging.getLogger(__name__).warning(
                "no %s message has reached %s: is the producer publishing both versions?", plan["target"], list(queues)
            )
        return {"arriving": arriving, "queues": queues}

    @task(trigger_rule=AFTER_EITHER_PATH)
    @fail_on_bad_input
    def archive_exchanges(planned: dict[str, Any]) -> dict[str, Any]:
        from pathlib import Path

        from contract_platform.archiver import Archiver, ArchiverConfig
        from contract_platform.migration.plan import MigrationPlan

        plan = MigrationPlan.from_dict(planned)
        root = Path(plan.archive)
        root.mkdir(parents=True, exist_ok=True)  # the platform's own archive: empty until traffic flows
        config = ArchiverConfig(root=root, exchanges=plan.exchanges)
        return Archiver(_amqp_url(), config).run("drain").as_dict()

    check_parity = spark_submit(
        task_id="check_parity",
        job="dual_publish_parity",
        reads=f"{{{{ {PLAN}['archive'] }}}}",
        application_args=[
            f"{{{{ {PLAN}['source'] }}}}",
            "--archive",
            f"{{{{ {PLAN}['archive'] }}}}",
            "--catalog",
            f"{{{{ {PLAN}['catalog'] }}}}",
            "--mode",
            f"{{{{ {PLAN}['mode'] }}}}",
            "--report",
            f"{{{{ {PLAN}['report'] }}}}",
            f"--since={{{{ {PLAN}['since'] }}}}",
            "--run-id",
            "{{ run_id }}",
            "--no-fail-on-findings",
        ],
    )

    @task(trigger_rule=AFTER_EITHER_PATH)
    @fail_on_bad_input
    def track_cutover(planned: dict[str, Any]) -> dict[str, Any]:
        from datetime import UTC, datetime

        from contract_platform.migration.cutover import observe_cutover
        from contract_platform.migration.plan import MigrationPlan

        _, route = _route(MigrationPlan.from_dict(planned).target)
        with registry() as store, broker() as connection:
            return observe_cutover(
                connection,
                store,
                [route.source, route.target],
                run_id=run_id_of(get_current_context()),
                now=datetime.now(UTC),
            )

    @task
    @fail_on_bad_input
    def reconcile_predecessor(planned: dict[str, Any], _cutover: dict[str, Any]) -> dict[str, Any]:
        from contract_platform.catalog import load_catalog
        from contract_platform.change import reconcile_catalog
        from contract_platform.migration.plan import MigrationPlan

        plan = MigrationPlan.from_dict(planned)
        context = get_current_context()
        with registry() as store:
            summary = reconcile_catalog(
                load_catalog(), store, actor=actor_of(context), run_id=run_id_of(context), only=[plan.source]
            )
        return summary.to_dict()

    # Wiring: each call passes the XComArg of an upstream task, resolved to the value its parameter declares
    # when the task runs; Airflow's @task types the call with those parameters, hence arg-type ignores here.
    plan = resolve_migration()
    path = choose_path(plan)  # type: ignore[arg-type]
    migration_open(plan) >> provision_target(plan) >> path  # type: ignore[arg-type]
    bridged, verified = run_bridge(plan), verify_dual_publish(plan)  # type: ignore[arg-type]
    path >> [bridged, verified]
    archived, cutover = archive_exchanges(plan), track_cutover(plan)  # type: ignore[arg-type]
    [bridged, verified] >> archived
    [bridged, verified] >> cutover
    archived >> check_parity >> reconcile_predecessor(plan, cutover)  # type: ignore[arg-type]


dual_publish_migration()

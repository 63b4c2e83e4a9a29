"""dual_publish_migration run in-process (dag.test, bridge and spark-submit included) on the local broker.

The CPQ flow's billing.invoice-issued.v1 (declared deprecated in the catalogue copy) migrates to v2:

1. 20 v1 messages, one of them not migratable (an EUR amount with 3 decimals): the bridge parks it,
   parity misses it, and v1 stays active; the refusal says parity failed.
2. 200 more v1 messages, judged from a moment after the first run (*parity_since*): parity 1.0, the v2
   consumer queues hold every migrated message, both versions' queues are observed, and v1 moves
   active -> superseded -> deprecated in that run.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from tests.support.migration import Traffic, activate


def task_states(dag_run: Any) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in dag_run.get_task_instances()}


pytestmark = [pytest.mark.airflow, pytest.mark.integration, pytest.mark.spark, pytest.mark.timeout(900)]

V1 = "billing.invoice-issued.v1"
V2 = "billing.invoice-issued.v2"


def test_invoice_issued_v1_migrates_to_v2_end_to_end(dagbag, platform_env, rabbitmq_url, catalog_dir):
    from contract_platform.amqp import Publisher, open_connection, parking_lot_name
    from contract_platform.amqp.connection import close_quietly
    from contract_platform.amqp.inspection import passive_queue
    from contract_platform.bridge import prepare_tap
    from contract_platform.bridge.translation import resolve_route
    from contract_platform.catalog import load_catalog
    from contract_platform.catalog.model import Status
    from contract_platform.change import provision_topologies
    from contract_platform.envelope import EnvelopeValidator
    from contract_platform.store import SqlRegistry

    catalog = load_catalog(platform_env["catalog"])
    v1, v2 = catalog.contracts[V1], catalog.contracts[V2]
    assert v1.status is Status.DEPRECATED and v1.sunset is not None
    tap = f"{platform_env['prefix']}.bridge.{V1}"
    conf = {"migration": V2, "mode": "bridge", "bridge_seconds": 120, "tap_queue": tap}
    traffic = Traffic(catalog_dir)
    connection = open_connection(f"{rabbitmq_url}?heartbeat=0")  # idle while dag.test runs
    try:
        with SqlRegistry.open(platform_env["registry_url"]) as store:
            activate(store, V2, v2.version)
            activate(store, V1, v1.version)
            provisioned = provision_topologies(catalog, connection, store, only=[V1, V2])
            assert provisioned.ok, provisioned.problems
        prepare_tap(connection, resolve_route(catalog, V2), tap)  # a bridge started earlier: v1 is kept for it
        publisher = Publisher(connection, EnvelopeValidator(catalog))

        # 1. one message the spec cannot migrate: parked, missing, v1 not superseded (so not deprecated)
        publisher.publish_many(traffic.make(20, not_migratable=7))
        parked = dagbag.get_dag("dual_publish_migration").test(run_conf=conf)

        assert parked.state == "success", task_states(parked)
        assert task_states(parked)["verify_dual_publish"] == "skipped"
        assert passive_queue(connection, parking_lot_name(tap)) == (1, 0)
        with SqlRegistry.open(platform_env["registry_url"]) as store:
            evidence = store.latest_evidence(V1, "migration_parity")
            assert (str(evidence.verdict), evidence.run_id) == ("fail", parked.run_id)
            figures = evidence.figures
            assert (figures["v1_total"], figures["missing"], figures["missing_not_migratable"]) == (20, 1, 1)
            assert figures["parity"] == pytest.approx(19 / 20) and figures["mode"] == "bridge"
            assert store.effective(V1).status is Status.ACTIVE
            refusal = store.refusals(V1)[0]
            assert (refusal.from_status, refusal.to_status, refusal.run_id) == (
                Status.ACTIVE,
                Status.SUPERSEDED,
                parked.run_id,
            )
            assert any("parity failed" in reason for reason in refusal.reasons), refusal.reasons

        # 2. 200 messages from a moment after the first run: parity 1.0, v1 superseded then deprecated
        since = datetime.now(UTC).isoformat()
        time.sleep(0.01)  # the clock must move past `since`: the behaviour is "messages after that moment"
        published = publisher.publish_many(traffic.make(200))
        migrated = dagbag.get_dag("dual_publish_migration").test(run_conf=conf | {"parity_since": since})

        assert migrated.state == "success", task_states(migrated)
        with SqlRegistry.open(platform_env["registry_url"]) as store:
            evidence = store.latest_evidence(V1, "migration_parity")
            figures = evidence.figures
            assert (str(evidence.verdict), evidence.run_id, figures["parity"]) == ("pass", migrated.run_id, 1.0)
            assert (figures["v1_total"], figures["v2_total"], figures["missing"], figures["mismatches"]) == (
                200,
                200,
                0,
                0,
            )
            assert figures["out_of_order"] == 0 and figures["lag_p99_ms"] is not None
            assert Path(evidence.reference).is_file()
            steps = [(t.from_status, t.to_status) for t in store.transitions(V1) if t.run_id == migrated.run_id]
            assert steps == [(Status.ACTIVE, Status.SUPERSEDED), (Status.SUPERSEDED, Status.DEPRECATED)]
            assert store.effective(V1).status is Status.DEPRECATED
            for contract in (v1, v2):
                observed = {o.queue for o in store.observations(contract.message_type) if o.run_id == migrated.run_id}
                assert observed == {consumer.queue for consumer in contract.consumers}
        for consumer in v2.consumers:  # every migrated message of both runs, none parked
            assert passive_queue(connection, consumer.queue) == (19 + len(published), 0)
    finally:
        close_quietly(connection)


def test_a_retired_source_is_left_alone_by_the_schedule(dagbag, platform_env, rabbitmq_url, catalog_dir):
    """v1 retired, two v1 messages published after it: the run succeeds and does nothing, saying why; the
    messages stay where they were (nothing bridged), and no parity or cutover is recorded after the retirement."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    from contract_platform.amqp import Publisher, open_connection
    from contract_platform.amqp.connection import close_quietly
    from contract_platform.amqp.inspection import passive_queue
    from contract_platform.bridge import prepare_tap
    from contract_platform.bridge.translation import resolve_route
    from contract_platform.catalog import load_catalog
    from contract_platform.catalog.model import Status
    from contract_platform.change import provision_topologies
    from contract_platform.envelope import EnvelopeValidator
    from contract_platform.evidence import EvidenceKind
    from contract_platform.store import SqlRegistry

    catalog = load_catalog(platform_env["catalog"])
    v1, v2 = catalog.contracts[V1], catalog.contracts[V2]
    tap = f"{platform_env['prefix']}.bridge.{V1}"
    connection = open_connection(f"{rabbitmq_url}?heartbeat=0")  # idle while dag.test runs
    try:
        with SqlRegistry.open(platform_env["registry_url"]) as store:
            activate(store, V2, v2.version)
            activate(store, V1, v1.version)
            assert provision_topologies(catalog, connection, store, only=[V1, V2]).ok
            state = store.effective(V1)
            for status in (Status.SUPERSEDED, Status.DEPRECATED, Status.RETIRED):
                state = store.apply_transition(V1, expected=state, to=status, actor="test-seed", reason="seeded")
        prepare_tap(connection, resolve_route(catalog, V2), tap)  # the finished migration's bridge left it
        Publisher(connection, EnvelopeValidator(catalog)).publish_many(Traffic(catalog_dir).make(2))

        dag_run = dagbag.get_dag("dual_publish_migration").test(
            run_conf={"migration": V2, "mode": "bridge", "bridge_seconds": 30, "tap_queue": tap}
        )

        assert dag_run.state == "success", task_states(dag_run)
        states = task_states(dag_run)
        assert (states.pop("resolve_migration"), states.pop("migration_open")) == ("success", "success")
        assert set(states.values()) == {"skipped"}, states
        with create_session() as session:
            [row] = session.scalars(
                XComModel.get_many(
                    run_id=dag_run.run_id, dag_ids=dag_run.dag_id, task_ids="resolve_migration", key="return_value"
                )
            )
            planned = XComModel.deserialize_value(row)
        assert planned["skipped"].startswith(f"{V1} was retired at ") and "no parity" in planned["skipped"]
        assert passive_queue(connection, tap) == (2, 0)  # nothing bridged
        for consumer in v2.consumers:
            assert passive_queue(connection, consumer.queue) == (0, 0)
        with SqlRegistry.open(platform_env["registry_url"]) as store:
            assert store.latest_evidence(V1, EvidenceKind.MIGRATION_PARITY) is None
            assert not [o for o in store.observations(V1) if o.run_id == dag_run.run_id]
            assert store.effective(V1).status is Status.RETIRED
    finally:
        close_quietly(connection)


def test_the_dag_branches_on_mode_and_joins_after_either_path(dagbag):
    dag = dagbag.get_dag("dual_publish_migration")
    assert dag.get_task("choose_path").downstream_task_ids == {"run_bridge", "verify_dual_publish"}
    for task_id in ("archive_exchanges", "track_cutover"):
        task = dag.get_task(task_id)
        assert {"run_bridge", "verify_dual_publish"} <= task.upstream_task_ids
        assert task.trigger_rule == "none_failed_min_one_success"
    assert dag.get_task("check_parity").upstream_task_ids == {"archive_exchanges"}
    assert dag.get_task("reconcile_predecessor").upstream_task_ids >= {"check_parity", "track_cutover"}
    assert dag.schedule is not None and dag.max_active_runs == 1  # bounded runs, kept going by the schedule


def test_verify_dual_publish_sees_v2_messages_arriving(dagbag, platform_env, rabbitmq_url, catalog_dir):
    """The dual-publish path on the broker: nothing yet, then a producer's v2 message on the v2 queues."""
    from contract_platform.amqp import Publisher, open_connection, plan_topology, provision
    from contract_platform.amqp.connection import close_quietly
    from contract_platform.catalog import load_catalog
    from contract_platform.envelope import EnvelopeValidator

    catalog = load_catalog(platform_env["catalog"])
    verify = dagbag.get_dag("dual_publish_migration").get_task("verify_dual_publish").python_callable
    plan = {"target": V2}
    connection = open_connection(rabbitmq_url)
    try:
        provision(connection, plan_topology(catalog.contracts[V2]))
        assert verify(plan)["arriving"] is False
        envelope = json.loads(
            (catalog_dir / "billing/invoice-issued/v2/fixtures/valid/jpy-prepaid-paid-inv-10002.json").read_text()
        )
        Publisher(connection, EnvelopeValidator(catalog)).publish(envelope)
        seen = verify(plan)
        assert seen["arriving"] is True
        assert {name: queue["ready"] for name, queue in seen["queues"].items()} == {
            consumer.queue: 1 for consumer in catalog.contracts[V2].consumers
        }
    finally:
        close_quietly(connection)

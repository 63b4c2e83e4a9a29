"""retirement_audit run in-process (dag.test, spark-submit included) over the CPQ flow's deprecated invoice v1.

The broker activity recorder runs throughout, into the platform's registry. First run: a v1 message
sits in a DLQ and a consumer is connected, so the audit records blockers (the consumer among the
readers) and v1 stays deprecated. Second run, nine days later as the store sees it, after three quiet
audits: blockers cleared, v1 declared retired in the catalogue copy, so the DAG retires it, keeps its retirement bundle and removes its queues (removeOnRetire), not the exchange
v2 still uses.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pika
import pytest
from tests.support import broker
from tests.support.retirement import running_recorder, seed_counters, shift_activity, wait_for_coverage

pytestmark = [pytest.mark.airflow, pytest.mark.integration, pytest.mark.spark, pytest.mark.timeout(1200)]

V1 = "billing.invoice-issued.v1"
V2 = "billing.invoice-issued.v2"
# Evidence each seeded step rests on (the guards are not asked here: this seeds the store's history).
STEP_EVIDENCE = {
    "experimental": "lint",
    "active": "envelope_quality",
    "superseded": "migration_parity",
    "deprecated": "migration_parity",
}


def task_states(dag_run: Any) -> dict[str, str]:
    return {f"{ti.task_id}[{ti.map_index}]": str(ti.state) for ti in dag_run.get_task_instances()}


def walk(store: Any, message_type: str, version: str, to: str) -> None:
    """register + apply_transition with evidence, up to ``to``."""
    from contract_platform.catalog.model import Status

    state = store.register(message_type, version, actor="test-seed")
    for status in [s for s in Status if state.status.rank < s.rank <= Status(to).rank]:
        evidence = store.add_evidence(
            message_type,
            contract_version=version,
            kind=STEP_EVIDENCE[status.value],
            verdict="pass",
            figures={"mode": "dual-publish", "seeded": True},
        )
        state = store.apply_transition(
            message_type, expected=state, to=status, actor="test-seed", reason="seeded", evidence_id=evidence.id
        )


def write_archive(root: Path, contract: Any, last: datetime, catalog_dir: Path) -> None:
    """v1 envelopes (the contract's valid fixtures) archived in two daily partitions, the last at ``last``."""
    fixtures = sorted((catalog_dir / "billing/invoice-issued/v1/fixtures/valid").glob("*.json"))
    for day_offset in (1, 0):
        moment = last - timedelta(days=day_offset)
        folder = root / contract.transport.exchange / f"date={moment.date().isoformat()}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = []
        for n, fixture in enumerate(fixtures):
            envelope = json.loads(fixture.read_text())
            received = moment - timedelta(minutes=len(fixtures) - 1 - n)
            lines.append(
                {
                    "exchange": contract.transport.exchange,
                    "routingKey": contract.transport.routing_key,
                    "receivedAt": received.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                    "redelivered": False,
                    "properties": {
                        "messageId": envelope["metadata"]["messageId"],
                        "type": V1,
                        "contentType": "application/json",
                        "headers": {"schema-version": 1},
                    },
                    "body": json.dumps(envelope),
                    "bodyBase64": None,
                }
            )
        (folder / "archiver-1-000001.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def wait_for_stats(names: list[str]) -> None:
    from contract_platform.amqp import ManagementClient

    broker.wait_for_stats(ManagementClient.from_amqp_url("amqp://guest:guest@127.0.0.1:5672/%2F"), names)


def test_retirement_audit_records_blockers_then_retires_v1(
    dagbag, platform_env, rabbitmq_url, monkeypatch, catalog_dir
):
    from contract_platform.amqp import open_connection, plan_topology, provision
    from contract_platform.amqp.connection import close_quietly
    from contract_platform.amqp.inspection import exchange_exists, passive_queue
    from contract_platform.amqp.topology import Role
    from contract_platform.catalog import load_catalog
    from contract_platform.catalog.model import Status
    from contract_platform.store import SqlRegistry

    home: Path = platform_env["home"]
    archive = home / "archive"
    monkeypatch.setenv("CONTRACT_ARCHIVE_DIR", str(archive))
    catalog = load_catalog(platform_env["catalog"])
    v1, v2 = catalog.contracts[V1], catalog.contracts[V2]
    assert v1.status is Status.DEPRECATED and v1.topology.remove_on_retire
    now = datetime.now(UTC)
    with SqlRegistry.open(platform_env["registry_url"]) as store:
        walk(store, V1, v1.version, "deprecated")
        walk(store, V2, v2.version, "active")
    write_archive(archive, v1, now - timedelta(days=20), catalog_dir)
    recorder_store = SqlRegistry.open(platform_env["registry_url"])  # the broker activity recorder, as deployed
    recording = running_recorder(recorder_store, rabbitmq_url, f"{platform_env['prefix']}.broker-activity")
    recording.__enter__()
    plan = plan_topology(v1)
    dlq = plan.queues_of(Role.DLQ)[0].name
    # No heartbeats: these connections sit idle while dag.test runs, and must stay connected.
    connection = open_connection(f"{rabbitmq_url}?heartbeat=0")
    consumer = open_connection(f"{rabbitmq_url}?heartbeat=0")
    try:
        provision(connection, plan)
        provision(connection, plan_topology(v2))
        connection.channel().basic_publish("", dlq, b"{}", pika.BasicProperties(type=V1, message_id="dead-1"))
        listener = consumer.channel()
        listener.basic_consume(v1.consumers[0].queue, lambda *args: None)
        wait_for_stats([q.name for q in plan.queues_of(Role.CONSUMER, Role.RETRY, Role.DLQ, Role.PARKING_LOT)])

        blocked = dagbag.get_dag("retirement_audit").test(run_conf={"dead_letter_prefix": platform_env["prefix"]})

        assert blocked.state == "success", task_states(blocked)
        with SqlRegistry.open(platform_env["registry_url"]) as store:
            latest = store.latest_evidence(V1, "retirement_audit")
            assert latest is not None and latest.run_id == blocked.run_id and str(latest.verdict) == "fail"
            assert {"queues", "readers", "dead_letters"} <= set(latest.figures["failed_checks"])
            assert "retention" not in latest.figures["failed_checks"]  # archived 20 days ago: elapsed
            assert "dead-1" in json.dumps(latest.figures["blockers"])
            assert store.effective(V1).status is Status.DEPRECATED
        assert (home / "docs" / "retirement" / V1 / "latest.md").exists()
        assert passive_queue(connection, v1.consumers[0].queue) is not None

        listener.close()
        close_quietly(consumer)
        connection.channel().queue_purge(dlq)
        # nine days later: the consumer and the first audit are history; three quiet daily audits since
        wait_for_coverage(recorder_store, "the consumer's departure recorded")
        broker.wait_for_counter("/", dlq, "deliver_get", 1)  # the first audit's own peek, in the statistics
        shift_activity(platform_env["registry_url"], timedelta(days=9))
        with SqlRegistry.open(platform_env["registry_url"]) as store:
            seed_counters(store, v1, [datetime.now(UTC) - timedelta(days=age) for age in (8, 4, 1)])
        contract_file = platform_env["catalog"] / "billing/invoice-issued/v1/contract.yaml"
        contract_file.write_text(contract_file.read_text().replace("status: deprecated", "status: retired"))

        retired = dagbag.get_dag("retirement_audit").test(run_conf={"dead_letter_prefix": platform_env["prefix"]})

        assert retired.state == "success", task_states(retired)
        with SqlRegistry.open(platform_env["registry_url"]) as store:
            latest = store.latest_evidence(V1, "retirement_audit")
            assert str(latest.verdict) == "pass", latest.figures["blockers"]
            state = store.effective(V1)
            assert state.status is Status.RETIRED
            last = store.transitions(V1)[-1]
            assert (last.to_status, last.run_id, last.evidence_id) == (Status.RETIRED, retired.run_id, latest.id)
        bundle = home / "retirement-bundles" / V1
        manifest = json.loads((bundle / "manifest.json").read_text())
        assert manifest["runId"] == retired.run_id
        assert (bundle / "contract.yaml").read_text() == contract_file.read_text()
        sample = [json.loads(line) for line in (bundle / "sample.jsonl").read_text().splitlines()]
        assert 0 < len(sample) <= 20 and all(json.loads(s["body"])["payload"]["billingEmail"] == "***" for s in sample)
        for queue in plan.queues_of(Role.CONSUMER, Role.RETRY, Role.DLQ, Role.PARKING_LOT):
            assert passive_queue(connection, queue.name) is None, f"{queue.name} was not removed"
        assert exchange_exists(connection, v1.transport.exchange)  # v2 still publishes to it
        assert passive_queue(connection, v2.consumers[0].queue) is not None
    finally:
        close_quietly(consumer)
        close_quietly(connection)
        recording.__exit__(None, None, None)
        recorder_store.close()


def test_a_catalogue_that_does_not_load_fails_before_spark_without_retry(dagbag, platform_env):
    (platform_env["catalog"] / "billing/invoice-issued/v1/payload.schema.json").write_text("{ not json")

    dag_run = dagbag.get_dag("retirement_audit").test()

    assert dag_run.state == "failed"
    states = task_states(dag_run)
    assert states["locate_inputs[-1]"] == "failed"
    assert states["find_last_seen[-1]"] == "upstream_failed"
    [ti] = [ti for ti in dag_run.get_task_instances() if ti.task_id == "locate_inputs"]
    assert ti.try_number == 1

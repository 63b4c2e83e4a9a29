"""topic_archive_validation end to end: traffic on the real broker -> archive -> Spark validation -> evidence."""

from __future__ import annotations

import copy
import json
import uuid

import pytest

pytestmark = [pytest.mark.airflow, pytest.mark.integration, pytest.mark.spark]

INV1 = "billing.invoice-issued.v1"


def envelopes_from_fixtures(catalog, message_type: str, count: int) -> list[dict]:
    contract = catalog.get(message_type)
    valid = [f.document for f in contract.fixtures if f.valid]
    out = []
    for i in range(count):
        doc = copy.deepcopy(valid[i % len(valid)])
        doc["metadata"]["messageId"] = str(uuid.uuid4())
        if contract.ordering is not None:
            doc["metadata"]["partitionKey"] = f"key-{i}"
        out.append(doc)
    return out


def test_archive_validate_and_record(dagbag, platform_env, rabbitmq_url):
    import pika

    from contract_platform.amqp import Publisher, open_connection
    from contract_platform.amqp.connection import close_quietly
    from contract_platform.catalog import load_catalog
    from contract_platform.envelope import EnvelopeValidator
    from contract_platform.store import SqlRegistry

    full_conf = {"contract": "", "target_status": "", "reason": ""}  # the session's DAG object keeps old params
    assert dagbag.get_dag("contract_change").test(run_conf=full_conf).state == "success"
    catalog = load_catalog(platform_env["catalog"])
    good = envelopes_from_fixtures(catalog, INV1, 20)
    connection = open_connection(rabbitmq_url)
    try:
        with Publisher(connection, EnvelopeValidator(catalog)) as publisher:
            publisher.publish_many(good)
        # A producer that does not use the platform's publisher: its payload breaks the contract.
        bad = copy.deepcopy(good[0])
        bad["metadata"]["messageId"] = "bad-payload-1"
        bad["payload"]["amount"] = 12.5
        contract = catalog.get(INV1)
        channel = connection.channel()
        channel.basic_publish(
            contract.transport.exchange,
            contract.transport.routing_key,
            json.dumps(bad).encode(),
            pika.BasicProperties(
                message_id="bad-payload-1",
                type=INV1,
                content_type="application/json",
                delivery_mode=2,
                headers={"schema-version": 1},
            ),
        )
    finally:
        close_quietly(connection)

    dag_run = dagbag.get_dag("topic_archive_validation").test()
    states = {ti.task_id: str(ti.state) for ti in dag_run.get_task_instances()}
    # evidence and lifecycle first, then red on the invalid record (a manual run: the whole archive)
    assert states == {
        "archive_topics": "success",
        "plan_paths": "success",
        "validate_archive": "success",
        "reconcile_lifecycle": "success",
        "report_findings": "failed",
    }, states

    archive = platform_env["home"] / "archive" / contract.transport.exchange
    lines = [line for path in archive.rglob("*.jsonl") for line in path.read_text().splitlines()]
    assert len(lines) == 21
    [report_file] = (platform_env["home"] / "reports" / "archive-validation").glob("*.json")
    report = json.loads(report_file.read_text())
    assert report["totals"]["records"] == 21 and report["totals"]["invalid"] == 1

    registry = SqlRegistry.open(platform_env["registry_url"])
    try:
        evidence = registry.latest_evidence(INV1, "archive_validation")
        assert evidence is not None and evidence.figures["total"] == 21 and evidence.figures["invalid"] == 1
        assert str(evidence.verdict) == "fail"  # 1/21 is far above the 0.1% target
        refusal = registry.refusals(INV1, limit=1)[0]
        assert any("invalid rate" in reason for reason in refusal.reasons)
    finally:
        registry.close()

"""contract_change run in-process (dag.test) against the real broker, on a temporary catalogue."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.airflow, pytest.mark.integration]

INV1 = "billing.invoice-issued.v1"


def run(dagbag, **conf):
    # Always the full conf: the session's DagBag keeps a DAG object whose params a previous
    # test() call may have changed.
    return dagbag.get_dag("contract_change").test(run_conf={"contract": "", "target_status": "", "reason": "", **conf})


def task_states(dag_run) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in dag_run.get_task_instances()}


def test_contract_change_provisions_and_reconciles_then_changes_nothing(dagbag, platform_env, rabbitmq_url):
    from contract_platform.amqp import open_connection, plan_topology
    from contract_platform.amqp.connection import close_quietly
    from contract_platform.amqp.inspection import exchange_exists, passive_queue
    from contract_platform.catalog import load_catalog
    from contract_platform.store import SqlRegistry

    first = run(dagbag)
    assert first.state == "success", task_states(first)

    catalog = load_catalog(platform_env["catalog"])
    connection = open_connection(rabbitmq_url)
    try:
        for contract in catalog:
            plan = plan_topology(contract)
            assert all(exchange_exists(connection, e.name) for e in plan.exchanges)
            assert all(passive_queue(connection, q.name) is not None for q in plan.queues), contract.message_type
    finally:
        close_quietly(connection)

    registry = SqlRegistry.open(platform_env["registry_url"])
    try:
        for contract in catalog:
            history = registry.transitions(contract.message_type)
            assert [(t.from_status, str(t.to_status)) for t in history] == [
                (None, "proposed"),
                ("proposed", "experimental"),
            ]
            assert history[-1].run_id == first.run_id and history[-1].actor == "dag:contract_change"
            [refusal] = registry.refusals(contract.message_type)
            assert (str(refusal.from_status), str(refusal.to_status)) == ("experimental", "active")
            assert any("envelope quality" in reason for reason in refusal.reasons)
        before = {c.message_type: len(registry.transitions(c.message_type)) for c in catalog}
        refusals_before = {c.message_type: len(registry.refusals(c.message_type)) for c in catalog}
    finally:
        registry.close()

    second = run(dagbag)
    assert second.state == "success", task_states(second)
    registry = SqlRegistry.open(platform_env["registry_url"])
    try:
        assert {c.message_type: len(registry.transitions(c.message_type)) for c in catalog} == before
        assert {c.message_type: len(registry.refusals(c.message_type)) for c in catalog} == refusals_before
        assert all(str(registry.effective(c.message_type).status) == "experimental" for c in catalog)
    finally:
        registry.close()
    assert (platform_env["home"] / "docs" / "contracts" / f"{INV1}.md").exists()


def test_a_catalogue_that_does_not_load_fails_without_retry(dagbag, platform_env):
    schema = platform_env["catalog"] / "quote/quote-approved/v1/payload.schema.json"
    schema.write_text("{ not json")
    dag_run = run(dagbag)
    assert dag_run.state == "failed"
    states = task_states(dag_run)
    assert states["load_catalog"] == "failed"
    assert states["reconcile_lifecycle"] != "success"
    ti = next(ti for ti in dag_run.get_task_instances() if ti.task_id == "load_catalog")
    assert ti.try_number == 1


def test_a_manual_step_through_the_trigger_form_is_guarded(dagbag, platform_env, rabbitmq_url):
    from contract_platform.catalog import load_catalog
    from contract_platform.catalog.model import Status
    from contract_platform.store import SqlRegistry

    with SqlRegistry.open(platform_env["registry_url"]) as registry:  # as a first run leaves it: experimental
        version = load_catalog(platform_env["catalog"]).contracts[INV1].version
        state = registry.register(INV1, version, actor="dag:contract_change")
        registry.apply_transition(INV1, expected=state, to=Status.EXPERIMENTAL, actor="dag:contract_change", reason="")
    refused = run(dagbag, contract=INV1, target_status="active", reason="try to skip quality")
    assert refused.state == "failed"
    assert task_states(refused)["reconcile_lifecycle"] == "failed"
    registry = SqlRegistry.open(platform_env["registry_url"])
    try:
        latest = registry.refusals(INV1, limit=1)[0]
        assert latest.run_id == refused.run_id and str(latest.to_status) == "active"
        assert str(registry.effective(INV1).status) == "experimental"
    finally:
        registry.close()


def test_watch_emits_the_changed_contracts_in_batches_then_none(dagbag, platform_env):
    from airflow.models.asset import AssetEvent
    from airflow.utils.session import create_session

    def events_of(dag_run) -> list[dict]:
        with create_session() as session:
            return [e.extra for e in session.query(AssetEvent).filter(AssetEvent.source_run_id == dag_run.run_id).all()]

    watch = dagbag.get_dag("contract_catalog_watch")
    first = watch.test()
    assert first.state == "success"
    [event] = events_of(first)  # a handful of versions: one event names them all
    assert event["messageTypes"] == sorted(
        p.parent.relative_to(platform_env["catalog"]).as_posix().replace("/", ".")
        for p in platform_env["catalog"].glob("*/*/v*/contract.yaml")
    )
    assert event["count"] == len(event["messageTypes"])
    second = watch.test()
    assert second.state == "success" and events_of(second) == []
    (platform_env["catalog"] / "billing/invoice-issued/v1/contract.yaml").write_text(
        (platform_env["catalog"] / "billing/invoice-issued/v1/contract.yaml").read_text() + "\n# touched\n"
    )
    third = watch.test()
    assert [(e["messageType"], e["messageTypes"], e["count"]) for e in events_of(third)] == [(INV1, [INV1], 1)]


def test_replay_refuses_a_stricter_pattern_archived_traffic_violates_and_accepts_it_on_evidence(
    dagbag, platform_env, rabbitmq_url
):
    """One replay step after compatibility (docs/replay.md): refused naming pointer and count, then accepted."""
    from datetime import UTC, datetime

    from tests.support.replay import ORDER, tighten, write_archive

    from contract_platform.catalog import load_catalog
    from contract_platform.store import SqlRegistry

    catalog = platform_env["catalog"]
    registry = SqlRegistry.open(platform_env["registry_url"])
    try:  # as an earlier run leaves it: 1.2.0 is the schema the platform has seen (the test below does the same)
        registry.snapshot_schema(ORDER, "1.2.0", load_catalog(catalog).get(ORDER).payload_schema)
    finally:
        registry.close()
    tighten(catalog, compatibility={"mode": "BACKWARD", "tightening": "evidence", "minMessages": 50})
    archive, today = platform_env["home"] / "archive", datetime.now(UTC)
    write_archive(archive, catalog, [10_000 + n for n in range(97)] + [7, 8, 9], today)  # 3% too short

    refused = run(dagbag)
    states = task_states(refused)
    assert refused.state == "failed" and states["replay_traffic"] == "success", states
    assert states["report_problems"] == "failed" and states["reconcile_lifecycle"] == "success"
    registry = SqlRegistry.open(platform_env["registry_url"])
    try:
        latest = registry.evidence(ORDER, "replay", limit=1)[0]
        assert latest.run_id == refused.run_id and latest.contract_version == "1.3.0"
        assert (latest.figures["decision"], latest.figures["replayed"], latest.figures["rejected"]) == (
            "refused",
            100,
            3,
        )
        assert latest.figures["top_pointers"] == [{"pointer": "/payload/orderId", "keyword": "pattern", "count": 3}]
    finally:
        registry.close()

    write_archive(archive, catalog, [10_000 + n for n in range(100)], today)  # the same day, rewritten: all fit
    accepted = run(dagbag)
    assert accepted.state == "success", task_states(accepted)
    registry = SqlRegistry.open(platform_env["registry_url"])
    try:
        assert registry.evidence(ORDER, "replay", limit=1)[0].figures["decision"] == "accepted-on-evidence"
        compatibility = registry.evidence(ORDER, "compatibility", limit=1)[0]
        assert compatibility.verdict == "pass" and compatibility.figures["decided_by"] == "replay"
        assert [v for v, _ in registry.schema_history(ORDER)][-1] == "1.3.0"
    finally:
        registry.close()


def test_a_change_that_breaks_one_consumer_of_three_names_it_and_its_owner(dagbag, platform_env, rabbitmq_url):
    """Consumer-aware impact in the compatibility step (docs/consumer-impact.md): of three consumers, only the
    one whose reads cover the narrowed field is broken; the run is red and the evidence names it with its owner."""
    import json

    from contract_platform.catalog import load_catalog
    from contract_platform.store import SqlRegistry

    order = "order.order-created.v1"
    folder = platform_env["catalog"] / "order/order-created/v1"
    registry = SqlRegistry.open(platform_env["registry_url"])
    try:  # as an earlier run leaves it: 1.2.0 is the schema the platform has seen
        registry.snapshot_schema(order, "1.2.0", load_catalog(platform_env["catalog"]).get(order).payload_schema)
    finally:
        registry.close()
    contract = folder / "contract.yaml"
    text = contract.read_text().replace("version: 1.2.0", "version: 1.3.0", 1)
    third = (
        "  - service: analytics-service\n"
        "    queue: analytics-service.order.order-created.v1\n"
        "    team: data-platform\n"
        "    contact: data-platform@example.com\n"
        "    reads: [/payload/orderTotal, /payload/currency]\n"
    )
    contract.write_text(text.replace("tenancy:", third + "tenancy:", 1))
    schema = json.loads((folder / "payload.schema.json").read_text())
    schema["$defs"]["OrderLine"]["properties"]["productName"]["maxLength"] = 10  # only fulfillment reads it
    (folder / "payload.schema.json").write_text(json.dumps(schema, indent=2))
    for fixture in (folder / "fixtures" / "valid").glob("*.json"):  # keep the valid fixtures valid
        document = json.loads(fixture.read_text())
        for line in document["payload"]["lineItems"]:
            line["productName"] = line["productName"][:10]
        fixture.write_text(json.dumps(document, indent=2))

    broken = run(dagbag)

    states = task_states(broken)
    assert broken.state == "failed" and states["check_compatibility"] == "success", states
    assert states["report_problems"] == "failed"
    registry = SqlRegistry.open(platform_env["registry_url"])
    try:
        evidence = registry.evidence(order, "compatibility", limit=1)[0]
        assert evidence.run_id == broken.run_id and evidence.verdict == "fail"
        impact = evidence.figures["impact"]
        assert impact["broken"] == ["fulfillment-service"]
        assert sorted(impact["untouched"]) == ["analytics-service", "billing-service"]
        [fulfilment] = [c for c in impact["consumers"] if c["broken"]]
        assert (fulfilment["team"], fulfilment["contact"]) == ("fulfillment-ops", "fulfillment-ops@example.com")
    finally:
        registry.close()

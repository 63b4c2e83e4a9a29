"""contractctl migration status: parity, lag and consumers per version from a real (SQLite) registry store."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from tests.support.cli import run_cli

from contract_platform.cli.main import main
from contract_platform.migration import ParityReport, record_parity
from contract_platform.store import SqlRegistry

V1 = "billing.invoice-issued.v1"
V2 = "billing.invoice-issued.v2"
NO_BROKER = "amqp://guest:guest@127.0.0.1:1/%2F"


def parity(missing: int) -> ParityReport:
    return ParityReport(
        source=V1,
        source_version="1.3.0",
        target=V2,
        mode="bridge",
        v1_total=100,
        v2_total=100 - missing,
        matched=100 - missing,
        missing=missing,
        mismatches=0,
        extra=0,
        duplicates=2,
        redeliveries=1,
        out_of_order=0,
        lag_p50_ms=4.0,
        lag_p99_ms=40.0,
    )


def seed(url: str, catalog) -> datetime:
    """Two parity runs (failed, then passed) and two cutover observations (consumers moving to v2)."""
    start = datetime(2026, 7, 1, 10, tzinfo=UTC)
    with SqlRegistry.open(url) as registry:
        record_parity(parity(missing=3), registry, "run-1")
        record_parity(parity(missing=0), registry, "run-2")
        for n, (old, new) in enumerate(((1, 0), (0, 1))):
            at = start + timedelta(hours=n)
            for contract, consumers in ((catalog.get(V1), old), (catalog.get(V2), new)):
                for consumer in contract.consumers:
                    registry.record_observation(
                        contract.message_type,
                        consumer.queue,
                        consumers=consumers,
                        ready=n,
                        unacked=0,
                        source="amqp",
                        run_id=f"run-{n + 1}",
                        observed_at=at,
                    )
            registry.record_observation(  # not a consumer queue: not part of the cutover
                V1, "bridge.billing.invoice-issued.v1", consumers=1, ready=0, unacked=0, source="amqp", observed_at=at
            )
    return start


def test_status_shows_parity_history_and_consumers_per_version(capsys, catalog, catalog_dir, registry_url, monkeypatch):
    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", NO_BROKER)
    start = seed(registry_url, catalog)
    for either in (V1, V2):  # either side of the migration names it
        code, out, _ = run_cli(capsys, "migration", "status", either, "--catalog", str(catalog_dir), "--format", "json")
        assert code == 0
        document = json.loads(out)
        assert (document["source"], document["target"]) == (V1, V2)
    assert document["status"][V1] == {"declared": "deprecated", "effective": None}
    latest = document["parity"]
    assert (latest["verdict"], latest["parity"], latest["runId"], latest["lag_p99_ms"]) == ("pass", 1.0, "run-2", 40.0)
    assert (latest["duplicates"], latest["redeliveries"]) == (2, 1)
    assert [p["verdict"] for p in document["parityHistory"]] == ["pass", "fail"]
    assert document["consumers"] == [
        {
            "at": start.isoformat().replace("+00:00", "Z"),
            "runId": "run-1",
            "consumers": {V1: 2, V2: 0},
            "ready": {V1: 0, V2: 0},
        },
        {
            "at": (start + timedelta(hours=1)).isoformat().replace("+00:00", "Z"),
            "runId": "run-2",
            "consumers": {V1: 0, V2: 2},
            "ready": {V1: 2, V2: 2},
        },
    ]
    tap = document["tapQueue"]
    assert tap["name"] == f"bridge.{V1}" and tap["available"] is False and tap["error"]
    code, _, _ = run_cli(capsys, "migration", "status", V1, "--catalog", str(catalog_dir), "--last", "1")
    assert code == 0  # the text form


def test_status_without_any_evidence_yet(capsys, catalog_dir, registry_url, monkeypatch):
    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", NO_BROKER)
    code, out, _ = run_cli(capsys, "migration", "status", V2, "--catalog", str(catalog_dir), "--format", "json")
    document = json.loads(out)
    assert code == 0 and document["parity"] is None and document["consumers"] == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["no.such-thing.v1"], "not a messageType"),
        (["order.order-created.v1"], "no successor"),
        ([V1, "--last", "0"], "--last must be at least 1"),
    ],
)
def test_bad_input_exits_2(capsys, catalog_dir, registry_url, argv, message):
    code, _, err = run_cli(capsys, "migration", "status", *argv, "--catalog", str(catalog_dir))
    assert code == 2 and message in err


def test_an_action_is_required(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["migration"])
    assert exit_info.value.code == 2


def test_unreachable_store_exits_3_without_the_password(capsys, catalog_dir, monkeypatch):
    monkeypatch.setenv("CONTRACT_REGISTRY_URL", "postgresql+psycopg2://app:s3cret@127.0.0.1:1/registry")
    code, _, err = run_cli(capsys, "migration", "status", V1, "--catalog", str(catalog_dir))
    assert code == 3 and "s3cret" not in err and "***" in err


@pytest.mark.integration
def test_status_shows_the_tap_queue_depth_when_the_broker_answers(capsys, catalog_dir, registry_url, rabbitmq_url):
    from contract_platform.amqp import open_connection
    from contract_platform.amqp.connection import close_quietly

    tap = f"t-{uuid.uuid4().hex[:8]}.bridge.{V1}"
    connection = open_connection(rabbitmq_url)
    try:
        channel = connection.channel()
        channel.queue_declare(tap, durable=True, arguments={"x-queue-type": "quorum"})
        for n in range(3):
            channel.basic_publish("", tap, f"{n}".encode())
        code, out, _ = run_cli(
            capsys, "migration", "status", V1, "--catalog", str(catalog_dir), "--tap-queue", tap, "--format", "json"
        )
        assert code == 0
        found = json.loads(out)["tapQueue"]
        assert (found["available"], found["exists"], found["ready"], found["consumers"]) == (True, True, 3, 0)
    finally:
        connection.channel().queue_delete(tap)
        close_quietly(connection)

"""audit_version and retire_if_proven on the real broker: each blocker blocks on its own; all clear retires."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pika
import pytest
from benchmarks.generate_archive import archive_record
from tests.support.broker import wait_for_stats
from tests.support.contracts import V1, V2
from tests.support.retirement import force_status, provision_family, retire_declared, seed_quiet_history

from contract_platform.amqp import ManagementClient, plan_topology
from contract_platform.amqp.inspection import exchange_exists, passive_queue
from contract_platform.amqp.topology import Role
from contract_platform.catalog.model import Catalog, Contract, Hold, Status
from contract_platform.evidence import EvidenceKind, Verdict
from contract_platform.retention import apply_archive_retention
from contract_platform.retirement import (
    AuditResult,
    LastSeen,
    TypeLastSeen,
    audit_version,
    retire_if_proven,
)
from contract_platform.retirement.audit import audit_snapshot
from contract_platform.store import SqlRegistry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def long_ago(days: int = 30) -> LastSeen:
    moment = datetime.now(UTC) - timedelta(days=days)
    return LastSeen({V1: TypeLastSeen(moment, 12)}, scanned=True, source="test")


@pytest.fixture
def provisioned(connection: Any, contracts: Catalog, registry: SqlRegistry, recording: datetime) -> Contract:
    """v1 and v2 provisioned (prefixed), three quiet audits of v1 in the store and the recorder running since."""
    provision_family(connection, contracts)
    v1 = contracts.contracts[V1]
    seed_quiet_history(registry, v1, datetime.now(UTC), coverage_until=recording)
    return v1


@pytest.fixture
def ready(provisioned: Contract, management: ManagementClient) -> Contract:
    """... and the management API has collected statistics (unacked counts) for its queues."""
    wait_for_stats(
        management, [q.name for q in plan_topology(provisioned).queues_of(Role.CONSUMER, Role.RETRY, Role.DLQ)]
    )
    return provisioned


def run_audit(
    connection: Any, contracts: Catalog, registry: SqlRegistry, prefix: str, contract: Contract, last_seen: LastSeen
) -> AuditResult:
    return audit_version(
        contract,
        contracts,
        registry,
        connection,
        last_seen,
        now=datetime.now(UTC),
        run_id="test",
        snapshot=audit_snapshot(connection),
        dead_letter_scope=prefix,
    )


def consumer_connected(connection: Any, contract: Contract, prefix: str) -> tuple[Contract, LastSeen]:
    connection.channel().basic_consume(contract.consumers[0].queue, lambda *args: None)
    return contract, long_ago()


def message_in_a_foreign_dlq(connection: Any, contract: Contract, prefix: str) -> tuple[Contract, LastSeen]:
    queue = f"{prefix}audit-replayer.{V1}.dlq"  # not one of v1's queues: only the broker-wide scan sees it
    channel = connection.channel()
    channel.queue_declare(queue, durable=True, arguments={"x-queue-type": "quorum"})
    channel.basic_publish("", queue, b"{}", pika.BasicProperties(type=V1, message_id="stuck-1"))
    return contract, long_ago()


def message_in_a_retry_queue(connection: Any, contract: Contract, prefix: str) -> tuple[Contract, LastSeen]:
    retry = plan_topology(contract).queues_of(Role.RETRY)[-1].name  # the 5m retry queue
    connection.channel().basic_publish("", retry, b"{}", pika.BasicProperties(type=V1))
    return contract, long_ago()


def retention_not_elapsed(connection: Any, contract: Contract, prefix: str) -> tuple[Contract, LastSeen]:
    return contract, long_ago(days=3)


def a_hold(connection: Any, contract: Contract, prefix: str) -> tuple[Contract, LastSeen]:
    return replace(contract, holds=(Hold("replay", date.today() + timedelta(days=10), "replay for BI"),)), long_ago()


Scenario = Callable[[Any, Contract, str], tuple[Contract, LastSeen]]


@pytest.mark.parametrize(
    ("scenario", "blocked", "says"),
    [
        (consumer_connected, {"queues", "readers"}, "1 consumer connected"),
        # a DLQ that appeared after the last audit has no counter history yet: who read it is unknown too
        (message_in_a_foreign_dlq, {"dead_letters", "readers"}, "stuck-1"),
        (message_in_a_retry_queue, {"queues"}, "waiting to be retried"),
        (retention_not_elapsed, {"retention"}, "wait until"),
        (a_hold, {"holds"}, "replay hold until"),
    ],
)
def test_each_blocker_blocks_on_its_own_and_says_why(
    connection: Any,
    contracts: Catalog,
    registry: SqlRegistry,
    prefix: str,
    ready: Contract,
    scenario: Scenario,
    blocked: set[str],
    says: str,
) -> None:
    contract, last_seen = scenario(connection, ready, prefix)

    result = run_audit(connection, contracts, registry, prefix, contract, last_seen)

    assert result.verdict is Verdict.FAIL
    assert set(result.failed_checks) == blocked, result.figures()["blockers"]
    assert any(says in (check.blocker or "") for check in result.blocking)


def test_all_clear_retires_keeps_the_bundle_and_removes_only_v1_queues(
    connection: Any, contracts: Catalog, registry: SqlRegistry, prefix: str, ready: Contract, tmp_path: Path
) -> None:
    force_status(registry, V2, Status.ACTIVE)
    force_status(registry, V1, Status.DEPRECATED)
    result = run_audit(connection, contracts, registry, prefix, ready, long_ago())
    assert result.verdict is Verdict.PASS, result.figures()["blockers"]

    outcome, retiring, catalog = retire_declared(result, registry, connection, contracts, tmp_path)

    assert outcome.retired, outcome.reasons
    assert registry.effective(V1).status is Status.RETIRED  # type: ignore[union-attr]
    bundle = tmp_path / "bundles" / V1
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert {"contract.yaml", "payload.schema.json", "topology.json", "evidence.json", "audit.json"} <= set(
        manifest["files"]
    )
    assert json.loads((bundle / "evidence.json").read_text())["verdict"] == "pass"
    live = json.loads((bundle / "topology.json").read_text())["live"]
    assert {q["name"] for q in live} == {q.name for q in plan_topology(ready).queues}
    for queue in plan_topology(ready).queues_of(Role.CONSUMER, Role.RETRY, Role.DLQ, Role.PARKING_LOT):
        assert passive_queue(connection, queue.name) is None, queue.name
    assert exchange_exists(connection, ready.transport.exchange)  # v2 still publishes there
    assert passive_queue(connection, contracts.contracts[V2].consumers[0].queue) is not None

    again = retire_if_proven(  # a retried task finds it retired: nothing more to do, nothing fails
        retiring,
        catalog,
        registry,
        connection,
        actor="test",
        run_id="test",
        now=datetime.now(UTC),
        bundle_root=tmp_path / "bundles",
    )
    assert again.retired and again.removal is not None and again.removal["deleted"] == []
    assert len([t for t in registry.transitions(V1) if t.to_status is Status.RETIRED]) == 1


def archive_days(root: Path, contract: Contract, days_ago: tuple[int, ...]) -> list[str]:
    """Three archived messages of ``contract`` on each of ``days_ago`` (days before now), as the archiver writes
    them; their messageIds."""
    fixture = sorted((contract.directory / "fixtures" / "valid").glob("*.json"))[0]
    ids = []
    for age in days_ago:
        received = datetime.now(UTC) - timedelta(days=age)
        folder = root / contract.transport.exchange / f"date={received.date().isoformat()}"
        folder.mkdir(parents=True)
        lines = []
        for n in range(3):
            envelope = json.loads(fixture.read_text())
            envelope["metadata"]["messageId"] = f"archived-{age}-{n}"
            ids.append(envelope["metadata"]["messageId"])
            lines.append(json.dumps(archive_record(contract, envelope, received.isoformat())))
        (folder / "part-0000.jsonl").write_text("\n".join(lines) + "\n")
    return ids


def test_a_bundle_kept_after_archive_retention_names_the_deleted_partitions_and_claims_none_of_them(
    connection: Any, contracts: Catalog, registry: SqlRegistry, prefix: str, ready: Contract, tmp_path: Path
) -> None:
    """Archive retention deleted every partition that held the version before it retired (the successor's newer
    days stay): the bundle's sample holds none of the deleted messages, retention.json names the deleted day from
    the retention's evidence, and the audit's retention check says the archive was deleted, not never archived."""
    force_status(registry, V2, Status.ACTIVE)
    force_status(registry, V1, Status.DEPRECATED)
    archive_days(tmp_path / "archive", ready, (120,))  # retention.archive: 90d
    archive_days(tmp_path / "archive", contracts.contracts[V2], (10,))
    run = apply_archive_retention(contracts, tmp_path / "archive", now=datetime.now(UTC), holds={}, registry=registry)
    (gone,) = run.deleted
    scanned = LastSeen({V2: TypeLastSeen(datetime.now(UTC) - timedelta(days=10), 3)}, scanned=True, source="test")
    result = run_audit(connection, contracts, registry, prefix, ready, scanned)
    assert result.verdict is Verdict.PASS, result.figures()["blockers"]

    outcome, _, _ = retire_declared(result, registry, connection, contracts, tmp_path)

    assert outcome.retired, outcome.reasons
    bundle = tmp_path / "bundles" / V1
    assert "retention.json" in json.loads((bundle / "manifest.json").read_text())["files"]
    kept = json.loads((bundle / "retention.json").read_text())
    assert kept["exchange"] == ready.transport.exchange and kept["days"] == [gone.day.isoformat()]
    assert kept["records"] == 3 and f"deleted 1 partition(s) of {ready.transport.exchange}" in kept["note"]
    (deletion,) = kept["runs"]
    (evidence,) = registry.evidence(V1, EvidenceKind.ARCHIVE_RETENTION)
    assert deletion["evidenceId"] == evidence.id and deletion["window"] == "90d"
    assert deletion["partitions"] == [{"day": gone.day.isoformat(), "files": 1, "records": 3, "bytes": gone.bytes}]
    assert (bundle / "sample.jsonl").read_text() == ""  # nothing of the deleted day claimed
    retention = json.loads((bundle / "audit.json").read_text())["checks"]["retention"]["figures"]
    assert retention["neverArchived"] is False and retention["deletedByRetention"]["evidenceId"] == evidence.id


def test_without_the_management_api_the_audit_cannot_pass(
    connection: Any, contracts: Catalog, registry: SqlRegistry, prefix: str, provisioned: Contract
) -> None:
    result = audit_version(
        provisioned,
        contracts,
        registry,
        connection,
        long_ago(),
        now=datetime.now(UTC),
        run_id="test",
        snapshot=None,
        dead_letter_scope=prefix,
    )
    assert result.verdict is Verdict.UNKNOWN
    assert set(result.failed_checks) == {"queues", "readers", "dead_letters"}


def test_an_audit_reads_the_recorders_coverage_once_for_the_readers_and_the_successors_consumers(
    connection: Any, contracts: Catalog, registry: SqlRegistry, prefix: str, ready: Contract, monkeypatch: Any
) -> None:
    """One walk: the readers check and the consumers' moves to the successor judge the same coverage read."""
    windows: list[datetime] = []
    read = registry.coverage

    def counted(since: datetime) -> Any:
        windows.append(since)
        return read(since)

    monkeypatch.setattr(registry, "coverage", counted)

    result = run_audit(connection, contracts, registry, prefix, ready, long_ago())

    assert result.verdict is Verdict.PASS, result.figures()["blockers"]
    assert {check.name for check in result.checks} >= {"readers", "successor_consumers"}
    assert len(set(windows)) == 1  # one window (a running recorder may be asked again while the audit waits for it)

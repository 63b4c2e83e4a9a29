"""``contractctl audit`` against the real broker, scanning a small archive with Spark in-process (shared session)."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.support.broker import wait_for_stats
from tests.support.cli import CONTRACTCTL
from tests.support.contracts import V1, prefixed_catalog
from tests.support.environment import user_environment
from tests.support.retirement import provision_family, seed_quiet_history

from contract_platform.amqp import ManagementClient, plan_topology
from contract_platform.amqp.topology import Role
from contract_platform.catalog import load_catalog
from contract_platform.cli.main import main
from contract_platform.store import SqlRegistry

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.timeout(300)]


def quiet_version(
    connection: Any, prefix: str, management: ManagementClient, catalog_dir: Path, tmp_path: Path, recording: datetime
) -> tuple[Any, str, str]:
    """v1's family provisioned under ``prefix``, a registry whose quiet history the fixture ``recording`` covers
    (its file is the one that fixture records into), and a one-record archive whose last message is 30 days old:
    an audit with nothing in the way. Returns v1, the registry URL and that message's ``receivedAt``."""
    catalog = load_catalog(prefixed_catalog(tmp_path / "contracts", prefix, catalog_dir))
    v1 = catalog.contracts[V1]
    provision_family(connection, catalog)
    registry_url = f"sqlite:///{tmp_path / 'registry.db'}"
    with SqlRegistry.open(registry_url) as store:
        seed_quiet_history(store, v1, datetime.now(UTC), coverage_until=recording)
    day = tmp_path / "archive" / v1.transport.exchange / "date=2026-07-01"
    day.mkdir(parents=True)
    last = (datetime.now(UTC) - timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    day.joinpath("a.jsonl").write_text(
        json.dumps({"receivedAt": last, "properties": {"type": V1}, "body": "{}"}) + "\n"
    )
    wait_for_stats(management, [q.name for q in plan_topology(v1).queues_of(Role.CONSUMER, Role.RETRY, Role.DLQ)])
    return v1, registry_url, last


def test_audit_verb_runs_the_collectors_with_spark_and_exits_by_verdict(
    spark: Any,  # the shared session: build_session reuses it instead of starting another
    connection: Any,
    prefix: str,
    management: ManagementClient,
    catalog_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    recording: datetime,
) -> None:
    v1, registry_url, last = quiet_version(connection, prefix, management, catalog_dir, tmp_path, recording)
    argv = [
        "audit",
        V1,
        "--catalog",
        str(tmp_path / "contracts"),
        "--registry",
        registry_url,
        "--archive",
        str(tmp_path / "archive"),
        "--dead-letter-prefix",
        prefix,
        "--format",
        "json",
    ]

    assert main(argv) == 0, capsys.readouterr()
    clear = json.loads(capsys.readouterr().out)
    assert clear["verdict"] == "pass" and clear["failed_checks"] == []
    assert clear["checks"]["retention"]["figures"]["lastArchivedAt"] == last.replace(".000Z", "Z")

    connection.channel().basic_consume(v1.consumers[0].queue, lambda *args: None)
    assert main([*argv, "--record"]) == 1
    blocked = json.loads(capsys.readouterr().out)
    assert blocked["failed_checks"] == ["queues", "readers"]
    assert Path(blocked["report"]).exists()
    with SqlRegistry.open(registry_url) as store:
        evidence = store.latest_evidence(V1, "retirement_audit")
        assert evidence is not None and evidence.figures["failed_checks"] == ["queues", "readers"]
        assert len(store.observations(V1)) == 4 * len(
            plan_topology(v1).queues_of(Role.CONSUMER, Role.RETRY, Role.DLQ, Role.PARKING_LOT)
        )


def test_an_audit_whose_archive_scan_outlasts_the_brokers_heartbeat_keeps_its_connection(
    connection: Any,
    prefix: str,
    management: ManagementClient,
    catalog_dir: Path,
    tmp_path: Path,
    rabbitmq_url: str,
    recording: datetime,
) -> None:
    """A fresh process starts Spark for the scan (seconds) while it holds the connection the audit then uses: with a
    heartbeat of one second the broker drops a connection left silent that long, unless its beats go on."""
    v1, registry_url, last = quiet_version(connection, prefix, management, catalog_dir, tmp_path, recording)
    environment = user_environment(
        "/", CONTRACT_RABBITMQ_URL=f"{rabbitmq_url}?heartbeat=1", CONTRACT_PLATFORM_HOME=str(tmp_path / "home")
    )
    argv = ["audit", V1, "--catalog", str(tmp_path / "contracts"), "--registry", registry_url]
    argv += ["--archive", str(tmp_path / "archive"), "--dead-letter-prefix", prefix, "--format", "json"]

    done = subprocess.run(
        [str(CONTRACTCTL), *argv], env=environment, capture_output=True, text=True, timeout=240, check=False
    )

    assert done.returncode == 0, done.stderr[-3000:]
    audit = json.loads(done.stdout)
    assert audit["verdict"] == "pass" and audit["checks"]["retention"]["figures"]["lastArchivedAt"] == last.replace(
        ".000Z", "Z"
    )

"""The platform under CeleryExecutor with two workers on two machines (docs/deploy.md#several-machines).

``tests/support/celery_cluster.py`` starts the scheduler, dag-processor and api-server, and two
``airflow celery worker`` processes with Celery's default **prefork** pool, each in a mount and UTS
namespace of its own (hostname, ``/etc/hosts``, ``/tmp``, ``HOME``, ``AIRFLOW_HOME``, the checkout's
``data/``). Only the declared volumes are shared. Worker ``a`` serves Airflow's default queue,
worker ``b`` the Spark queue (``CONTRACT_SPARK_QUEUE``), so every Spark task runs on another machine
than the tasks that plan it and read its results. Metadata and Celery's results are on PostgreSQL,
Celery's broker is a Redis database of the test's own, the platform's broker a RabbitMQ virtual host
of its own, the registry a PostgreSQL database of its own.

1. ``contract_change`` (triggered): the registry learns the catalogue; then a stricter
   ``order.order-created.v1`` is replayed against 100 archived messages: ``plan_replay`` and
   ``report_replay`` on worker-a, ``replay_traffic`` (Spark) on worker-b, and the figures the
   single-machine test (``tests/airflow/test_contract_change.py``) gives: accepted on evidence,
   100 replayed, 0 rejected.
2. The **scheduled** runs the scheduler makes when the DAGs are unpaused:
   - ``topic_archive_validation`` and ``envelope_quality`` over their data interval (yesterday): the
     Spark jobs receive that day, count only its 30 messages (not today's 100), and the validation
     writes its incremental state;
   - ``dual_publish_migration`` in bridge mode: ``run_bridge`` starts its translation helper inside a
     prefork task and moves 20 v1 messages to v2; parity (Spark, on worker-b) finds all 20.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.support.celery_cluster import CeleryCluster, ClusterUnavailable, check_host, redis_database
from tests.support.databases import scratch_database
from tests.support.migration import Traffic, activate
from tests.support.replay import ORDER, tighten, write_archive, write_order_day
from tests.support.served_airflow import PLATFORM_DAGS, REPO, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.airflow, pytest.mark.timeout(1500)]

V1 = "billing.invoice-issued.v1"
V2 = "billing.invoice-issued.v2"
EVIDENCE_DAGS = ("topic_archive_validation", "envelope_quality")
YESTERDAY_MESSAGES = 30
TODAY_MESSAGES = 100
BRIDGED = 20
WORKER_A, WORKER_B = "worker-a", "worker-b"


@pytest.fixture()
def cluster(vhost: str, postgres_url: str) -> Iterator[CeleryCluster]:
    try:
        check_host()
    except ClusterUnavailable as exc:
        if os.environ.get("CI"):
            raise AssertionError(f"CI must run the two-worker test: {exc}") from exc
        pytest.skip(str(exc))
    # Outside /tmp: each worker mounts a private /tmp of its own over it.
    work = Path("/var/tmp") / f"contract-platform-celery-{uuid.uuid4().hex[:8]}"
    work.mkdir(parents=True)
    with (
        redis_database() as celery_broker,
        scratch_database(postgres_url, "airflow_celery") as metadata,
        scratch_database(postgres_url, "registry_celery") as registry,
    ):
        airflow = CeleryCluster(work, vhost, metadata, registry_url=registry, broker_url=celery_broker)
        shutil.copytree(REPO / "contracts", airflow.shared["catalog"])
        try:
            airflow.start()
            yield airflow
        finally:
            airflow.stop()
            left = airflow.stragglers()
            shutil.rmtree(work, ignore_errors=True)
            assert not left, f"processes of the cluster are still running: {left}"


def hosts(cluster: CeleryCluster, dag_id: str, run_id: str) -> dict[str, tuple[Any, Any]]:
    return {task: (ti["state"], ti["hostname"]) for task, ti in cluster.task_instances(dag_id, run_id).items()}


def scheduled_run(cluster: CeleryCluster, dag_id: str, timeout: float) -> dict[str, Any]:
    """The first run the scheduler made for ``dag_id`` (run type ``scheduled``), once it has ended."""

    def ended() -> dict[str, Any] | None:
        runs = [r for r in cluster.runs(dag_id) if r["run_type"] == "scheduled"]
        return runs[0] if runs and runs[0]["state"] in ("success", "failed") else None

    run: dict[str, Any] = wait_for(f"the scheduled {dag_id} run", ended, timeout, cluster.output)
    assert run["state"] == "success", cluster.diagnose(dag_id, run["dag_run_id"])
    return run


def test_the_platform_runs_on_two_celery_workers(cluster: CeleryCluster, vhost: str) -> None:
    from tests.support.broker import url_of

    from contract_platform.amqp import Publisher, open_connection
    from contract_platform.amqp.connection import close_quietly
    from contract_platform.amqp.topology import tap_queue_name
    from contract_platform.bridge import prepare_tap
    from contract_platform.bridge.translation import resolve_route
    from contract_platform.catalog import load_catalog
    from contract_platform.envelope import EnvelopeValidator
    from contract_platform.runs import run_file_name
    from contract_platform.store import SqlRegistry

    wait_for("the api-server", cluster.answers, 300, cluster.output)
    cluster.log_in()
    wait_for("the platform's DAGs", lambda: cluster.dag_ids() >= PLATFORM_DAGS, 300, cluster.output)
    wait_for("both Celery workers", cluster.workers_ready, 180, cluster.output)
    catalog_dir, home = cluster.shared["catalog"], cluster.shared["home"]
    registry_url = cluster.env["CONTRACT_REGISTRY_URL"]
    catalog = load_catalog(catalog_dir)
    with SqlRegistry.open(registry_url) as store:  # the migration's two versions, active before it starts
        activate(store, V2, catalog.contracts[V2].version)
        activate(store, V1, catalog.contracts[V1].version)

    # 1. contract_change, its replay on the Spark worker.
    cluster.unpause("contract_change")
    first = cluster.trigger_with("contract_change", {})
    cluster.wait_run("contract_change", first, 600)
    tighten(catalog_dir, compatibility={"mode": "BACKWARD", "tightening": "evidence", "minMessages": 50})
    today = datetime.now(UTC)
    write_archive(cluster.shared["archive"], catalog_dir, [10_000 + n for n in range(TODAY_MESSAGES)], today)
    changed = cluster.trigger_with("contract_change", {})
    cluster.wait_run("contract_change", changed, 600)
    ran = hosts(cluster, "contract_change", changed)
    assert ran["plan_replay"] == ("success", WORKER_A), ran
    assert ran["replay_traffic"] == ("success", WORKER_B), ran
    assert ran["report_replay"] == ("success", WORKER_A), ran
    assert {state for state, _ in ran.values()} == {"success"}, ran
    with SqlRegistry.open(registry_url) as store:
        replay = store.evidence(ORDER, "replay", limit=1)[0]
        assert replay.run_id == changed and replay.contract_version == "1.3.0"
        figures = replay.figures
        assert (figures["decision"], figures["replayed"], figures["rejected"]) == ("accepted-on-evidence", 100, 0)

    # 2. Scheduled runs: the evidence DAGs over yesterday, and the bridge.
    yesterday = today - timedelta(days=1)
    write_order_day(cluster.shared["archive"], catalog_dir, yesterday, YESTERDAY_MESSAGES)
    connection = open_connection(url_of(vhost))
    try:
        route = resolve_route(load_catalog(catalog_dir), V2)
        prepare_tap(connection, route, tap_queue_name(V1))  # the bridge's tap, before v1 traffic flows
        Publisher(connection, EnvelopeValidator(load_catalog(catalog_dir))).publish_many(
            Traffic(catalog_dir).make(BRIDGED)
        )
    finally:
        close_quietly(connection)
    for dag_id in (*EVIDENCE_DAGS, "dual_publish_migration"):
        cluster.unpause(dag_id)

    day, next_day = yesterday.date().isoformat(), today.date().isoformat()
    validation = scheduled_run(cluster, "topic_archive_validation", 900)
    assert (validation["data_interval_start"][:10], validation["data_interval_end"][:10]) == (day, next_day)
    ran = hosts(cluster, "topic_archive_validation", validation["dag_run_id"])
    assert ran["validate_archive"] == ("success", WORKER_B) and ran["plan_paths"] == ("success", WORKER_A), ran
    report = _json(home / "reports" / "archive-validation" / f"{run_file_name(validation['dag_run_id'])}.json")
    assert (report["interval"]["since"], report["interval"]["until"]) == (day, next_day), report["interval"]
    assert report["by_type"][ORDER]["records"] == YESTERDAY_MESSAGES, report["by_type"]
    state = home / "state" / "archive-validation"
    assert any(path.is_file() for path in state.rglob("*")), f"no incremental state under {state}"

    quality = scheduled_run(cluster, "envelope_quality", 900)
    assert (quality["data_interval_start"][:10], quality["data_interval_end"][:10]) == (day, next_day)
    ran = hosts(cluster, "envelope_quality", quality["dag_run_id"])
    assert ran["check_envelopes"] == ("success", WORKER_B), ran
    checked = _json(home / "reports" / "envelope_quality" / f"{run_file_name(quality['dag_run_id'])}.json")
    assert (checked["since"], checked["until"]) == (day, next_day)
    assert {t["message_type"]: t["rows"] for t in checked["types"]}[ORDER] == YESTERDAY_MESSAGES, checked["types"]

    migration = scheduled_run(cluster, "dual_publish_migration", 900)
    ran = hosts(cluster, "dual_publish_migration", migration["dag_run_id"])
    assert ran["run_bridge"] == ("success", WORKER_A), ran
    assert ran["check_parity"] == ("success", WORKER_B), ran
    with SqlRegistry.open(registry_url) as store:
        parity = store.latest_evidence(V1, "migration_parity")
        assert parity is not None and parity.run_id == migration["dag_run_id"]
        figures = parity.figures
        assert (figures["v1_total"], figures["v2_total"], figures["missing"], figures["parity"]) == (
            BRIDGED,
            BRIDGED,
            0,
            1.0,
        ), figures


def _json(path: Path) -> Any:
    import json

    assert path.exists(), f"{path} was not written on the shared volume"
    return json.loads(path.read_text("utf-8"))

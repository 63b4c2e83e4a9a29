"""The platform under a real Airflow, the way users meet it: the serve command, then the UI and REST API.

``bash scripts/airflow-local`` starts the scheduler, dag-processor, triggerer and api-server
(LocalExecutor; metadata in a PostgreSQL database of the test's own, dropped afterwards) on a free
port, against a scratch AIRFLOW_HOME, a scratch copy of the catalogue, a scratch CONTRACT_PLATFORM_HOME
and a RabbitMQ virtual host of its own. Then:

1. the scheduled ``contract_catalog_watch`` run emits asset events and the scheduler starts
   ``contract_change`` from them; a changed contract goes through the same chain again;
2. ``topic_archive_validation`` and ``envelope_quality``, triggered through the REST API, submit
   their Spark jobs through ``spark_default`` (local Spark) and succeed;
3. ``retirement_audit`` runs;
4. the REST API of the Contracts page and the page itself show that the registry moved.

Another test lets the scheduler run ``housekeeping`` once (a minute or two): its ``clean_airflow_metadata`` task, on
a LocalExecutor task runner that Airflow keeps out of its metadata database, cleans that database through
``CONTRACT_AIRFLOW_DB_URL`` (which the serve command sets): a run and an audit-log row dated 200 days back are gone.

A second test imports a generated estate (``ESTATE`` new versions, ``tests/support/estate.py``) on a
private RabbitMQ node with a raised ``ulimit -n`` (the shared node has 1,024 file handles; the estate
declares about ten queues per version): the watch emits a bounded number of batched events and
``contract_change`` settles every version (benchmarks/README.md, "Estate scale: first import in Airflow").

Every process the test started is stopped, also on failure (its process group, then anything still
running with its AIRFLOW_HOME). On failure the tail of the failed tasks' logs is printed.
To stay within a few minutes on two cores, DAGs start paused and only those under test are unpaused;
the run the scheduler makes for the last missed day when a daily DAG is unpaused is cancelled, and
``dual_publish_migration`` (a bounded bridge every 30 minutes) stays paused: ``tests/airflow`` runs
it with ``dag.test()``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.broker import url_of
from tests.support.databases import scratch_database
from tests.support.estate import generate_catalog
from tests.support.ports import closed_port
from tests.support.private_node import NodeUnavailable, PrivateNode
from tests.support.served_airflow import (
    PLATFORM_DAGS,
    REPO,
    Served,
    first_import,
    wait_asset_triggered_change,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.airflow, pytest.mark.timeout(900)]

UNDER_TEST = (
    "contract_catalog_watch",
    "contract_change",
    "topic_archive_validation",
    "envelope_quality",
    "retirement_audit",
)
CHANGED = "quote.quote-approved.v1"
PROMOTED = "billing.invoice-issued.v1"  # declared active: experimental until traffic gives evidence
ESTATE = 300  # new versions in the estate test: ~3,000 queues, a few minutes on two cores


@pytest.fixture()
def airflow_database(postgres_url: str) -> Iterator[str]:
    """A PostgreSQL database of this test's own for Airflow's metadata (the serve command creates it); dropped after."""
    with scratch_database(postgres_url, "airflow_e2e", create=False) as url:
        yield url


@pytest.fixture()
def served(tmp_path: Path, vhost: str, airflow_database: str) -> Iterator[Served]:
    import shutil

    shutil.copytree(REPO / "contracts", tmp_path / "contracts")
    airflow = Served(tmp_path, vhost, airflow_database)
    try:
        airflow.start()
        yield airflow
    finally:
        airflow.stop()
        assert not airflow.stragglers(), "processes of the served Airflow are still running"


def publish_sample_traffic(work: Path, vhost: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Producers publish through the platform's publisher into the served platform's broker and registry."""
    from tests.support.scripts import load_script

    publish_traffic = load_script("main_job").publish_traffic

    monkeypatch.setenv("CONTRACT_CATALOG", str(work / "contracts"))
    monkeypatch.setenv("CONTRACT_PLATFORM_HOME", str(work / "data"))
    monkeypatch.setenv("CONTRACT_REGISTRY_URL", f"sqlite:///{work / 'data' / 'registry.db'}")
    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", url_of(vhost))
    return publish_traffic(40)


def test_the_platform_runs_under_a_real_scheduler(served: Served, vhost: str, monkeypatch: pytest.MonkeyPatch):
    airflow = served
    started = time.monotonic()
    wait_for("the api-server", airflow.answers, 300, airflow.output)
    airflow.log_in()
    dags = wait_for("the platform's DAGs", lambda: (ids := airflow.dag_ids()) >= PLATFORM_DAGS and ids, 300)
    assert dags == PLATFORM_DAGS, f"expected only the platform's DAGs, got {sorted(dags)}"
    print(f"DAGs listed {time.monotonic() - started:.0f}s after the serve command started")
    airflow.unpause("contract_catalog_watch")
    airflow.unpause("contract_change")

    # 1. The scheduled watch fingerprints every contract; its asset events start contract_change.
    watch = wait_for("the scheduled contract_catalog_watch run", lambda: airflow.runs("contract_catalog_watch"), 120)
    assert watch[0]["run_type"] == "scheduled"
    airflow.wait_run("contract_catalog_watch", watch[0]["dag_run_id"], 180)
    first = wait_asset_triggered_change(airflow, set(), 300)

    # ... and a changed contract goes through the same chain.
    contract = airflow.work / "contracts" / "quote" / "quote-approved" / "v1" / "contract.yaml"
    text = contract.read_text("utf-8")
    contract.write_text(text.replace("description: ", "description: (reworded) ", 1), "utf-8")
    run_id = airflow.trigger("contract_catalog_watch")
    airflow.wait_run("contract_catalog_watch", run_id, 180)
    changed = wait_asset_triggered_change(airflow, {r["dag_run_id"] for r in first}, 300)
    events = airflow.request("GET", "/api/v2/assets/events?source_dag_id=contract_catalog_watch&limit=100")
    assert any(
        e["source_run_id"] == run_id and (e.get("extra") or {}).get("messageType") == CHANGED
        for e in events["asset_events"]
    ), events
    assert changed

    contracts = {c["messageType"]: c for c in airflow.request("GET", "/contracts/api/contracts")["contracts"]}
    assert contracts[PROMOTED]["effective"] == "experimental", contracts[PROMOTED]

    # 2. Evidence from traffic, through spark_default on local Spark.
    print(f"contract changes through the scheduler: {time.monotonic() - started:.0f}s")
    sent = publish_sample_traffic(airflow.work, vhost, monkeypatch)
    assert sent.get(PROMOTED), sent
    for dag_id in ("topic_archive_validation", "envelope_quality", "retirement_audit"):
        airflow.unpause_without_catch_up(dag_id)
    validation = airflow.trigger("topic_archive_validation")
    airflow.wait_run("topic_archive_validation", validation, 420)
    print(f"topic_archive_validation: {time.monotonic() - started:.0f}s")
    quality = airflow.trigger("envelope_quality")
    airflow.wait_run("envelope_quality", quality, 420)
    print(f"envelope_quality: {time.monotonic() - started:.0f}s")

    # 3. The daily audit.
    audit = airflow.trigger("retirement_audit")
    airflow.wait_run("retirement_audit", audit, 240)
    print(f"retirement_audit: {time.monotonic() - started:.0f}s")

    # 4. The registry moved, as the Contracts page's API and the page itself show.
    detail = airflow.request("GET", f"/contracts/api/contracts/{PROMOTED}")
    assert detail["effective"] == "active", detail
    promotion = [t for t in detail["history"] if t["to"] == "active"]
    assert promotion and promotion[-1]["runId"] in (validation, quality), detail["history"]
    assert {"archive_validation", "envelope_quality"} <= set(detail["latestEvidence"]), detail["latestEvidence"]
    page = airflow.request("GET", f"/contracts/c/{PROMOTED}", raw=True)
    assert PROMOTED in page and promotion[-1]["runId"] in page
    print(f"whole scenario: {time.monotonic() - started:.0f}s")


def _metadata(url: str, statement: str, **params: object) -> list[tuple[object, ...]]:
    """One statement on the served Airflow's metadata database (PostgreSQL), committed; its rows, if any."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as connection:
            found = connection.execute(text(statement), params)
            return [tuple(row) for row in found] if found.returns_rows else []
    finally:
        engine.dispose()


def test_the_housekeeping_dag_cleans_airflows_metadata_under_the_real_scheduler(
    tmp_path: Path, vhost: str, airflow_database: str
):
    """The scheduled housekeeping run, on a LocalExecutor task runner (whose own metadata URL Airflow blocks), runs
    airflow db clean on the metadata database CONTRACT_AIRFLOW_DB_URL names: a run and an audit-log row 200 days
    old are gone afterwards, the run itself stays, and the task says which database it cleaned from which host."""
    import shutil
    from datetime import UTC, datetime, timedelta

    shutil.copytree(REPO / "contracts", tmp_path / "contracts")
    airflow = Served(tmp_path, vhost, airflow_database)
    airflow.env["CONTRACT_JVM_CLASS_CACHE"] = str(tmp_path / "class-cache")  # pruned by the run: the test's own
    old = datetime.now(UTC) - timedelta(days=200)
    try:
        airflow.start()
        wait_for("the api-server", airflow.answers, 300, airflow.output)
        airflow.log_in()
        wait_for("the housekeeping DAG", lambda: "housekeeping" in airflow.dag_ids(), 300)
        # An old run: triggered while its DAG is paused (it never starts), then dated 200 days back and finished.
        stale = airflow.trigger("archive_retention")
        _metadata(airflow_database, "UPDATE dag_run SET state = 'failed', start_date = :at, end_date = :at "
                  "WHERE dag_id = 'archive_retention' AND run_id = :run", at=old, run=stale)  # fmt: skip
        [(entry,)] = _metadata(airflow_database, "INSERT INTO log (dttm, dag_id, event, owner) "
                               "VALUES (:at, 'archive_retention', 'e2e-old-entry', 'e2e') RETURNING id", at=old)  # fmt: skip

        airflow.unpause("housekeeping")  # the scheduler starts the run of the last day at once
        runs = wait_for("the scheduled housekeeping run", lambda: airflow.runs("housekeeping"), 180)
        run_id = runs[0]["dag_run_id"]
        airflow.wait_run("housekeeping", run_id, 300)

        said = airflow.request(
            "GET", f"/api/v2/dags/housekeeping/dagRuns/{run_id}/taskInstances/clean_airflow_metadata/xcomEntries/"
            "return_value?deserialize=true",
        )["value"]  # fmt: skip
    finally:
        airflow.stop()
    assert not airflow.stragglers(), "processes of the served Airflow are still running"

    assert not _metadata(airflow_database, "SELECT 1 FROM dag_run WHERE run_id = :run", run=stale)
    assert not _metadata(airflow_database, "SELECT 1 FROM log WHERE id = :id", id=entry)
    assert _metadata(airflow_database, "SELECT 1 FROM dag_run WHERE dag_id = 'housekeeping' AND run_id = :run",
                     run=run_id)  # fmt: skip
    [cleaned] = said if isinstance(said, list) else json.loads(said)
    print(f"clean_airflow_metadata said: {cleaned}")
    assert cleaned["kind"] == "airflow_metadata" and cleaned["removed"] >= 2, cleaned
    database = airflow_database.rsplit("/", 1)[-1]
    assert "airflow db clean on " in cleaned["note"] and database in cleaned["note"], cleaned
    assert "run on " in cleaned["note"], cleaned


@pytest.fixture()
def estate_node(tmp_path: Path) -> Iterator[PrivateNode]:
    """A private RabbitMQ node with 65,536 open files: the estate's queues would exhaust the shared node."""
    try:
        node = PrivateNode(tmp_path / "node")
        node.start(nofile=65_536)
    except NodeUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield node
    finally:
        node.stop()


def test_a_first_import_of_an_estate_is_batched_and_settles(
    tmp_path: Path, estate_node: PrivateNode, airflow_database: str
):
    from contract_platform.change import MAX_EVENTS

    types = set(generate_catalog(tmp_path / "contracts", ESTATE))
    # The private node runs no management API; its port is one nobody listens on (held closed by this test), so
    # that nothing asks the shared node's API (127.0.0.1:15672) about the private node's queues.
    with closed_port() as port:
        nowhere = f"http://127.0.0.1:{port}"
        airflow = Served(tmp_path, "/", airflow_database, broker_url=estate_node.url, management_url=nowhere)
        try:
            figures = first_import(airflow, types, f"sqlite:///{tmp_path / 'data' / 'registry.db'}", timeout=600)
        finally:
            airflow.stop()
    assert not airflow.stragglers(), "processes of the served Airflow are still running"

    for run in figures["runs"]:
        assert run["state"] == "success", airflow.diagnose("contract_change", run["dag_run_id"])
    # Batched: the watch's task instances and events do not grow with the estate.
    assert len(figures["watch_task_instances"]) <= 2 + MAX_EVENTS, figures["watch_task_instances"]
    assert len(figures["events"]) == 1  # up to 2,500 versions: one event, one contract_change run
    assert {t for e in figures["events"] for t in e["extra"]["messageTypes"]} == types
    print({k: v for k, v in figures.items() if k not in ("runs", "events")})

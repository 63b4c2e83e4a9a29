"""The platform under a real Airflow, the way users meet it: the serve command, then the UI and REST API.

``bash scripts/airflow-local`` starts the scheduler, dag-processor, triggerer and api-server
(LocalExecutor, SQLite) on a free port, against a scratch AIRFLOW_HOME, a scratch copy of the
catalogue, a scratch CONTRACT_PLATFORM_HOME and a RabbitMQ virtual host of its own. Then:

1. the scheduled ``contract_catalog_watch`` run emits asset events and the scheduler starts
   ``contract_change`` from them; a changed contract goes through the same chain again;
2. ``topic_archive_validation`` and ``envelope_quality``, triggered through the REST API, submit
   their Spark jobs through ``spark_default`` (local Spark) and succeed;
3. ``retirement_audit`` runs;
4. the REST API of the Contracts page and the page itself show that the registry moved.

Every process the test started is stopped, also on failure (its process group, then anything still
running with its AIRFLOW_HOME). On failure the tail of the failed tasks' logs is printed.
To stay within a few minutes on two cores, DAGs start paused and only those under test are unpaused;
the run the scheduler makes for the last missed day when a daily DAG is unpaused is cancelled, and
``dual_publish_migration`` (a bounded bridge every 30 minutes) stays paused: ``tests/airflow`` runs
it with ``dag.test()``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.broker import url_of
from tests.support.environment import user_environment
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.airflow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
UNDER_TEST = (
    "contract_catalog_watch",
    "contract_change",
    "topic_archive_validation",
    "envelope_quality",
    "retirement_audit",
)
PLATFORM_DAGS = {*UNDER_TEST, "dual_publish_migration"}
CHANGED = "quote.quote-approved.v1"
PROMOTED = "billing.invoice-issued.v1"  # declared active: experimental until traffic gives evidence
TERMINAL = {"success", "failed"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(what: str, check: Callable[[], Any], timeout: float, on_timeout: Callable[[], str] = str) -> Any:
    """Poll ``check`` every second until it returns something truthy; fail with ``what`` and the diagnosis."""
    return wait_until(check, timeout, 1.0, what=what, diagnose=on_timeout)


class Served:
    """``scripts/airflow-local`` in its own process group, and the REST calls the test makes."""

    def __init__(self, work: Path, vhost: str) -> None:
        self.work = work
        self.home = work / "airflow"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = work / "airflow-local.log"
        self.env = user_environment(
            vhost,
            AIRFLOW_HOME=str(self.home),
            CONTRACT_PLATFORM_HOME=str(work / "data"),
            CONTRACT_CATALOG=str(work / "contracts"),
            # Budget on a 2-core machine: two Spark cores; DAGs not under test stay paused.
            AIRFLOW_CONN_SPARK_DEFAULT=json.dumps({"conn_type": "spark", "host": "local[2]"}),
            AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION="True",
        )
        self.process: subprocess.Popen[bytes] | None = None
        self.token = ""

    # --- processes ---------------------------------------------------------------------------

    def start(self) -> None:
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                ["bash", str(REPO / "scripts" / "airflow-local"), "--port", str(self.port)],
                cwd=REPO,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):  # components that outlived the standalone parent
                os.killpg(self.process.pid, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while (left := self.stragglers()) and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)

    def stragglers(self) -> list[int]:
        """Processes started for this test (task runners, spark-submit JVMs): they carry its AIRFLOW_HOME."""
        marker = f"AIRFLOW_HOME={self.home}\0".encode()
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            try:
                if marker in (proc / "environ").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
        return found

    def output(self, lines: int = 60) -> str:
        text = self.log_path.read_text("utf-8", errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    # --- REST ----------------------------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, *, raw: bool = False) -> Any:
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(
            f"{self.base}{path}",
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers=headers,
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            data = response.read().decode("utf-8")
        return data if raw else json.loads(data or "null")

    def answers(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            pytest.fail(f"scripts/airflow-local exited with {self.process.returncode}\n{self.output()}")
        try:
            return self.request("GET", "/api/v2/monitor/health")["metadatabase"]["status"] == "healthy"
        except OSError:
            return False

    def log_in(self) -> None:
        from contract_platform_airflow.serve import admin_password

        body = {"username": "admin", "password": admin_password(self.home)}
        self.token = self.request("POST", "/auth/token", body)["access_token"]

    def dag_ids(self) -> set[str]:
        return {d["dag_id"] for d in self.request("GET", "/api/v2/dags?limit=100")["dags"]}

    def unpause(self, dag_id: str) -> None:
        """Tried again while the api-server answers 5xx: the scheduler, the dag-processor and the task
        runners write the same SQLite file, and a write that waited out SQLite's lock answers 500."""
        deadline = time.monotonic() + 60
        while True:
            try:
                self.request("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})
                return
            except urllib.error.HTTPError as exc:
                if exc.code < 500 or time.monotonic() > deadline:
                    raise
            time.sleep(1.0)

    def unpause_without_catch_up(self, dag_id: str) -> None:
        """Unpause a daily DAG and cancel the run the scheduler makes at once for the last missed day.

        That run would repeat the Spark work of the REST-triggered run under test on two cores.
        """
        self.unpause(dag_id)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            scheduled = [r for r in self.runs(dag_id) if r["run_type"] == "scheduled"]
            settled = bool(scheduled)
            for run in scheduled:
                if run["state"] not in TERMINAL:
                    try:
                        self.request("PATCH", f"/api/v2/dags/{dag_id}/dagRuns/{run['dag_run_id']}", {"state": "failed"})
                    except urllib.error.HTTPError as exc:
                        if exc.code < 500:
                            raise
                        settled = False  # the scheduler wrote to SQLite at the same moment: look again
            if settled:
                return
            time.sleep(1.0)

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        return self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns?limit=100")["dag_runs"]

    def trigger(self, dag_id: str) -> str:
        run_id = f"e2e-{dag_id}-{uuid.uuid4().hex[:6]}"
        self.request("POST", f"/api/v2/dags/{dag_id}/dagRuns", {"logical_date": None, "dag_run_id": run_id})
        return run_id

    def run_state(self, dag_id: str, run_id: str) -> str:
        return str(self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")["state"])

    def wait_run(self, dag_id: str, run_id: str, timeout: float) -> None:
        state = wait_for(
            f"{dag_id} run {run_id}",
            lambda: (s := self.run_state(dag_id, run_id)) in TERMINAL and s,
            timeout,
            lambda: self.diagnose(dag_id, run_id),
        )
        assert state == "success", self.diagnose(dag_id, run_id)

    def diagnose(self, dag_id: str, run_id: str) -> str:
        """The run's task states and the tail of every task log that did not succeed, plus Airflow's output."""
        lines = [f"{dag_id} {run_id}:"]
        try:
            tis = self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances")["task_instances"]
        except OSError as exc:
            tis = []
            lines.append(f"  (task instances unavailable: {exc})")
        for ti in tis:
            lines.append(f"  {ti['task_id']}[{ti['map_index']}]: {ti['state']} (try {ti['try_number']})")
            if ti["state"] not in ("success", "skipped", None):
                folder = self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={ti['task_id']}"
                for log in sorted(folder.rglob("*.log"))[-1:]:
                    lines.extend(f"    {event}" for event in task_log_tail(log))
        lines.append("airflow-local output (tail):")
        lines.append(self.output(40))
        return "\n".join(lines)


def task_log_tail(path: Path, events: int = 25) -> list[str]:
    """The last events of a task log (JSON lines), with any exception's type and message."""
    shown = []
    for line in path.read_text("utf-8", errors="replace").splitlines()[-events:]:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            shown.append(line[:400])
            continue
        shown.append(f"{record.get('level', '')}: {str(record.get('event', ''))[:400]}")
        for error in record.get("error_detail") or []:
            shown.append(f"  {error.get('exc_type')}: {str(error.get('exc_value'))[:1500]}")
    return shown


@pytest.fixture()
def served(tmp_path: Path, vhost: str) -> Iterator[Served]:
    import shutil

    shutil.copytree(REPO / "contracts", tmp_path / "contracts")
    airflow = Served(tmp_path, vhost)
    try:
        airflow.start()
        yield airflow
    finally:
        airflow.stop()
        assert not airflow.stragglers(), "processes of the served Airflow are still running"


def asset_triggered(airflow: Served, known: set[str]) -> list[dict[str, Any]]:
    return [
        r
        for r in airflow.runs("contract_change")
        if r["run_type"] == "asset_triggered" and r["dag_run_id"] not in known
    ]


def wait_asset_triggered_change(airflow: Served, known: set[str], timeout: float) -> list[dict[str, Any]]:
    """The contract_change runs the scheduler started from asset events, once all of them finished."""

    def finished() -> list[dict[str, Any]]:
        runs = asset_triggered(airflow, known)
        return runs if runs and all(r["state"] in TERMINAL for r in runs) else []

    runs = wait_for("an asset-triggered contract_change run", finished, timeout, lambda: airflow.output())
    for run in runs:
        assert run["state"] == "success", airflow.diagnose("contract_change", run["dag_run_id"])
    return runs


def publish_sample_traffic(work: Path, vhost: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Producers publish through the platform's publisher into the served platform's broker and registry."""
    from contract_platform_airflow.main_job import publish_traffic

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

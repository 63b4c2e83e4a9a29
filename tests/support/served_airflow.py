"""A served Airflow for tests and benchmarks: ``scripts/airflow-local`` in its own process group, its REST API.

Used by the real-scheduler tests (``tests/e2e/test_airflow_scheduler.py``) and
``benchmarks/estate_airflow.py``. ``first_import`` is the estate scenario both run: a generated
catalogue of new versions through ``contract_catalog_watch`` -> ``contract_change``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.environment import user_environment
from tests.support.ports import Holder, free_port, port_holder
from tests.support.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
TERMINAL = {"success", "failed"}
PLATFORM_DAGS = {
    "contract_catalog_watch",
    "contract_change",
    "topic_archive_validation",
    "envelope_quality",
    "retirement_audit",
    "dual_publish_migration",
    "archive_retention",
    "housekeeping",
}


def wait_for(what: str, check: Callable[[], Any], timeout: float, on_timeout: Callable[[], str] = str) -> Any:
    """Poll ``check`` every second until it returns something truthy; fail with ``what`` and the diagnosis."""
    return wait_until(check, timeout, 1.0, what=what, diagnose=on_timeout)


class Served:
    """``scripts/airflow-local`` in its own process group, and the REST calls the test makes.

    The api-server must be told its port (the task processes are given its URL), so it cannot bind port 0:
    ``answers`` trusts only an api-server this test started, and when another process listens on the port,
    starts everything again on another one (``tests.support.ports``).
    """

    def __init__(
        self,
        work: Path,
        vhost: str,
        database_url: str | None,
        broker_url: str | None = None,
        management_url: str | None = None,
    ) -> None:
        self.work = work
        self.home = work / "airflow"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = work / "airflow-local.log"
        self.task_logs = self.home / "logs"  # where task logs are written (AIRFLOW__LOGGING__BASE_LOG_FOLDER)
        self.env = user_environment(
            vhost,
            AIRFLOW_HOME=str(self.home),
            CONTRACT_PLATFORM_HOME=str(work / "data"),
            CONTRACT_CATALOG=str(work / "contracts"),
            # Budget on a 2-core machine: two Spark cores; DAGs not under test stay paused.
            AIRFLOW_CONN_SPARK_DEFAULT=json.dumps({"conn_type": "spark", "host": "local[2]"}),
            AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION="True",
            # None: the data folder's own database, as a user's serve command chooses it
            **({"CONTRACT_AIRFLOW_DB_URL": database_url} if database_url else {}),
            **({"CONTRACT_RABBITMQ_URL": broker_url} if broker_url else {}),
            **({"CONTRACT_RABBITMQ_MANAGEMENT_URL": management_url} if management_url else {}),
        )
        self.process: subprocess.Popen[bytes] | None = None
        self.token = ""

    # --- processes ---------------------------------------------------------------------------

    def start(self) -> None:
        with self.log_path.open("ab") as log:
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
        self.delete_recorder_queue()
        deadline = time.monotonic() + 20
        while (left := self.stragglers()) and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)

    def delete_recorder_queue(self) -> None:
        """The serve command starts a broker activity recorder for its registry: delete its queues."""
        from tests.support.broker import delete_recorder_queues

        from contract_platform.settings import default_registry_url

        data = Path(self.env.get("CONTRACT_PLATFORM_HOME", self.work / "data")).resolve()
        delete_recorder_queues(self.env.get("CONTRACT_REGISTRY_URL") or default_registry_url(data))

    def stragglers(self) -> list[int]:
        """Processes started for this test (task runners, spark-submit JVMs): they carry its AIRFLOW_HOME."""
        return processes_with(f"AIRFLOW_HOME={self.home}")

    def sessions(self) -> list[int]:
        """The sessions of the processes this test started (each starts one): they and all their children."""
        return [self.process.pid] if self.process is not None else []

    def use_port(self, port: int) -> None:
        """The api-server's port from the next ``start`` on."""
        self.port = port
        self.base = f"http://127.0.0.1:{port}"

    def moved_off_a_taken_port(self) -> bool:
        """When another process listens on the api-server's port (ours cannot bind it), stop, and start again
        on another port; True if so."""
        if port_holder(self.port, self.sessions()) is not Holder.ANOTHER:
            return False
        taken, port = self.port, free_port()
        self.stop()
        with self.log_path.open("a", encoding="utf-8") as log:
            log.write(f"\n--- port {taken} is another process's: starting again with the api-server on {port}\n")
        self.use_port(port)
        self.start()
        return True

    def check_running(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise AssertionError(f"scripts/airflow-local exited with {self.process.returncode}\n{self.output()}")

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
        """The api-server this test started answers healthy (an answer from another process never counts)."""
        if self.moved_off_a_taken_port():
            return False
        self.check_running()
        if port_holder(self.port, self.sessions()) is not Holder.OURS:
            return False
        try:
            return bool(self.request("GET", "/api/v2/monitor/health")["metadatabase"]["status"] == "healthy")
        except (OSError, ValueError, KeyError, TypeError):
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
                folder = self.task_logs / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={ti['task_id']}"
                for log in sorted(folder.rglob("*.log"))[-1:]:
                    lines.extend(f"    {event}" for event in task_log_tail(log))
        lines.append("airflow-local output (tail):")
        lines.append(self.output(40))
        return "\n".join(lines)


def processes_with(variable: str) -> list[int]:
    """The processes (but this one) whose environment holds ``variable`` (``NAME=value``)."""
    marker = f"{variable}\0".encode()
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


def first_import(airflow: Served, types: set[str], registry_url: str, timeout: float = 900) -> dict[str, Any]:
    """Serve, unpause the watch and contract_change, and wait until every version in ``types`` is experimental
    in the registry and every contract_change run has ended. Returns the figures (seconds, task instances,
    events, runs); the caller asserts on them."""
    from contract_platform.store import SqlRegistry

    started = time.monotonic()
    airflow.start()
    wait_for("the api-server", airflow.answers, 300, airflow.output)
    airflow.log_in()
    wait_for("the platform's DAGs", lambda: airflow.dag_ids() >= PLATFORM_DAGS, 300)
    airflow.unpause("contract_change")
    airflow.unpause("contract_catalog_watch")
    unpaused = time.monotonic()

    watch = wait_for("the scheduled contract_catalog_watch run", lambda: airflow.runs("contract_catalog_watch"), 120)
    watch_id = watch[0]["dag_run_id"]
    airflow.wait_run("contract_catalog_watch", watch_id, timeout)
    watched = time.monotonic()
    registry = SqlRegistry.open(registry_url)
    try:

        def settled() -> list[dict[str, Any]]:
            runs = asset_triggered(airflow, set())
            if not runs or any(r["state"] not in TERMINAL for r in runs):
                return []
            if any(r["state"] == "failed" for r in runs):
                return runs
            effective = [registry.effective(t) for t in types]
            return runs if all(e is not None and str(e.status) == "experimental" for e in effective) else []

        runs = wait_for("every version experimental after contract_change", settled, timeout, airflow.output)
    finally:
        registry.close()
    settled_at = time.monotonic()
    path = f"/api/v2/dags/contract_catalog_watch/dagRuns/{watch_id}/taskInstances"
    tis = airflow.request("GET", path)["task_instances"]
    listed = airflow.request("GET", "/api/v2/assets/events?source_dag_id=contract_catalog_watch&limit=100")
    events = [e for e in listed["asset_events"] if e["source_run_id"] == watch_id]
    change_tis = sum(
        airflow.request("GET", f"/api/v2/dags/contract_change/dagRuns/{r['dag_run_id']}/taskInstances")["total_entries"]
        for r in runs
    )
    return {
        "versions": len(types),
        "runs": runs,
        "watch_task_instances": [(t["task_id"], t["map_index"], t["state"]) for t in tis],
        "events": events,
        "change_task_instances": change_tis,
        "seconds_to_serve": round(unpaused - started, 1),
        "seconds_watch": round(watched - unpaused, 1),
        "seconds_settled": round(settled_at - unpaused, 1),
    }

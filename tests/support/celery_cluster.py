"""Airflow under CeleryExecutor with two workers on two "machines", for the production-executor tests.

The layout is docs/deploy.md's "several machines", on one host:

- the **scheduler machine** (this host's namespaces): ``airflow db migrate``, then the scheduler, the
  dag-processor and the api-server, each a process of its own;
- two **worker machines**: ``airflow celery worker`` with Celery's default (prefork) pool, each in a mount
  and UTS namespace of its own (``unshare --mount --uts``, root only): its own hostname, ``/etc/hosts``,
  ``/tmp``, ``HOME``, ``AIRFLOW_HOME`` and the checkout's ``data/`` folder. The network is shared, so
  loopback reaches PostgreSQL, Redis, RabbitMQ and the api-server's execution API;
- only the volumes docs/deploy.md declares are shared: ``CONTRACT_PLATFORM_HOME``, ``CONTRACT_ARCHIVE_DIR``,
  ``CONTRACT_DOCS_DIR``, the Airflow task logs, and the catalogue (the same image on every machine).

Worker ``a`` serves Airflow's ``default`` Celery queue and worker ``b`` the Spark queue
(``$CONTRACT_SPARK_QUEUE``), so a Spark task and the tasks around it always run on different machines.
Everything lives under one folder outside ``/tmp`` (each worker mounts a private ``/tmp``); ``stop``
ends every process the cluster started, found by a marker in its environment.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.environment import user_environment
from tests.support.served_airflow import REPO, Served, processes_with

SPARK_QUEUE = "spark"
DEFAULT_QUEUE = "default"
REDIS = ("127.0.0.1", 6379)
MARKER = "CONTRACT_TEST_CLUSTER"


class ClusterUnavailable(RuntimeError):
    """This machine cannot host the cluster (not root, no unshare, no Redis); the message says which."""


def check_host() -> None:
    """Raise ``ClusterUnavailable`` unless worker namespaces and Redis are available here."""
    if os.geteuid() != 0:
        raise ClusterUnavailable("worker machines need unshare --mount --uts, which needs root")
    if shutil.which("unshare") is None:
        raise ClusterUnavailable("unshare (util-linux) is not installed")
    probe = subprocess.run(
        ["unshare", "--mount", "--uts", "--propagation", "private", "true"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        raise ClusterUnavailable(f"unshare --mount --uts failed: {probe.stderr.decode(errors='replace').strip()}")
    import socket

    with socket.socket() as sock:
        sock.settimeout(2)
        if sock.connect_ex(REDIS) != 0:
            raise ClusterUnavailable("Redis does not answer on 127.0.0.1:6379 (Celery's broker)")


@contextlib.contextmanager
def redis_database() -> Iterator[str]:
    """A Redis database of the caller's own (1-15, claimed with a key), emptied and released afterwards."""
    import redis

    token = uuid.uuid4().hex
    for number in range(15, 0, -1):
        client = redis.Redis(host=REDIS[0], port=REDIS[1], db=number)
        if client.set("contract-platform-test-claim", token, nx=True, ex=3600):
            try:
                yield f"redis://{REDIS[0]}:{REDIS[1]}/{number}"
            finally:
                client.flushdb()
                client.close()
            return
        client.close()
    raise ClusterUnavailable("every Redis database 1-15 is claimed by another test run")


@dataclass(frozen=True)
class Machine:
    """A worker machine: its hostname, the Celery queue it serves and its private folders."""

    name: str
    queue: str
    root: Path

    @property
    def airflow_home(self) -> Path:
        return self.root / "airflow"


class CeleryCluster(Served):
    """The scheduler machine's components and two worker machines; the REST calls are ``Served``'s."""

    def __init__(self, work: Path, vhost: str, database_url: str, *, registry_url: str, broker_url: str) -> None:
        from contract_platform_airflow.settings import airflow_environment, celery_environment

        super().__init__(work, vhost, database_url)
        self.id = uuid.uuid4().hex[:8]
        shared = work / "shared"
        self.shared = {
            "home": shared / "platform-home",
            "archive": shared / "contract-archive",
            "docs": shared / "contract-docs",
            "logs": shared / "airflow-logs",
            "catalog": shared / "contracts",
        }
        self.task_logs = self.shared["logs"]
        self.home = work / "scheduler" / "airflow"
        self.log_path = work / "scheduler" / "components.log"
        self.machines = [
            Machine("worker-a", DEFAULT_QUEUE, work / "worker-a"),
            Machine("worker-b", SPARK_QUEUE, work / "worker-b"),
        ]
        # each machine keeps Spark's class-data archive in its own HOME's cache, as separate machines do
        base = {k: v for k, v in user_environment(vhost).items() if k != "CONTRACT_JVM_CLASS_CACHE"}
        platform = airflow_environment(
            REPO,
            data=self.shared["home"],
            catalog=self.shared["catalog"],
            airflow_home=self.home,
            spark_master="local[2]",
            environ={**base, "CONTRACT_REGISTRY_URL": registry_url},
        )
        self.env = {
            **base,
            **platform,
            **celery_environment(broker_url, database_url),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": database_url,
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",  # DAGs not under test stay paused
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(self.shared["logs"]),
            **self._api_settings(),
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),  # the same for every component
            "AIRFLOW__API__SECRET_KEY": secrets.token_hex(32),
            "CONTRACT_REGISTRY_URL": registry_url,
            "CONTRACT_ARCHIVE_DIR": str(self.shared["archive"]),
            "CONTRACT_DOCS_DIR": str(self.shared["docs"]),
            "CONTRACT_SPARK_QUEUE": SPARK_QUEUE,
            "GX_ANALYTICS_ENABLED": "False",
            MARKER: self.id,
        }
        self.processes: list[subprocess.Popen[bytes]] = []

    def _api_settings(self) -> dict[str, str]:
        return {
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{self.port}/execution/",
        }

    # --- processes ---------------------------------------------------------------------------

    def prepare(self) -> None:
        """Folders, the catalogue volume and the migrated metadata DB with the platform's pools."""
        for folder in (*self.shared.values(), self.home, self.log_path.parent):
            folder.mkdir(parents=True, exist_ok=True)
        for machine in self.machines:
            for sub in ("tmp", "home", "data", "airflow"):
                (machine.root / sub).mkdir(parents=True, exist_ok=True)
            # First, on an address of its own (as Debian does): the reverse lookup Airflow's hostname makes
            # (socket.getfqdn) finds the worker's name, not the host's "localhost".
            hosts = Path("/etc/hosts").read_text("utf-8") if Path("/etc/hosts").exists() else ""
            (machine.root / "hosts").write_text(f"127.0.1.1 {machine.name}\n{hosts}", "utf-8")
        script = "from contract_platform_airflow.serve import migrate; migrate()"
        result = subprocess.run(
            [sys.executable, "-c", script], env=self.env, cwd=REPO, capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            raise AssertionError(f"airflow db migrate failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}")

    def start(self) -> None:
        self.prepare()
        from contract_platform_airflow.serve import admin_password

        admin_password(self.home)  # the api-server's SimpleAuthManager reads the generated password file
        for command in (["scheduler"], ["dag-processor"], ["api-server", "--port", str(self.port)]):
            self._spawn(command[0], ["airflow", *command], self.env)
        for machine in self.machines:
            self._spawn(machine.name, self._worker_command(machine), self._worker_env(machine))

    def _spawn(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        log = (self.log_path.parent / f"{name}.log").open("ab")
        try:
            self.processes.append(
                subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            )
        finally:
            log.close()

    def _worker_env(self, machine: Machine) -> dict[str, str]:
        return {
            **self.env,
            "AIRFLOW_HOME": str(machine.airflow_home),
            "HOME": str(machine.root / "home"),
            # Two workers on one host need log servers on different ports: each binds port 0, the kernel's choice.
            # Nobody asks them (the api-server reads these tasks' logs from the shared log folder).
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": "0",
        }

    def _worker_command(self, machine: Machine) -> list[str]:
        """``airflow celery worker`` (prefork pool) in a mount and UTS namespace: the worker machine."""
        mounts = [
            f"hostname {machine.name}",
            f"mount --bind {shlex.quote(str(machine.root / 'hosts'))} /etc/hosts",
            f"mkdir -p {shlex.quote(str(REPO / 'data'))}",
            f"mount --bind {shlex.quote(str(machine.root / 'data'))} {shlex.quote(str(REPO / 'data'))}",
        ]
        if _outside_tmp(REPO) and _outside_tmp(self.work):  # a private /tmp must not hide the checkout
            mounts.append(f"mount --bind {shlex.quote(str(machine.root / 'tmp'))} /tmp")
        airflow = str(Path(sys.executable).with_name("airflow"))
        worker = [airflow, "celery", "worker", "--queues", machine.queue, "--concurrency", "2"]
        worker += ["--celery-hostname", f"{machine.name}@%h", "--without-gossip", "--without-mingle"]
        script = " && ".join(mounts) + f" && export TMPDIR=/tmp && exec {shlex.join(worker)}"
        return ["unshare", "--mount", "--uts", "--propagation", "private", "bash", "-c", script]

    def stop(self) -> None:
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        for process in self.processes:  # children that outlived their group's leader
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        super().stop()  # the processes carrying the marker (task runners, spark-submit JVMs)

    def stragglers(self) -> list[int]:
        return processes_with(f"{MARKER}={self.id}")

    def sessions(self) -> list[int]:
        return [process.pid for process in self.processes]

    def use_port(self, port: int) -> None:
        super().use_port(port)
        self.env.update(self._api_settings())
        self.processes = []

    def check_running(self) -> None:
        for process in self.processes:
            if process.poll() is not None:
                raise AssertionError(f"a component exited with {process.returncode}\n{self.output()}")

    def output(self, lines: int = 40) -> str:
        shown = []
        for log in sorted(self.log_path.parent.glob("*.log")):
            text = log.read_text("utf-8", errors="replace").splitlines()[-lines:]
            shown.append(f"--- {log.name}\n" + "\n".join(text))
        return "\n".join(shown)

    # --- what the tests read ------------------------------------------------------------------

    def task_instances(self, dag_id: str, run_id: str) -> dict[str, dict[str, object]]:
        """Each task's state and the host (worker machine) that ran it."""
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances?limit=100"
        listed = self.request("GET", path)["task_instances"]
        return {ti["task_id"]: {"state": ti["state"], "hostname": ti["hostname"]} for ti in listed}

    def trigger_with(self, dag_id: str, conf: dict[str, object]) -> str:
        run_id = f"celery-{dag_id}-{uuid.uuid4().hex[:6]}"
        body = {"logical_date": None, "dag_run_id": run_id, "conf": conf}
        self.request("POST", f"/api/v2/dags/{dag_id}/dagRuns", body)
        return run_id

    def workers_ready(self) -> bool:
        """Both workers answer Celery's ping (they have connected to Redis and serve their queues)."""
        result = subprocess.run(
            [sys.executable, "-m", "celery", "--app", "airflow.providers.celery.executors.celery_executor.app",
             "inspect", "ping", "--json", "--timeout", "5"],
            env=self.env, cwd=REPO, capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        if result.returncode != 0:
            return False
        try:
            answered = json.loads(result.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            return False
        return {name.split("@")[0] for name in answered} >= {m.name for m in self.machines}


def _outside_tmp(path: Path) -> bool:
    resolved = path.resolve()
    return resolved != Path("/tmp") and Path("/tmp") not in resolved.parents

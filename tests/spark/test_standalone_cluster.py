"""The Spark jobs on a real Spark standalone cluster, submitted the way the DAGs submit them.

A master and one worker are started from the installed pyspark (``spark-class``, loopback only,
1 core, small memory) on port 0: each binds what the kernel gives it, and the test reads the master's
ports back from its log (``tests.support.ports``), so no other process can take them in between;
``spark_default`` points at the master; validate_archive, the
parity job and archive_last_seen go through the platform's operator (``spark-submit``, client
mode) and their reports must equal what the same jobs give in local mode. The finalizer kills
each process group, so no JVM outlives the test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest
from tests.spark.test_dual_publish_parity import V1, defective_archive
from tests.support.ports import logged_port
from tests.support.waiting import wait_until

from contract_platform.jvm import QUICK_START_JAVA_OPTIONS
from spark_jobs import archive_last_seen, dual_publish_parity, validate_archive

pytestmark = [pytest.mark.spark, pytest.mark.integration]

SPARK_HOME = Path(pyspark.__file__).resolve().parent
VOLATILE = {"elapsed_seconds", "throughput", "started_at", "archive", "catalog"}  # differ run to run, not result
# A user's own settings for this small, short-lived cluster: the platform keeps C2 for drivers on a cluster
# (contract_platform.jvm.quick_start), a user may choose otherwise, as here, where each JVM works for seconds.
CLUSTER_CONF = {
    "spark.executor.memory": "512m",
    "spark.cores.max": "1",
    "spark.driver.extraJavaOptions": QUICK_START_JAVA_OPTIONS,
    "spark.executor.extraJavaOptions": QUICK_START_JAVA_OPTIONS,
}


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
    wait_until(condition, timeout, 0.5, what=what)


def master_state(ui_port: int) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as answer:
            return dict(json.load(answer))
    except OSError:
        return {}


def alive_workers(ui_port: int) -> int:
    return int(master_state(ui_port).get("aliveworkers", 0))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """(``spark://127.0.0.1:PORT``, master web UI port) of a running master with one registered worker."""
    logs = tmp_path_factory.mktemp("cluster-logs")
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_WORKER_DIR": str(logs / "work"),
        "SPARK_DAEMON_MEMORY": "256m",
        # This master and worker live for one test: like the drivers and executors below (CLUSTER_CONF),
        # they compile with C1 only. The cluster's answers are what is tested, not its JIT.
        "SPARK_DAEMON_JAVA_OPTS": QUICK_START_JAVA_OPTIONS,
        # The master's REST submission server would take the fixed port 6066; nothing here submits through it.
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    processes: list[subprocess.Popen[bytes]] = []

    def start(name: str, command: list[str]) -> tuple[subprocess.Popen[bytes], Path]:
        log = logs / f"{name}.log"
        with log.open("wb") as output:
            processes.append(
                subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
            )
        return processes[-1], log

    try:
        master, log = start("master", [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                       "--port", "0", "--webui-port", "0"])  # fmt: skip
        port = logged_port(log, r"Starting Spark master at spark://127\.0\.0\.1:(\d+)", master)
        ui_port = logged_port(log, r"Successfully started service 'MasterUI' on port (\d+)", master)
        master_url = f"spark://127.0.0.1:{port}"
        wait_for(lambda: master_state(ui_port).get("url") == master_url, "the Spark master's own page")
        start("worker", [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--port", "0",
                         "--webui-port", "0", "--cores", "1", "--memory", "1g", master_url])  # fmt: skip
        wait_for(lambda: alive_workers(ui_port) == 1, "the Spark worker to register")
        yield master_url, ui_port
    finally:
        for process in reversed(processes):
            os.killpg(process.pid, signal.SIGKILL)  # the whole group: spark-class and its JVM
            process.wait(timeout=30)


def submit(job: str, args: list[str], master_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``job`` through the operator the DAGs use, on ``spark_default`` pointing at the cluster."""
    from contract_platform_airflow.spark import spark_submit

    host, port = master_url.rsplit(":", 1)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": host, "port": port}))
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")  # the driver (client mode) listens on loopback too
    task = spark_submit(task_id=job, job=job, application_args=args, conf=CLUSTER_CONF)
    task.execute({})


def stable(report: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in report.items() if key not in VOLATILE}


def test_the_jobs_on_a_standalone_cluster_report_what_local_mode_reports(
    cluster: tuple[str, int], spark, catalog, catalog_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generated = defective_archive(tmp_path / "archive", catalog)
    generated.archive.write()
    root = str(generated.archive.root)
    monkeypatch.setenv("CONTRACT_REGISTRY_URL", f"sqlite:///{tmp_path / 'registry.db'}")
    monkeypatch.setenv("CONTRACT_PLATFORM_HOME", str(tmp_path / "data"))
    local, remote = tmp_path / "local", tmp_path / "cluster"
    local.mkdir()
    remote.mkdir()

    def validate_args(out: Path) -> list[str]:
        return [root, "--catalog", str(catalog_dir), "--report", str(out / "validation.json"), "--no-fail-on-findings"]

    def parity_args(out: Path) -> list[str]:
        return [V1, "--archive", root, "--catalog", str(catalog_dir), "--report", str(out / "parity.json"),
                "--no-fail-on-findings"]  # fmt: skip

    def last_seen_args(out: Path) -> list[str]:
        return [root, "--out", str(out / "last-seen.json")]

    # local mode: the same entry points, in this process's local session
    assert validate_archive.main(validate_args(local)) == 0
    assert dual_publish_parity.main(parity_args(local)) == 0
    assert archive_last_seen.main(last_seen_args(local)) == 0

    master_url, ui_port = cluster
    submit("validate_archive", validate_args(remote), master_url, monkeypatch)
    submit("dual_publish_parity", parity_args(remote), master_url, monkeypatch)
    submit("archive_last_seen", last_seen_args(remote), master_url, monkeypatch)
    ran = master_state(ui_port).get("completedapps", [])
    assert len(ran) == 3, ran  # the cluster ran all three, none fell back to local mode
    for name in ("validation.json", "parity.json", "last-seen.json"):
        here = json.loads((local / name).read_text())
        there = json.loads((remote / name).read_text())
        assert stable(there) == stable(here), name
    validation = json.loads((remote / "validation.json").read_text())
    assert validation["totals"]["records"] > 0 and validation["totals"]["invalid"] > 0

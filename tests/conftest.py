"""Session-wide test fixtures: the catalogue, one local SparkSession, one Airflow metadata DB.

The environment is set at import time, before any test module imports Airflow: each test
session gets its own AIRFLOW_HOME and platform data folder in a temporary directory, so tests
never touch a developer's real ones.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.lanes import is_slow, shared_fixture_modules, start_order
from tests.support import ports

from contract_platform_airflow.settings import airflow_environment, ensure_pools

REPO_ROOT = Path(__file__).resolve().parents[1]
SESSION_DIR = Path(tempfile.mkdtemp(prefix="contract-platform-tests-"))

# The platform's Airflow settings, from their one definition (it imports no Airflow). The registry is
# left to CONTRACT_REGISTRY_URL / CONTRACT_PLATFORM_HOME, which tests point at their own stores; a
# spark_default from the caller's environment (a CI with a cluster) is kept.
_AIRFLOW_ENV = airflow_environment(
    REPO_ROOT,
    data=SESSION_DIR / "platform",
    catalog=REPO_ROOT / "contracts",
    airflow_home=SESSION_DIR / "airflow",
    spark_master="local[2]",
    cpus=2,
    connections=("spark_default", "rabbitmq_default"),
)
os.environ.setdefault("AIRFLOW_CONN_SPARK_DEFAULT", _AIRFLOW_ENV.pop("AIRFLOW_CONN_SPARK_DEFAULT"))
os.environ.update(_AIRFLOW_ENV)
os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "True"
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
# One class-data archive for every quick-start JVM the tests launch (spark_jobs/session.py), shared by the parallel
# workers (a JVM writes its own temporary file and renames it into place) and kept between runs like the rest of
# pytest's cache: a folder per test made each test's first JVM write one, about 20 s of CPU each time.
# tests/spark/test_small_runs.py, which tests the writing, gives its JVMs a folder of their own.
os.environ.setdefault("CONTRACT_JVM_CLASS_CACHE", str(REPO_ROOT / ".pytest_cache" / "jvm-class-archive"))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(SESSION_DIR, ignore_errors=True)
    # py4j closes the session's gateway connections when the interpreter exits, and logs that it does: by then the
    # stream the logging handlers were given (pytest's capture) is closed, and each worker's exit printed three
    # "--- Logging error ---" tracebacks after the summary. Nothing py4j says at exit is for anyone.
    for name in ("py4j", "py4j.clientserver", "py4j.java_gateway"):  # a child logger has its own switch
        logging.getLogger(name).disabled = True


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def catalog_dir() -> Path:
    return REPO_ROOT / "contracts"


@pytest.fixture(scope="session")
def catalog(catalog_dir: Path):  # type: ignore[no-untyped-def]
    from contract_platform.catalog import load_catalog

    return load_catalog(catalog_dir)


@pytest.fixture()
def catalog_copy(tmp_path: Path, catalog_dir: Path) -> Path:
    """A writable copy of the real catalogue, for tests that break it on purpose."""
    target = tmp_path / "contracts"
    shutil.copytree(catalog_dir, target)
    return target


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local SparkSession for the whole test session (starting one costs seconds).

    The tests' inputs are small, so its JVM starts as a small job's does (``contract_platform.jvm.quick_start``):
    the client compiler only, Spark's classes mapped from the shared class-data archive when one is there. The
    C2 compiler's threads were most of this JVM's CPU time, on work that runs for milliseconds. It never writes
    the archive: living for the whole run, its writer's claim would keep every other JVM from writing it.
    """
    from pyspark.sql import SparkSession

    from contract_platform.jvm import QUICK_START_JAVA_OPTIONS, class_archive

    archive = class_archive(write=False)

    session = (
        SparkSession.builder.master("local[2]")
        .appName("contract-platform-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config(
            "spark.driver.extraJavaOptions", " ".join([QUICK_START_JAVA_OPTIONS, *(archive.options if archive else ())])
        )
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """A migrated Airflow metadata DB (SQLite) in this session's AIRFLOW_HOME, made once."""
    home = Path(os.environ["AIRFLOW_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    airflow = Path(sys.executable).parent / "airflow"
    result = subprocess.run([str(airflow), "db", "migrate"], capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"airflow db migrate failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
    ensure_pools(cpus=2)
    return home


@pytest.fixture(scope="session")
def rabbitmq_url() -> str:
    if not port_open("127.0.0.1", 5672):
        pytest.skip("RabbitMQ not answering on 127.0.0.1:5672 (start it with rabbitmq-server -detached)")
    return "amqp://guest:guest@127.0.0.1:5672/%2F"


@pytest.fixture(scope="session")
def postgres_url() -> str:
    if not port_open("127.0.0.1", 5432):
        pytest.skip("PostgreSQL not answering on 127.0.0.1:5432")
    return "postgresql+psycopg2://postgres@127.0.0.1:5432/test"


@pytest.fixture()
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses every connection for the whole test, as a service that is down:
    held bound by the test, so no other process can listen there meanwhile (``tests.support.ports``)."""
    with ports.closed_port() as port:
        yield port


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark slow what ``tests.lanes`` calls slow: the fast lane, ``pytest -m "not slow"``, leaves it out.

    The longest tests run first (``tests.lanes.start_order``; ``tests/scheduling.py`` deals them out).
    """
    for item in items:
        if is_slow(item, REPO_ROOT / "tests"):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: start_order(item, REPO_ROOT / "tests"))


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadgroup`` (pyproject.toml) deals tests out longest first, never two long ones to one worker."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from tests.scheduling import LongestFirstScheduling

    return LongestFirstScheduling(config, log, shared_fixture_modules(REPO_ROOT / "tests"))


def pytest_configure(config: pytest.Config) -> None:
    import logging

    from tests.support import broker_leaks, leaks

    leaks.register(config)  # a test that leaves an environment variable or a database behind fails the run
    broker_leaks.register(config)  # ... or a recorder queue or virtual host on the shared broker

    # pika logs every socket event at INFO; keep test output about the platform.
    logging.getLogger("pika").setLevel(logging.WARNING)

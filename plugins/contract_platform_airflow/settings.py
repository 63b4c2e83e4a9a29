"""The platform's Airflow settings, defined once.

Everything that runs the platform's DAGs takes its Airflow settings from here, so they cannot drift:

- the main job (``scripts/main_job.py``, DAGs in-process with ``dag.test()``),
- the serve command (``scripts/airflow-local``: scheduler, dag-processor, triggerer, api-server),
- the tests (``tests/conftest.py``; the real-scheduler test in ``tests/e2e``),
- ``docker-compose.yml``, which cannot import Python: ``tests/airflow/test_airflow_settings.py``
  asserts that its Airflow environment and its init command match this module.

What is defined here:

- ``FIXED``: the same on every deployment (examples off, DAGs unpaused at creation so the asset
  watcher and the schedules work at once, LocalExecutor, Great Expectations' usage analytics off);
- the DAGs folder (the repository's ``dags/``) and the data folders, for a checkout;
- parallelism and the Spark pool, sized for the machine's cores (``sizing``);
- the platform's three connections, as ``AIRFLOW_CONN_*`` values every component inherits:
  ``spark_default`` (``local[*]`` on a laptop), ``rabbitmq_default`` and ``contract_registry_default``
  (both from the platform's own settings, so Airflow and ``contractctl`` reach the same broker and store).
- CeleryExecutor (``celery_environment``): the executor, its broker and its result backend for every
  component of a deployment with workers on several machines (docs/deploy.md#several-machines), and the
  Celery queue the Spark tasks go to (``SPARK_QUEUE_VARIABLE``), so workers with the Spark client and
  the cores can serve them alone;
- the served Airflow's metadata DB (``metadata_database``, defined in ``metadata_db`` and imported here): a
  PostgreSQL database of the data folder's own, ``contract_platform_airflow_<folder>_<hash of its path>`` on
  the local server (``default_metadata_url``; ``$CONTRACT_AIRFLOW_DB_URL`` names another), created when
  missing, the previous release's ``contract_platform_airflow`` renamed or kept rather than hidden; SQLite
  only when PostgreSQL does not answer, with a warning that says why.

Nothing here imports Airflow: the values must be in the environment before Airflow reads its config.
Values already set in the environment win over these defaults (``apply``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from contract_platform.quality.telemetry import analytics_environment
from contract_platform_airflow.metadata_db import (
    AIRFLOW_DB_URL_VARIABLE,
    DEFAULT_AIRFLOW_DB_SERVER,
    SQL_ALCHEMY_CONN,
    MetadataDatabase,
    MetadataDatabaseUnavailable,
    default_metadata_url,
    ensure_postgres_database,
    metadata_database,
)

__all__ = [
    "AIRFLOW_DB_URL_VARIABLE",
    "CONNECTION_IDS",
    "DEFAULT_AIRFLOW_DB_SERVER",
    "FIXED",
    "SQL_ALCHEMY_CONN",
    "MetadataDatabase",
    "MetadataDatabaseUnavailable",
    "SPARK_POOL",
    "SPARK_QUEUE_VARIABLE",
    "Sizing",
    "airflow_environment",
    "apply",
    "celery_environment",
    "celery_result_backend",
    "connection_env_name",
    "default_metadata_url",
    "ensure_pools",
    "ensure_postgres_database",
    "main_job_catalog",
    "metadata_database",
    "rabbitmq_connection",
    "registry_connection",
    "sizing",
    "spark_connection",
    "spark_queue",
]

SPARK_DEFAULT = "spark_default"
RABBITMQ_DEFAULT = "rabbitmq_default"
REGISTRY_DEFAULT = "contract_registry_default"
CONNECTION_IDS = (SPARK_DEFAULT, RABBITMQ_DEFAULT, REGISTRY_DEFAULT)

# Every Spark task of the platform's DAGs runs in this pool: a Spark driver with local executors
# takes whole cores, so the pool, not Airflow's parallelism, decides how many run at once.
SPARK_POOL = "contract_platform_spark"
# Under CeleryExecutor the Spark tasks go to this Celery queue when it is set (read where the DAGs are
# parsed): workers started with ``airflow celery worker --queues <it>`` serve them alone, ``--queues default,<it>``
# every task. Unset, they go to Airflow's default queue like every other task. Other executors ignore queues.
SPARK_QUEUE_VARIABLE = "CONTRACT_SPARK_QUEUE"

FIXED: dict[str, str] = {
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    # The asset watcher registers only for unpaused DAGs, and a paused DAG never runs its schedule.
    "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
    "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
    # Task processes report to the api-server's execution API. When the components start together the
    # scheduler queues tasks before the api-server answers (40 s seen on two loaded cores); Airflow's 5
    # attempts give up after ~15 s and the task fails "with state failed, but ... queued". 10 attempts
    # (exponential waits up to 90 s) outlast a slow start.
    "AIRFLOW__WORKERS__EXECUTION_API_RETRIES": "10",
    # Great Expectations' usage analytics off in every component and task (contract_platform.quality.telemetry).
    **analytics_environment({}),
}


@dataclass(frozen=True)
class Sizing:
    """How much runs at once on a machine with ``cpus`` cores."""

    cpus: int
    parallelism: int  # task slots of the executor (most tasks wait on the broker or the store)
    spark_slots: int  # Spark jobs at once (each wants whole cores)
    parsing_processes: int  # dag-processor workers

    def environment(self) -> dict[str, str]:
        return {
            "AIRFLOW__CORE__PARALLELISM": str(self.parallelism),
            "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": str(self.parallelism),
            "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": str(self.parsing_processes),
        }


def sizing(cpus: int | None = None) -> Sizing:
    """Two task slots per core (at least 4), one Spark job per two cores (at least 1)."""
    cores = max(1, cpus if cpus is not None else (os.cpu_count() or 1))
    return Sizing(
        cpus=cores,
        parallelism=max(4, 2 * cores),
        spark_slots=max(1, cores // 2),
        parsing_processes=max(1, min(2, cores // 2)),
    )


def spark_queue(environ: Mapping[str, str] | None = None) -> str | None:
    """The Celery queue of the platform's Spark tasks (``$CONTRACT_SPARK_QUEUE``), or None: Airflow's default."""
    value = (os.environ if environ is None else environ).get(SPARK_QUEUE_VARIABLE, "").strip()
    return value or None


# celery 5.7.0 fails to import with apache-airflow-providers-celery 3.26 (``cannot import name 'retry' from
# 'celery.backends.database'``); pyproject.toml's ``celery`` extra pins what works (docs/deploy.md).
CELERY_RESULT_SCHEMES = ("postgresql", "postgresql+psycopg2", "postgres")
CELERY_VISIBILITY_TIMEOUT = 24 * 3600  # seconds


def celery_result_backend(metadata_url: str) -> str:
    """Celery's result backend on Airflow's PostgreSQL metadata DB: ``db+postgresql+psycopg2://...``.

    The driver is named: under SQLAlchemy 2.1 a plain ``db+postgresql://`` picks psycopg 3, which the platform
    does not install. Another database is refused (``ValueError``) rather than guessed.
    """
    scheme, sep, rest = metadata_url.partition("://")
    if not sep or scheme not in CELERY_RESULT_SCHEMES:
        raise ValueError(
            f"Celery's result backend needs Airflow's metadata on PostgreSQL (postgresql+psycopg2://...), not {scheme}://"
        )
    return f"db+postgresql+psycopg2://{rest}"


def celery_environment(broker_url: str, metadata_url: str) -> dict[str, str]:
    """CeleryExecutor for every component (scheduler, dag-processor, triggerer, api-server and the workers)."""
    return {
        "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
        "AIRFLOW__CELERY__BROKER_URL": broker_url,
        "AIRFLOW__CELERY__RESULT_BACKEND": celery_result_backend(metadata_url),
        # Redis hands a task that was not acknowledged within this to another worker, which would run it twice
        # (a bridge or a Spark job at once on two machines). Longer than any task of the platform may take;
        # set explicitly, as the provider asks on every start when it is not.
        "AIRFLOW__CELERY_BROKER_TRANSPORT_OPTIONS__VISIBILITY_TIMEOUT": str(CELERY_VISIBILITY_TIMEOUT),
    }


def connection_env_name(conn_id: str) -> str:
    """``spark_default`` -> ``AIRFLOW_CONN_SPARK_DEFAULT``."""
    return f"AIRFLOW_CONN_{conn_id.upper()}"


def spark_connection(master: str = "local[*]") -> str:
    """``spark_default`` for a master given as the Spark provider reads it (host = the master)."""
    return json.dumps({"conn_type": "spark", "host": master})


def rabbitmq_connection(url: str) -> str:
    """``rabbitmq_default`` from an AMQP URL (the hook rebuilds the same URL from these fields)."""
    parts = urlsplit(url)
    if parts.scheme not in ("amqp", "amqps") or not parts.hostname:
        raise ValueError(f"not an AMQP URL (amqp://user:password@host:port/vhost): {parts.scheme}://{parts.hostname}")
    from contract_platform.amqp.urls import vhost_of

    vhost = vhost_of(url)
    conn: dict[str, object] = {
        "conn_type": "amqp",
        "host": parts.hostname,
        "port": parts.port or (5671 if parts.scheme == "amqps" else 5672),
        "login": unquote(parts.username or "guest"),
        "password": unquote(parts.password or ""),
        "schema": vhost,
    }
    if parts.scheme == "amqps":
        conn["extra"] = {"ssl": True}
    return json.dumps(conn)


def registry_connection(url: str) -> str:
    """``contract_registry_default`` holding a registry URL (the hook reads ``extra.url`` first)."""
    return json.dumps({"conn_type": "generic", "extra": {"url": url}})


def main_job_catalog(data: Path) -> Path:
    """The main job's working copy of ``contracts/`` under the data folder; the serve command serves it too."""
    return data / "demo" / "contracts"


def airflow_environment(
    root: Path,
    *,
    data: Path | None = None,
    catalog: Path | None = None,
    airflow_home: Path | None = None,
    spark_master: str = "local[*]",
    cpus: int | None = None,
    connections: Iterable[str] = CONNECTION_IDS,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The platform's Airflow environment for a checkout at ``root``.

    ``data`` defaults to ``$CONTRACT_PLATFORM_HOME`` or ``root/data``; the broker and registry
    connections follow the platform's settings as read from ``environ`` (``CONTRACT_RABBITMQ_URL``,
    ``CONTRACT_REGISTRY_URL``, else their embedded defaults). ``connections`` selects which of the
    three connections are exported (tests leave the registry to ``CONTRACT_REGISTRY_URL``).
    """
    env = os.environ if environ is None else environ
    data = Path(data or env.get("CONTRACT_PLATFORM_HOME") or root / "data").resolve()
    values: dict[str, str] = {
        "AIRFLOW_HOME": str(airflow_home or env.get("AIRFLOW_HOME") or data / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(root / "dags"),
        **FIXED,
        **sizing(cpus).environment(),
        "CONTRACT_PLATFORM_HOME": str(data),
        "CONTRACT_CATALOG": str(catalog or env.get("CONTRACT_CATALOG") or root / "contracts"),
        # Spark's Python workers run the platform's own interpreter, which has the domain installed.
        "PYSPARK_PYTHON": sys.executable,
    }
    wanted = set(connections)
    unknown = wanted - set(CONNECTION_IDS)
    if unknown:
        raise ValueError(f"unknown connection ids {sorted(unknown)}; the platform defines {list(CONNECTION_IDS)}")
    if SPARK_DEFAULT in wanted:
        values[connection_env_name(SPARK_DEFAULT)] = spark_connection(spark_master)
    if RABBITMQ_DEFAULT in wanted:
        from contract_platform.settings import DEFAULT_RABBITMQ_URL

        values[connection_env_name(RABBITMQ_DEFAULT)] = rabbitmq_connection(
            env.get("CONTRACT_RABBITMQ_URL") or DEFAULT_RABBITMQ_URL
        )
    if REGISTRY_DEFAULT in wanted:
        from contract_platform.settings import default_registry_url

        url = env.get("CONTRACT_REGISTRY_URL") or default_registry_url(data)
        values[connection_env_name(REGISTRY_DEFAULT)] = registry_connection(url)
    return values


def apply(values: Mapping[str, str], environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set ``values`` where the environment has no value yet; returns what is in force afterwards."""
    env = os.environ if environ is None else environ
    for key, value in values.items():
        if not env.get(key):
            env[key] = value
    return {key: env[key] for key in values}


def ensure_pools(cpus: int | None = None) -> None:
    """Create or resize the platform's pools in the metadata DB (after ``airflow db migrate``).

    A task in a pool the DB does not know is never scheduled (the scheduler only logs a warning),
    so everything that starts a scheduler calls this first.
    """
    from airflow.models.pool import Pool

    Pool.create_or_update_pool(
        SPARK_POOL,
        slots=sizing(cpus).spark_slots,
        description="Spark jobs of the Contract Lifecycle Platform (one per two cores)",
        include_deferred=False,
    )

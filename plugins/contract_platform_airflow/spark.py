"""How the platform's DAGs submit Spark jobs: one builder, so every job is submitted the same way.

- ``spark_default`` is always named explicitly, and checked before anything is submitted: the
  Spark provider falls back to YARN in silence when the connection is missing, and YARN without
  ``HADOOP_CONF_DIR``/``YARN_CONF_DIR`` cannot work. Either fails the task at once, without retry,
  with one line that says how to set the connection. On embedded defaults it is ``local[*]``, in
  production a ``spark://``, YARN or Kubernetes master — nothing else changes.
- Every Spark task runs in the ``contract_platform_spark`` pool, sized for the machine
  (``settings.sizing``), so Spark jobs do not fight over the cores; under CeleryExecutor it goes to the
  Celery queue ``$CONTRACT_SPARK_QUEUE`` when that is set (``settings.spark_queue``).
- The ``spark-submit`` shipped inside the pinned pyspark wheel is used, so the driver's Spark
  matches the platform's pyspark exactly.
- A job that exits with ``BAD_INPUT`` (2: bad arguments, a catalogue that does not load, a missing
  archive) fails the task without retry; any other failure keeps the task's retries.
- Driver and executors run the platform's own Python (PYSPARK_PYTHON), which has the domain
  library installed; on a cluster the workers need the platform installed the same way.
- A job names the input it reads (``reads``, templated): a small local input on a local master starts its
  driver quickly (``contract_platform.jvm.quick_start``, the rule ``contractctl`` follows too): the client
  compiler only, and Spark's classes mapped from the machine's class-data archive (``jvm.class_archive``),
  which the first such driver writes when it exits.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowNotFoundException

import spark_jobs
from contract_platform.errors import ContractPlatformError
from contract_platform.jvm import (
    QUICK_START_JAVA_OPTIONS,
    class_archive,
    driver_java_options,
    local_driver_environment,
    quick_start,
)
from contract_platform_airflow.settings import SPARK_POOL, spark_queue

__all__ = [
    "JOBS_DIR",
    "SPARK_SUBMIT",
    "PlatformSparkSubmitOperator",
    "check_spark_connection",
    "job_path",
    "spark_master",
    "spark_submit",
]

LOCAL_EXAMPLE = """AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[*]"}'"""
HADOOP_CONF_VARS = ("HADOOP_CONF_DIR", "YARN_CONF_DIR")

BAD_INPUT = ContractPlatformError.exit_code  # what every Spark job exits with on bad input (spark_jobs/jobs.py)
JOBS_DIR = Path(spark_jobs.__file__).resolve().parent
_PYSPARK = importlib.util.find_spec("pyspark")
SPARK_SUBMIT = (
    str(Path(_PYSPARK.origin).parent / "bin" / "spark-submit") if _PYSPARK and _PYSPARK.origin else "spark-submit"
)


def job_path(job: str) -> str:
    path = JOBS_DIR / f"{job}.py"
    if not path.exists():
        raise FileNotFoundError(f"no Spark job {job!r} in {JOBS_DIR}")
    return str(path)


def _python() -> str:
    return os.environ.get("PYSPARK_PYTHON") or sys.executable


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def spark_master(conn: Any) -> str:
    """The ``--master`` the Spark provider derives from a connection (its ``_resolve_connection`` rule)."""
    if conn.conn_type == "spark" and conn.host and ("://" in conn.host or not conn.port):
        master = str(conn.host)
    else:
        master = f"{conn.conn_type}://{conn.host or ''}"
    return f"{master}:{conn.port}" if conn.port else master


def check_spark_connection(conn_id: str, env_vars: dict[str, str] | None = None) -> str:
    """The master ``conn_id`` submits to; ``AirflowFailException`` (no retry) when it cannot work.

    A missing connection or a YARN master without a Hadoop configuration on this worker would only
    surface as a spark-submit failure after the retries, or not at all; one line says how to fix it.
    """
    try:
        conn = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        raise AirflowFailException(
            f"Spark connection {conn_id!r} is not defined, so the Spark provider would submit to YARN: set it for "
            f"every Airflow component, e.g. {LOCAL_EXAMPLE} (bash scripts/airflow-local does), or add it under "
            "Admin > Connections (a spark://, YARN or k8s:// master in production, see docs/deploy.md)"
        ) from None
    master = spark_master(conn)
    env = {**os.environ, **(env_vars or {})}
    if master.startswith("yarn") and not any(env.get(name) for name in HADOOP_CONF_VARS):
        raise AirflowFailException(
            f"Spark connection {conn_id!r} points at YARN (master {master!r}) but neither HADOOP_CONF_DIR nor "
            "YARN_CONF_DIR is set on this worker: set one to the cluster's Hadoop configuration directory, or "
            f"point {conn_id!r} at another master, e.g. {LOCAL_EXAMPLE}"
        )
    if master.startswith("k8s") and not _installed("airflow.providers.cncf.kubernetes"):
        raise AirflowFailException(
            f"Spark connection {conn_id!r} points at Kubernetes (master {master!r}) but the Spark provider needs "
            "apache-airflow-providers-cncf-kubernetes for that: install apache-airflow-providers-apache-spark"
            f"[cncf-kubernetes] on every Airflow worker, or point {conn_id!r} at another master, e.g. {LOCAL_EXAMPLE}"
        )
    return master


class PlatformSparkSubmitOperator(SparkSubmitOperator):
    """SparkSubmitOperator that hands the job the registry URL of ``contract_registry_default`` and, for a
    job that reads the broker (``with_broker``), the AMQP URL of ``rabbitmq_default``.

    The URLs are resolved when the task runs (credentials are read only then) and passed through
    the job's environment, never its command line, which the Spark hook logs. ``reads``: the input the job
    reads (templated), which decides a quick start.
    """

    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "reads")

    def __init__(self, *, with_broker: bool = False, reads: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.with_broker = with_broker
        self.reads = reads

    def execute(self, context: Any) -> Any:
        from contract_platform_airflow.hooks.registry import RegistryHook

        # Read when the task runs (not when the DAG is parsed): the worker's settings are the truth.
        master = check_spark_connection(self._conn_id, self.env_vars)
        self.log.info("submitting %s to Spark master %s (connection %s)", self.name, master, self._conn_id)
        platform = {k: v for k, v in os.environ.items() if k.startswith("CONTRACT_")}
        # Where the platform is installed on this worker, not on the machine that parsed the DAG: prepended to a
        # user's own extraJavaOptions.
        options = driver_java_options()
        archive = None
        if quick_start(master, self.reads):
            archive = class_archive({**os.environ, **(self.env_vars or {})})
            self.log.info(
                "quick start: %s holds at most a few MiB, so the driver compiles with C1 only%s",
                self.reads,
                ""
                if archive is None
                else f" and {'writes' if archive.writing else 'maps'} Spark's classes at {archive.path}",
            )
            options = " ".join([options, QUICK_START_JAVA_OPTIONS, *(archive.options if archive else ())])
        self.conf = {"spark.driver.defaultJavaOptions": options, **(self.conf or {})}
        local = local_driver_environment(master)  # a local driver binds to loopback instead of guessing a host
        self.env_vars = {
            **local,
            **platform,
            **(self.env_vars or {}),
            "CONTRACT_REGISTRY_URL": RegistryHook().get_url(),
        }
        if self.with_broker:
            from contract_platform_airflow.hooks.rabbitmq import RabbitMQHook

            self.env_vars["CONTRACT_RABBITMQ_URL"] = RabbitMQHook().get_url()
        for value in self.env_vars.values():  # on YARN and Kubernetes env_vars go on the logged command line
            _mask_credentials(str(value))
        try:
            return super().execute(context)
        except AirflowException as exc:
            if self._exit_code() == BAD_INPUT:  # the job said what is wrong with its input: retrying cannot fix it
                raise AirflowFailException(
                    f"{self.name} rejected its input (exit {BAD_INPUT}); its 'error:' lines above say what to fix"
                ) from exc
            raise
        finally:
            if archive is not None:  # the driver has exited: the archive it wrote, if any, goes in place
                code = self._exit_code()
                archive.finish(exited=code is not None and code >= 0)

    def _exit_code(self) -> int | None:
        process = getattr(self._hook, "_submit_sp", None)
        return getattr(process, "returncode", None)


def _mask_credentials(url: str) -> None:
    """Have Airflow's log masker hide ``url`` and its password wherever they would be logged (when it has one)."""
    from urllib.parse import urlsplit

    from airflow.sdk.log import mask_secret

    if "://" not in url:
        return
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    if password:
        mask_secret(password)
        mask_secret(url)


def spark_submit(*, task_id: str, job: str, application_args: list[str], **kwargs: Any) -> SparkSubmitOperator:
    """A SparkSubmitOperator for ``spark_jobs/<job>.py`` on ``spark_default``."""
    conf = {
        "spark.pyspark.python": _python(),
        "spark.pyspark.driver.python": _python(),
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        **kwargs.pop("conf", {}),
    }
    env = {
        "PYSPARK_PYTHON": _python(),
        "PYSPARK_DRIVER_PYTHON": _python(),
        **kwargs.pop("env_vars", {}),
    }
    queue = kwargs.pop("queue", None) or spark_queue()
    if queue:
        kwargs["queue"] = queue
    return PlatformSparkSubmitOperator(
        task_id=task_id,
        conn_id="spark_default",
        application=job_path(job),
        application_args=application_args,
        spark_binary=SPARK_SUBMIT,
        conf=conf,
        env_vars=env,
        name=f"contract-platform-{job.replace('_', '-')}",
        pool=kwargs.pop("pool", SPARK_POOL),
        **kwargs,
    )

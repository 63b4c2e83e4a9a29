"""How the platform's DAGs submit Spark jobs: one builder, so every job is submitted the same way.

- ``spark_default`` is always named explicitly (a missing connection would otherwise fall back
  to YARN in silence); on embedded defaults it is ``local[*]``, in production a ``spark://``,
  YARN or Kubernetes master — nothing else changes.
- The ``spark-submit`` shipped inside the pinned pyspark wheel is used, so the driver's Spark
  matches the platform's pyspark exactly.
- Driver and executors run the platform's own Python (PYSPARK_PYTHON), which has the domain
  library installed; on a cluster the workers need the platform installed the same way.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

import spark_jobs

__all__ = ["JOBS_DIR", "SPARK_SUBMIT", "PlatformSparkSubmitOperator", "job_path", "spark_submit"]

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


class PlatformSparkSubmitOperator(SparkSubmitOperator):
    """SparkSubmitOperator that hands the job the registry URL of ``contract_registry_default``.

    The URL is resolved when the task runs (credentials are read only then) and passed through
    the job's environment, never its command line, which the Spark hook logs.
    """

    def execute(self, context: Any) -> Any:
        from contract_platform_airflow.hooks.registry import RegistryHook

        # Read when the task runs (not when the DAG is parsed): the worker's settings are the truth.
        platform = {k: v for k, v in os.environ.items() if k.startswith("CONTRACT_")}
        self.env_vars = {**platform, **(self.env_vars or {}), "CONTRACT_REGISTRY_URL": RegistryHook().get_url()}
        return super().execute(context)


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
    return PlatformSparkSubmitOperator(
        task_id=task_id,
        conn_id="spark_default",
        application=job_path(job),
        application_args=application_args,
        spark_binary=SPARK_SUBMIT,
        conf=conf,
        env_vars=env,
        name=f"contract-platform-{job.replace('_', '-')}",
        **kwargs,
    )

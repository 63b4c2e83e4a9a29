"""What every Spark driver JVM the platform launches is told at its start: by ``spark-submit`` (the Airflow
tasks, ``contract_platform_airflow.spark``) and by ``contractctl``'s in-process sessions
(``spark_jobs.session``) alike, so a first run prints no warning nobody can act on (docs/deploy.md#warnings).

- ``driver_java_options``: the platform's log4j2 configuration (``log4j2.properties`` beside this module):
  Spark's defaults, with Hadoop's notice that its optional native library is absent kept out. Given as
  ``spark.driver.defaultJavaOptions``, which Spark prepends to a user's ``spark.driver.extraJavaOptions``.
- ``local_driver_environment``: for a ``local`` master, ``SPARK_LOCAL_IP=127.0.0.1``. The driver and its
  executors are one process, so it binds to the loopback interface instead of looking the host name up
  and warning that it resolves to a loopback address (advice that matters on a cluster, where it is kept).

A user's own setting wins: a ``SPARK_LOCAL_IP`` in the environment, a ``-Dlog4j2.configurationFile`` in
their own ``spark.driver.extraJavaOptions`` (it comes later on the JVM's command line). Pure: nothing here
starts Spark.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["LOG4J2_CONFIG", "driver_java_options", "local_driver_environment"]

LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")


def driver_java_options() -> str:
    """The Java options a driver JVM starts with (``spark.driver.extraJavaOptions``)."""
    return f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.resolve().as_uri()}"


def local_driver_environment(master: str | None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a driver of ``master`` starts with, beyond its parent's: for a local master (``local``,
    ``local[*]``, ``local[2,3]``; None is Spark's default, local), the loopback address to bind to."""
    environ = os.environ if environ is None else environ
    if (master or "local").strip().startswith("local") and not environ.get("SPARK_LOCAL_IP"):
        return {"SPARK_LOCAL_IP": "127.0.0.1"}
    return {}

"""What every Spark driver JVM the platform launches is told at its start: by ``spark-submit`` (the Airflow
tasks, ``contract_platform_airflow.spark``) and by ``contractctl``'s in-process sessions
(``spark_jobs.session``) alike, so a first run prints no warning nobody can act on (docs/deploy.md#warnings).

- ``driver_java_options``: the platform's log4j2 configuration (``log4j2.properties`` beside this module):
  Spark's defaults, with Hadoop's notice that its optional native library is absent kept out. Given as
  ``spark.driver.defaultJavaOptions``, which Spark prepends to a user's ``spark.driver.extraJavaOptions``.
- ``local_driver_environment``: for a ``local`` master, ``SPARK_LOCAL_IP=127.0.0.1``. The driver and its
  executors are one process, so it binds to the loopback interface instead of looking the host name up
  and warning that it resolves to a loopback address (advice that matters on a cluster, where it is kept).
- ``quick_start``: a local master whose input is a local file or folder of at most ``QUICK_START_BYTES``
  starts its driver with the client compiler only (``QUICK_START_JAVA_OPTIONS``): C2's compilations are
  not repaid in a run of seconds, and a large input, or a cluster, keeps C2 (docs/archive-validation.md#fixed-cost).
  The one rule for ``contractctl``'s in-process sessions and the DAGs' ``spark-submit`` alike.

A user's own setting wins: a ``SPARK_LOCAL_IP`` in the environment, a ``-Dlog4j2.configurationFile`` in
their own ``spark.driver.extraJavaOptions`` (it comes later on the JVM's command line). Pure: nothing here
starts Spark.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "LOG4J2_CONFIG",
    "QUICK_START_BYTES",
    "QUICK_START_JAVA_OPTIONS",
    "driver_java_options",
    "is_local",
    "local_driver_environment",
    "local_size_at_most",
    "quick_start",
]

LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")
# A small job's driver: the client compiler only (no C2), for a JVM that runs seconds, not minutes.
QUICK_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
QUICK_START_BYTES = 8 * 2**20  # a local input up to this size starts quickly


def is_local(master: str | None) -> bool:
    """Whether ``master`` runs the driver and its executors in one local process (``local``, ``local[*]``,
    ``local[2,3]``; None is Spark's default, local)."""
    return (master or "local").strip().startswith("local")


def driver_java_options() -> str:
    """The Java options a driver JVM starts with (``spark.driver.extraJavaOptions``)."""
    return f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.resolve().as_uri()}"


def local_driver_environment(master: str | None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a driver of ``master`` starts with, beyond its parent's: for a local master (``local``,
    ``local[*]``, ``local[2,3]``; None is Spark's default, local), the loopback address to bind to."""
    environ = os.environ if environ is None else environ
    if is_local(master) and not environ.get("SPARK_LOCAL_IP"):
        return {"SPARK_LOCAL_IP": "127.0.0.1"}
    return {}


def local_size_at_most(path: str, limit: int) -> bool:
    """True when ``path`` is a local file or folder whose files hold at most ``limit`` bytes together.

    Walks the folder only until the limit is passed; a path of another file system (``hdfs:``,
    ``s3a:``) or one that does not exist is False.
    """
    local = path.removeprefix("file://") if path.startswith("file://") else path
    if "://" in local or not os.path.exists(local):
        return False
    if os.path.isfile(local):
        return os.path.getsize(local) <= limit
    total = 0
    for folder, _, names in os.walk(local):
        for name in names:
            try:
                total += os.path.getsize(os.path.join(folder, name))
            except OSError:  # gone meanwhile: Spark will say so
                continue
            if total > limit:
                return False
    return True


def quick_start(master: str | None, input_path: str | None) -> bool:
    """Whether a driver of ``master`` reading ``input_path`` starts quickly (``QUICK_START_JAVA_OPTIONS``): a local
    master and a local input of at most ``QUICK_START_BYTES``. An input not given, or not on this machine, is not small."""
    return is_local(master) and bool(input_path) and local_size_at_most(str(input_path), QUICK_START_BYTES)

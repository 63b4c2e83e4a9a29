"""The Spark session every job and ``contractctl`` verb runs on: JVM launch settings, session tuning, start and stop.

The master comes from ``--master``, else from ``spark-submit`` (or ``spark-defaults.conf``), else
``local[*]``; nothing else changes between a laptop and a ``spark://``, YARN or Kubernetes cluster.

When the process starts the driver's JVM itself (``contractctl``, a DAG task, not ``spark-submit``),
the settings a JVM needs at its start are given on its command line (``LAUNCH_DEFAULTS``): set on the
session afterwards they would come too late. A job that knows its input is small asks for a quick
start (``JobRun.quick_start``, ``contract_platform.jvm.quick_start``): the driver compiles with the client
compiler only (``QUICK_START_JAVA_OPTIONS``), which starts a JVM in about two thirds of the CPU time and makes long
JVM work slower, and maps Spark's classes from a class-data archive that the first such JVM writes
(``class_archive_options``; docs/archive-validation.md#fixed-cost).

``build_session`` starts (or reuses) a session and ``stop_session`` stops one this process started;
``local_session`` and ``spark_jobs.jobs.JobRun`` are the two ways jobs and verbs use them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from contract_platform.jvm import (
    QUICK_START_BYTES,
    QUICK_START_JAVA_OPTIONS,
    ClassArchive,
    class_archive,
    driver_java_options,
    local_driver_environment,
    local_size_at_most,
)
from contract_platform.quality.telemetry import analytics_environment
from spark_jobs.quiet import jvm_output

__all__ = [
    "DRIVER_MEMORY_RANGE",
    "QUICK_START_BYTES",
    "SESSION_DEFAULTS",
    "build_session",
    "default_driver_memory",
    "driver_memory_chosen",
    "launch_conf",
    "local_session",
    "local_size_at_most",
    "stop_session",
]

DEFAULT_MASTER = "local[*]"

# On every master, not only local: a small input must not run Spark's fixed 200-partition shuffles.
# Adaptive execution coalesces shuffle partitions to what the data needs; the UI and the console
# progress bar cost start-up time and nothing reads them in a batch job.
SESSION_DEFAULTS: Mapping[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # a wide plan's text is cut at 25 fields, with a warning nobody acts on: a plan is printed only on demand
    "spark.sql.debug.maxToStringFields": "1000",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.parallelismFirst": "false",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": "32m",
    "spark.python.worker.reuse": "true",
}

# What the driver's JVM must have on its command line when this process launches it. pyspark launches
# its JVM as a "pyspark-shell", and spark-submit turns the console progress bar on for a shell unless
# the command line says otherwise; the same key in SESSION_DEFAULTS covers spark-submit's own launches.
LAUNCH_DEFAULTS: Mapping[str, str] = {"spark.ui.showConsoleProgress": "false"}
# A quick start also maps Spark's classes from a class-data archive (``contract_platform.jvm.class_archive``):
# the one this process's JVM writes at its exit, if any, is put in place when the session stops.
_class_archive_pending: ClassArchive | None = None


def class_archive_options() -> list[str]:
    """The driver's Java options for the class-data archive of this Spark and Java: read it, or write it at exit."""
    global _class_archive_pending
    archive = class_archive()
    if archive is None:
        return []
    if archive.writing is not None:
        _class_archive_pending = archive
    return archive.options


def _finish_class_archive() -> None:
    """After the session stopped: let the JVM exit (it writes the archive then) and put the archive in place."""
    global _class_archive_pending
    if _class_archive_pending is None:
        return
    archive, _class_archive_pending = _class_archive_pending, None
    gateway: Any = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    try:
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()  # the JVM exits when its stdin closes
        process.wait(timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        process = None
    finally:
        SparkContext._gateway = None
        SparkContext._jvm = None
        archive.finish(exited=process is not None and process.returncode == 0)


def session_conf(spark_conf: SparkConf, conf: Mapping[str, str] | None = None) -> SparkConf:
    """``spark_conf`` completed with the platform's defaults (what is already set wins: spark-submit's, the caller's),
    and the executors' environment without Great Expectations' usage analytics (``quality.telemetry``)."""
    for key, value in (conf or {}).items():
        spark_conf.setIfMissing(key, value)
    if not spark_conf.contains("spark.master"):
        spark_conf.setMaster(DEFAULT_MASTER)
    for key, value in SESSION_DEFAULTS.items():
        spark_conf.setIfMissing(key, value)
    for name, value in analytics_environment().items():  # GX's usage analytics, off on the executors too
        spark_conf.setIfMissing(f"spark.executorEnv.{name}", value)
    if spark_conf.get("spark.master", "").startswith("local"):
        spark_conf.setIfMissing("spark.driver.host", "127.0.0.1")  # no host name lookup on a laptop
        spark_conf.setIfMissing("spark.driver.bindAddress", "127.0.0.1")
    return spark_conf


def launch_conf(quick_start: bool = False) -> SparkConf:
    """What goes on the command line of a driver JVM this process launches (``LAUNCH_DEFAULTS``, quick start).

    ``PYSPARK_SUBMIT_ARGS`` comes after it on that command line, so a user's ``--conf`` or
    ``--driver-java-options`` there wins. The driver's heap is ``default_driver_memory()`` unless the
    user sized it (``driver_memory_chosen``).
    """
    conf = SparkConf(loadDefaults=False)
    for key, value in LAUNCH_DEFAULTS.items():
        conf.set(key, value)
    if not driver_memory_chosen():
        conf.set("spark.driver.memory", default_driver_memory())
    conf.set("spark.driver.defaultJavaOptions", driver_java_options())  # prepended to extraJavaOptions
    if quick_start:
        conf.set("spark.driver.extraJavaOptions", " ".join([QUICK_START_JAVA_OPTIONS, *class_archive_options()]))
    return conf


# In local mode the driver is the executor too: it caches the checked records and runs every task.
# Spark's 1g default ran out of heap validating 3M records (1.6 GB of record text, 2 cores).
DRIVER_MEMORY_RANGE = (1, 4)  # GiB: a quarter of the machine's memory, within these bounds


def default_driver_memory() -> str:
    """A quarter of the machine's memory, between 1 and 4 GiB, as Spark writes a size (``"4g"``)."""
    low, high = DRIVER_MEMORY_RANGE
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):  # no sysconf: Spark's own default
        return f"{low}g"
    return f"{max(low, min(high, int(total // 4)))}g"


def driver_memory_chosen() -> bool:
    """Whether the user sized the driver: ``SPARK_DRIVER_MEMORY``, ``PYSPARK_SUBMIT_ARGS`` or ``spark-defaults.conf``."""
    if os.environ.get("SPARK_DRIVER_MEMORY"):
        return True
    submit_args = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    if "--driver-memory" in submit_args or "spark.driver.memory" in submit_args:
        return True
    folder = os.environ.get("SPARK_CONF_DIR") or (
        str(Path(os.environ["SPARK_HOME"]) / "conf") if os.environ.get("SPARK_HOME") else None
    )
    if folder is None:
        return False
    try:
        text = (Path(folder) / "spark-defaults.conf").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(re.split(r"[\s=:]", line.strip(), maxsplit=1)[0] == "spark.driver.memory" for line in text.splitlines())


def build_session(
    app_name: str, master: str | None = None, conf: Mapping[str, str] | None = None, *, quick_start: bool = False
) -> tuple[SparkSession, bool]:
    """(session, created): an already active session is reused (and must not be stopped by the caller).

    A new session's shuffles get two partitions per core the master offers (``defaultParallelism``)
    unless ``spark.sql.shuffle.partitions`` was given; adaptive execution merges them further.
    ``quick_start``: the input is small, so a JVM launched here compiles with the client compiler only.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    active = SparkSession.getActiveSession()
    if active is None and SparkContext._active_spark_context is not None:
        # getActiveSession is per thread: a job run on another thread of this process (the audit's archive scan,
        # which runs beside the broker connection's heartbeats) gets the process's session, and must not stop it
        active = SparkSession.builder.getOrCreate()
    if active is not None:
        return active, False
    # Under spark-submit the JVM is already there and holds --master and every --conf; a SparkConf made
    # before connecting to it would be empty, and the job would quietly run in local mode.
    if SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        # a quiet contractctl verb: the JVM's output goes to its log (spark_jobs/quiet.py)
        with jvm_output(), _environment(local_driver_environment(_launch_master(master))):
            SparkContext._ensure_initialized(conf=launch_conf(quick_start))
    else:
        SparkContext._ensure_initialized()
    spark_conf = SparkConf()
    if master:
        spark_conf.setMaster(master)
    session_conf(spark_conf, conf)
    chosen = spark_conf.contains("spark.sql.shuffle.partitions")
    session = SparkSession.builder.appName(app_name).config(conf=spark_conf).getOrCreate()
    if not chosen:
        session.conf.set("spark.sql.shuffle.partitions", str(max(2, 2 * session.sparkContext.defaultParallelism)))
    return session, True


def _launch_master(master: str | None) -> str | None:
    """The master a driver launched here gets: ``master``, else a ``--master`` in ``PYSPARK_SUBMIT_ARGS``, else
    None (``spark-defaults.conf``, else local)."""
    if master:
        return master
    words = os.environ.get("PYSPARK_SUBMIT_ARGS", "").split()
    return words[words.index("--master") + 1] if "--master" in words[:-1] else None


@contextmanager
def _environment(extra: Mapping[str, str]) -> Iterator[None]:
    """``extra`` in the environment while a driver JVM is launched (it inherits it), as it was afterwards."""
    saved = {name: os.environ.get(name) for name in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def stop_session(session: SparkSession) -> None:
    """Stop a session this process started, then let its JVM write the class-data archive (a quick start's)."""
    session.stop()
    _finish_class_archive()


@contextmanager
def local_session(
    app_name: str, master: str | None = None, conf: Mapping[str, str] | None = None
) -> Iterator[SparkSession]:
    """A session for a verb or a benchmark (an active one is reused), stopped at the end when it was created here."""
    spark, created = build_session(app_name, master, conf)
    try:
        yield spark
    finally:
        if created:
            stop_session(spark)

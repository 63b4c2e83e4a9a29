"""What every Spark job shares: one ``run_job()`` skeleton, its session, and the job's file system.

``run_job`` is every job's ``main``: the common arguments (``--master``, ``--catalog``,
``--registry-url``, ``--run-id``, ``--no-fail-on-findings``), the catalogue loaded before a JVM
starts, one Spark session for the whole call (stopped at the end when the job created it), and one
mapping of outcomes to exit codes:

* 0 the job ran and found nothing (or ``--no-fail-on-findings`` and it found something);
* 1 findings (invalid records, missed expectations, parity not holding);
* 2 bad input (``BAD_INPUT``: bad arguments, ``--until`` not after ``--since``, a catalogue that does not
  load, a missing archive): one
  ``error:`` line per problem, no traceback; ``spark-submit`` hands the code back, and the DAGs'
  operator fails such a task without retry;
* 3 the registry store failed (transient: the task retries).

The master comes from ``--master``, else from ``spark-submit`` (or ``spark-defaults.conf``), else
``local[*]``; nothing else changes between a laptop and a ``spark://``, YARN or Kubernetes cluster.
Paths go through Hadoop's FileSystem, so ``file:``, ``hdfs:`` and ``s3a:`` paths work alike.

When the process starts the driver's JVM itself (``contractctl``, a DAG task, not ``spark-submit``),
the settings a JVM needs at its start are given on its command line (``LAUNCH_DEFAULTS``): set on the
session afterwards they would come too late. A job that knows its input is small asks for a quick
start (``JobRun.quick_start``): the driver compiles with the client compiler only
(``QUICK_START_JAVA_OPTIONS``), which starts a JVM in about two thirds of the CPU time and makes long
JVM work slower, and maps Spark's classes from a class-data archive that the first such JVM writes
(``class_archive_options``; docs/archive-validation.md#fixed-cost).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from pyspark import SparkConf, SparkContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from contract_platform import settings
from contract_platform.catalog import load_catalog
from contract_platform.catalog.model import Catalog
from contract_platform.days import check_range, parse_day
from contract_platform.errors import ContractPlatformError, UsageError

__all__ = [
    "ARCHIVE_FILES",
    "BAD_INPUT",
    "FINDINGS",
    "JobRun",
    "build_session",
    "date_arg",
    "date_partitions",
    "days",
    "file_sizes",
    "folder_date",
    "hadoop_path",
    "job_parser",
    "launch_conf",
    "local_size_at_most",
    "parse_records",
    "partition_date",
    "path_exists",
    "path_is_dir",
    "path_is_empty",
    "print_error",
    "read_archive",
    "run_job",
    "session_conf",
]

DEFAULT_MASTER = "local[*]"
ARCHIVE_FILES = "*.{jsonl,jsonl.gz}"  # what an archive folder holds (docs/design.md#archive-record)
FINDINGS = 1
BAD_INPUT = ContractPlatformError.exit_code  # 2, as contractctl's
PARTITION_PREFIX = "date="  # an archive's date partitions: <root>/<exchange>/date=YYYY-MM-DD/


def print_error(exc: Exception) -> None:
    """One ``error:`` line per problem on stderr: every problem of a catalogue that does not load, no traceback."""
    for problem in getattr(exc, "problems", None) or [exc]:
        print(f"error: {problem}", file=sys.stderr)


# -- the session --------------------------------------------------------------------------------

# On every master, not only local: a small input must not run Spark's fixed 200-partition shuffles.
# Adaptive execution coalesces shuffle partitions to what the data needs; the UI and the console
# progress bar cost start-up time and nothing reads them in a batch job.
SESSION_DEFAULTS: Mapping[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
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
# A small job's driver: the client compiler only (no C2), for a JVM that runs seconds, not minutes.
QUICK_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
QUICK_START_BYTES = 8 * 2**20  # local input up to this size starts quickly (a job's choice, local_size_at_most)
# A quick start also maps Spark's classes from a class-data archive (AppCDS) instead of loading and
# verifying each of them: the first such JVM writes the archive when it exits, the next ones read it.
# The folder: $CONTRACT_JVM_CLASS_CACHE (``off``: no archive), else ~/.cache/contract-platform.
CLASS_CACHE_ENV = "CONTRACT_JVM_CLASS_CACHE"
# The JVM's own warnings to stderr, never into a job's stdout (its JSON report); writing an archive
# warns of every class it leaves out, which nobody acts on.
_QUIET_CDS = ("-Xlog:disable", "-Xlog:all=warning,cds*=off:stderr")
_class_archive_pending: tuple[Path, Path] | None = None  # (being written, final name) by the JVM launched here


def class_archive_options() -> list[str]:
    """The driver's Java options for the class-data archive of this Spark and Java: read it, or write it at exit."""
    global _class_archive_pending
    folder = os.environ.get(CLASS_CACHE_ENV) or str(Path.home() / ".cache" / "contract-platform")
    if folder == "off":
        return []
    import pyspark

    jars = sorted(path.name for path in (Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    java = os.environ.get("JAVA_HOME") or os.path.realpath(_which("java") or "java")
    digest = hashlib.sha256("\n".join([java, pyspark.__version__, *jars]).encode("utf-8")).hexdigest()[:16]
    archive = Path(folder) / f"spark-classes-{digest}.jsa"
    if archive.is_file() and archive.stat().st_size > 0:
        return [*_QUIET_CDS, f"-XX:SharedArchiveFile={archive}"]
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
    except OSError:  # no writable cache: start without one
        return []
    for stale in archive.parent.glob("spark-classes-*.tmp"):  # left by a JVM nobody waited for
        try:
            if stale.stat().st_mtime < time.time() - 3600:
                stale.unlink()
        except OSError:
            continue
    writing = archive.with_name(f"{archive.name}.{os.getpid()}.tmp")
    _class_archive_pending = (writing, archive)
    return [*_QUIET_CDS, f"-XX:ArchiveClassesAtExit={writing}"]


def _which(name: str) -> str | None:
    import shutil

    return shutil.which(name)


def _finish_class_archive() -> None:
    """After the session stopped: let the JVM exit (it writes the archive then) and put the archive in place."""
    global _class_archive_pending
    if _class_archive_pending is None:
        return
    writing, archive = _class_archive_pending
    _class_archive_pending = None
    gateway: Any = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    if process is None:
        return
    try:
        if process.stdin is not None:
            process.stdin.close()  # the JVM exits when its stdin closes
        process.wait(timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return
    finally:
        SparkContext._gateway = None
        SparkContext._jvm = None
    if process.returncode == 0 and writing.is_file() and writing.stat().st_size > 0:
        os.replace(writing, archive)  # atomic: a JVM never reads a half-written archive
    else:
        writing.unlink(missing_ok=True)


def session_conf(spark_conf: SparkConf, conf: Mapping[str, str] | None = None) -> SparkConf:
    """``spark_conf`` completed with the platform's defaults (what is already set wins: spark-submit's, the caller's)."""
    for key, value in (conf or {}).items():
        spark_conf.setIfMissing(key, value)
    if not spark_conf.contains("spark.master"):
        spark_conf.setMaster(DEFAULT_MASTER)
    for key, value in SESSION_DEFAULTS.items():
        spark_conf.setIfMissing(key, value)
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
    if active is not None:
        return active, False
    # Under spark-submit the JVM is already there and holds --master and every --conf; a SparkConf made
    # before connecting to it would be empty, and the job would quietly run in local mode.
    if SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        from spark_jobs.quiet import jvm_output

        with jvm_output():  # a quiet contractctl verb: the JVM's output goes to its log (spark_jobs/quiet.py)
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


# -- run_job: every job's main ------------------------------------------------------------------


def job_parser(
    prog: str, description: str, *, catalog: bool = True, evidence: bool = True, findings: bool = True
) -> argparse.ArgumentParser:
    """An argument parser with the options every job shares; the job adds its own."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--master", default=None, help="Spark master (default: spark-submit's, else local[*])")
    if catalog:
        parser.add_argument(
            "--catalog", default=None, help="catalogue folder (default $CONTRACT_CATALOG or ./contracts)"
        )
    if evidence:
        parser.add_argument(
            "--registry-url", default=None, help="record evidence in this registry (default $CONTRACT_REGISTRY_URL)"
        )
        parser.add_argument("--run-id", default=None, help="the run the evidence belongs to (e.g. the DAG run's id)")
    if findings:
        parser.add_argument(
            "--no-fail-on-findings",
            action="store_true",
            help="exit 0 when the job ran but found something (findings are evidence); bad input still exits 2",
        )
    return parser


@dataclass
class JobRun:
    """One call of a job: its arguments, its catalogue, and the one Spark session it uses (made when first asked)."""

    app_name: str
    args: argparse.Namespace
    catalog_dir: str | None = None
    catalog: Catalog | None = None
    registry_url: str | None = None
    quick_start: bool = False  # set by a job that knows its input is small, before it first asks for ``spark``
    _session: SparkSession | None = field(default=None, repr=False)
    _created: bool = field(default=False, repr=False)

    @property
    def spark(self) -> SparkSession:
        if self._session is None:
            self._session, self._created = build_session(
                self.app_name, getattr(self.args, "master", None), quick_start=self.quick_start
            )
        return self._session

    def close(self) -> None:
        if self._session is not None and self._created:
            self._session.stop()
            _finish_class_archive()
        self._session = None


def run_job(
    app_name: str,
    parser: argparse.ArgumentParser,
    body: Callable[[JobRun], int],
    argv: Sequence[str] | None = None,
) -> int:
    """Parse ``argv``, load the catalogue, run ``body`` with one session, map the outcome to an exit code.

    ``body`` returns 0 or ``FINDINGS``; a ``ContractPlatformError`` becomes its ``exit_code`` with one
    ``error:`` line per problem. ``--no-fail-on-findings`` turns ``FINDINGS`` (only) into 0. A job with
    ``--since`` and ``--until`` gets them checked here (``check_range``), before the catalogue loads.
    """
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed usage (exit 2, bad input) or help (0)
        return int(exc.code or 0)
    run = JobRun(app_name, args)
    try:
        check_range(getattr(args, "since", None), getattr(args, "until", None))
        if hasattr(args, "catalog"):
            run.catalog_dir = args.catalog or str(settings.catalog_dir())
            run.catalog = load_catalog(run.catalog_dir)  # fail fast, before a JVM starts
        if hasattr(args, "registry_url"):
            run.registry_url = args.registry_url or os.environ.get("CONTRACT_REGISTRY_URL") or None
        try:
            code = body(run)
        finally:
            run.close()
    except ContractPlatformError as exc:
        print_error(exc)
        return exc.exit_code
    if code == FINDINGS and getattr(args, "no_fail_on_findings", False):
        return 0
    return code


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


def date_arg(text: str) -> date | None:
    """A ``YYYY-MM-DD`` option (empty: no bound), for argparse (``contract_platform.days.parse_day``)."""
    try:
        return parse_day(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def hadoop_path(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """(Hadoop FileSystem, Hadoop Path) for ``path``, through the driver's JVM."""
    context: Any = spark.sparkContext
    target = context._jvm.org.apache.hadoop.fs.Path(path)
    return target.getFileSystem(context._jsc.hadoopConfiguration()), target


def path_exists(spark: SparkSession, path: str) -> bool:
    fs, target = hadoop_path(spark, path)
    return bool(fs.exists(target))


def path_is_dir(spark: SparkSession, path: str) -> bool:
    fs, target = hadoop_path(spark, path)
    return bool(fs.exists(target) and fs.getFileStatus(target).isDirectory())


def path_is_empty(spark: SparkSession, path: str) -> bool:
    """True for a missing path or an empty folder."""
    fs, target = hadoop_path(spark, path)
    return not fs.exists(target) or (fs.getFileStatus(target).isDirectory() and len(fs.listStatus(target)) == 0)


def file_sizes(spark: SparkSession, paths: list[str]) -> int:
    """Total size in bytes of ``paths`` (files as listed by ``DataFrame.inputFiles()``)."""
    total = 0
    for path in paths:
        fs, target = hadoop_path(spark, path)
        total += int(fs.getFileStatus(target).getLen())
    return total


# -- archives as Spark reads them (the jobs that need every line in the JVM) ----------------------


def date_partitions(spark: SparkSession, archive_path: str, since: date | None, until: date | None) -> list[str]:
    """The ``date=YYYY-MM-DD`` folders under ``archive_path`` with ``since <= date < until``, in path order.

    Partition pruning by path: only folder names are listed (``<root>/*/date=*``, ``<exchange>/date=*``,
    or ``archive_path`` itself when it is a date folder); no file outside the range is opened.
    """
    fs, root = hadoop_path(spark, archive_path)
    root_name = str(root.getName())
    if root_name.startswith(PARTITION_PREFIX):
        candidates = [str(root)]
    else:
        candidates = []
        for pattern in (f"{PARTITION_PREFIX}*", f"*/{PARTITION_PREFIX}*"):
            glob = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(root, pattern)  # type: ignore[union-attr]
            candidates += [str(status.getPath()) for status in (fs.globStatus(glob) or []) if status.isDirectory()]
    chosen = []
    for path in candidates:
        day = folder_date(path)
        if day is not None and (since is None or day >= since) and (until is None or day < until):
            chosen.append(path)
    return sorted(set(chosen))


def folder_date(path: str) -> date | None:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if not name.startswith(PARTITION_PREFIX):
        return None
    try:
        return date.fromisoformat(name.removeprefix(PARTITION_PREFIX))
    except ValueError:
        return None


def partition_date(uri: str) -> date | None:
    """The ``date=`` partition a file is in (its parent folder), if any."""
    return folder_date(uri.rstrip("/").rsplit("/", 1)[0])


def days(since: date, until: date) -> list[date]:
    return [since + timedelta(days=n) for n in range((until - since).days)]


def read_archive(
    spark: SparkSession, archive_path: str, since: date | None = None, until: date | None = None
) -> DataFrame:
    """One ``value`` row per line of every ``*.jsonl[.gz]`` under ``archive_path`` (or of that one file).

    With ``since`` or ``until``, only the date partitions in ``[since, until)`` are read (``date_partitions``).
    """
    reader = spark.read.option("recursiveFileLookup", "true")
    if since is not None or until is not None:
        folders = date_partitions(spark, archive_path, since, until)
        if not folders:  # nothing in range: the archive's own (empty) selection, so the columns stay the same
            return reader.option("pathGlobFilter", "no date partition in range").text(archive_path)
        return reader.option("pathGlobFilter", ARCHIVE_FILES).text(folders)
    if path_is_dir(spark, archive_path):
        reader = reader.option("pathGlobFilter", ARCHIVE_FILES)
    return reader.text(archive_path)


def parse_records(lines: DataFrame) -> DataFrame:
    """Lines -> records: archive position (``record_id``), file, line, size and hash.

    ``record_id`` depends on how Spark splits the files, which is the same for the same files read
    the same way; ``line_hash`` lets a second read prove it found the same line under the same id.
    """
    return lines.select(
        F.monotonically_increasing_id().alias("record_id"),
        F.col("_metadata.file_path").alias("archive_file"),
        F.col("value").alias("line"),
        F.octet_length("value").cast("long").alias("line_bytes"),
        F.xxhash64("value").alias("line_hash"),
    )

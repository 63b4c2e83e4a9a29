"""What every Spark job shares: building its session, and asking the job's file system about paths.

The master comes from ``--master``, else from ``spark-submit`` (or ``spark-defaults.conf``), else
``local[*]``; nothing else changes between a laptop and a ``spark://``, YARN or Kubernetes cluster.
Paths go through Hadoop's FileSystem, so ``file:``, ``hdfs:`` and ``s3a:`` paths work alike.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from pyspark import SparkConf
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

__all__ = [
    "ARCHIVE_FILES",
    "build_session",
    "file_sizes",
    "parse_records",
    "path_exists",
    "path_is_dir",
    "path_is_empty",
    "print_error",
    "read_archive",
]

DEFAULT_MASTER = "local[*]"
ARCHIVE_FILES = "*.{jsonl,jsonl.gz}"  # what an archive folder holds (docs/design.md#archive-record)


def print_error(exc: Exception) -> None:
    """One ``error:`` line per problem on stderr: every problem of a catalogue that does not load, no traceback."""
    for problem in getattr(exc, "problems", None) or [exc]:
        print(f"error: {problem}", file=sys.stderr)


def build_session(
    app_name: str, master: str | None = None, conf: Mapping[str, str] | None = None
) -> tuple[SparkSession, bool]:
    """(session, created): an already active session is reused (and must not be stopped by the caller)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    spark_conf = SparkConf()  # under spark-submit this already holds its --master and --conf values
    if master:
        spark_conf.setMaster(master)
    elif not spark_conf.contains("spark.master"):
        spark_conf.setMaster(DEFAULT_MASTER)
    spark_conf.setIfMissing("spark.sql.session.timeZone", "UTC")
    if spark_conf.get("spark.master", "").startswith("local"):  # 200 shuffle partitions only slow one machine down
        spark_conf.setIfMissing("spark.sql.shuffle.partitions", str(2 * (os.cpu_count() or 1)))
    for key, value in (conf or {}).items():
        spark_conf.setIfMissing(key, value)
    session = SparkSession.builder.appName(app_name).config(conf=spark_conf).getOrCreate()
    return session, True


def _hadoop(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """(Hadoop FileSystem, Hadoop Path) for ``path``, through the driver's JVM."""
    context: Any = spark.sparkContext
    hadoop_path = context._jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(context._jsc.hadoopConfiguration()), hadoop_path


def path_exists(spark: SparkSession, path: str) -> bool:
    fs, hadoop_path = _hadoop(spark, path)
    return bool(fs.exists(hadoop_path))


def path_is_dir(spark: SparkSession, path: str) -> bool:
    fs, hadoop_path = _hadoop(spark, path)
    return bool(fs.exists(hadoop_path) and fs.getFileStatus(hadoop_path).isDirectory())


def path_is_empty(spark: SparkSession, path: str) -> bool:
    """True for a missing path or an empty folder."""
    fs, hadoop_path = _hadoop(spark, path)
    return not fs.exists(hadoop_path) or (
        fs.getFileStatus(hadoop_path).isDirectory() and len(fs.listStatus(hadoop_path)) == 0
    )


def file_sizes(spark: SparkSession, paths: list[str]) -> int:
    """Total size in bytes of ``paths`` (files as listed by ``DataFrame.inputFiles()``)."""
    total = 0
    for path in paths:
        fs, hadoop_path = _hadoop(spark, path)
        total += int(fs.getFileStatus(hadoop_path).getLen())
    return total


# -- archives as Spark reads them (the jobs that need every line in the JVM) ----------------------


def read_archive(spark: SparkSession, archive_path: str) -> DataFrame:
    """One ``value`` row per line of every ``*.jsonl[.gz]`` under ``archive_path`` (or of that one file)."""
    reader = spark.read.option("recursiveFileLookup", "true")
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

"""Archives as Spark reads them, for the jobs that need every line in the JVM (docs/design.md#archive-record).

Files live under ``<archive root>/<exchange>/date=YYYY-MM-DD/*.jsonl[.gz]``: ``date_partitions`` lists
the date folders in a range by name alone, ``read_archive`` reads the lines (of those folders only, when
a range is given) and ``parse_records`` gives each line its position, file, size and hash.
"""

from __future__ import annotations

from datetime import date

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from contract_platform.archive_layout import FILE_GLOB, PARTITION_PREFIX, partition_day
from spark_jobs.hadoop_fs import hadoop_path, path_is_dir

__all__ = ["date_partitions", "folder_date", "parse_records", "partition_date", "read_archive"]

ARCHIVE_FILES = FILE_GLOB  # what an archive folder holds (contract_platform.archive_layout)


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
    """The day of a ``date=`` partition folder, or None (``archive_layout.partition_day``)."""
    return partition_day(path)


def partition_date(uri: str) -> date | None:
    """The ``date=`` partition a file is in (its parent folder), if any."""
    return folder_date(uri.rstrip("/").rsplit("/", 1)[0])


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

"""The archive cut into splits for the Spark jobs: ``list_archive`` (the files, by Spark's own index),
``archive_splits`` (a gzipped file whole, a plain one in ``spark.sql.files.maxPartitionBytes`` pieces, packed into
about two partitions per core by their work). Archive validation and the replay read the archive through these.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from contract_platform.archive_layout import GZIP_WEIGHT
from contract_platform.validation.arrow import (
    SPLIT_FIELDS,
)
from contract_platform.validation.reading import DEFAULT_SPLIT_BYTES, Split, file_sizes, plan_splits
from spark_jobs.archive_io import date_partitions, read_archive

__all__ = [
    "PARTITION_WORK",
    "SPLIT_SCHEMA",
    "archive_splits",
    "bytes_setting",
    "list_archive",
    "packed",
    "plan_archive",
    "split_frame",
    "split_row",
    "split_work",
]


SPLIT_SCHEMA = from_arrow_schema(pa.schema(list(SPLIT_FIELDS)))


PARTITION_WORK = 16 * 2**20  # a partition's least work: a small archive is not spread over every core


def list_archive(
    spark: SparkSession, archive_path: str, since: date | None = None, until: date | None = None
) -> list[tuple[str, int]]:
    """(URI, size) of every ``*.jsonl[.gz]`` under ``archive_path`` (or of that one file), in path order.

    Listed by Spark's own file index (recursive, hidden files left out, empty files kept), not read;
    with ``since``/``until`` only the date partitions in range are listed.
    """
    if (since is not None or until is not None) and not date_partitions(spark, archive_path, since, until):
        return []
    uris = sorted(read_archive(spark, archive_path, since, until).inputFiles())
    return list(zip(uris, file_sizes(uris), strict=True))


def archive_splits(
    spark: SparkSession, files: Sequence[tuple[str, int]], split_bytes: int | None = None
) -> tuple[list[Split], DataFrame]:
    """The splits of ``files`` and a DataFrame of them (``SPLIT_FIELDS``), about two partitions per core."""
    splits = plan_archive(spark, files, split_bytes)
    return splits, split_frame(spark, splits)


def plan_archive(spark: SparkSession, files: Sequence[tuple[str, int]], split_bytes: int | None = None) -> list[Split]:
    """The splits of ``files``: a gzipped file whole, a plain one in ``spark.sql.files.maxPartitionBytes`` pieces."""
    if split_bytes is None:
        split_bytes = bytes_setting(spark.conf.get("spark.sql.files.maxPartitionBytes", None), DEFAULT_SPLIT_BYTES)
    return plan_splits(files, split_bytes)


def split_frame(spark: SparkSession, splits: Sequence[Split]) -> DataFrame:
    """A DataFrame of ``splits`` (``SPLIT_FIELDS``), packed into about two partitions per core."""
    context = spark.sparkContext
    enough = (
        1 + sum(split_work(split) for split in splits) // PARTITION_WORK
    )  # each Python worker compiles the catalogue
    bins = packed(splits, min(2 * context.defaultParallelism, enough))
    rows = context.parallelize([[split_row(s) for s in part] for part in bins], len(bins)).flatMap(lambda part: part)
    return spark.createDataFrame(rows, SPLIT_SCHEMA)


def packed(splits: Sequence[Split], slots: int) -> list[list[Split]]:
    """The splits in ``slots`` bins of about equal work, the largest first into the lightest bin."""
    bins: list[list[Split]] = [[] for _ in range(max(1, min(slots, len(splits))))]
    loads = [0] * len(bins)
    for split in sorted(splits, key=lambda s: -split_work(s)):
        lightest = loads.index(min(loads))
        bins[lightest].append(split)
        loads[lightest] += split_work(split)
    return bins


def split_work(split: Split) -> int:
    return split.length * (GZIP_WEIGHT if split.compressed else 1) + 4096  # every file costs an open


def split_row(split: Split) -> tuple[Any, ...]:
    return (split.index, split.uri, split.start, split.length, split.compressed)


def bytes_setting(value: str | None, default: int) -> int:
    """A Spark size setting ("134217728", "128m", "128MB") in bytes."""
    if not value:
        return default
    text = value.strip().lower().removesuffix("b")
    units = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    try:
        return int(text[:-1]) * units[text[-1]] if text[-1:] in units else int(text)
    except ValueError:
        return default

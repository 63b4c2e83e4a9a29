"""Paths through Hadoop's FileSystem, as the driver's JVM sees them: ``file:``, ``hdfs:`` and ``s3a:`` alike."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

__all__ = ["hadoop_path", "path_exists", "path_is_dir", "path_is_empty"]


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

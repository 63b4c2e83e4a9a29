"""Envelope quality (docs/design.md#envelope-quality): Great Expectations over archived envelopes, one suite per message type.

    spark-submit spark_jobs/envelope_quality.py ARCHIVE [--catalog DIR] [--report FILE] [--registry-url URL]
        [--gx-root DIR] [--since DATE] [--until DATE] [--master URL] [--run-id ID] [--no-fail-on-findings] [--no-data-docs]
        [--in-process-rows N]

ARCHIVE is an archive root, an exchange or date folder, or one ``*.jsonl[.gz]`` file. Exit codes: 0
every expectation met, 1 an expectation missed its threshold (0 with ``--no-fail-on-findings``: the
DAG's Spark task succeeds and the evidence says what failed), 2 bad input (a missing archive path,
a catalogue that does not load, bad options: one line, no traceback), 3 the registry store failed.
Evidence goes to ``--registry-url`` (default ``$CONTRACT_REGISTRY_URL``; none: not recorded), the
JSON report to ``--report`` and stdout, the Data Docs to ``<gx-root>/uncommitted/data_docs/local_site``
(default ``<data>/gx``).

Extract -> transform -> load:

* ``read_archive`` + ``parse_records`` (shared with ``validate_archive``): the record lines;
* ``envelopes``: each line and its body parsed in Spark (``from_json``, no Python UDF) into the
  columns of ``contract_platform.quality.columns``; a body that is not an envelope gives nulls;
* ``received_between`` (``--since``/``--until``: a day range, ``until`` exclusive), then ``prepare`` = ``exclude_redeliveries`` -> ``assign_types``
  (which suite judges each row) -> ``with_time_checks`` (parsed times, minus the contract's clock
  skew) -> ``with_partition_key_counts``;
* ``run_suite`` (GX, Data Docs), the report file, ``record_quality`` (evidence per type). GX judges a window of at
  most ``--in-process-rows`` envelopes on pandas in this process, collected once from the prepared frame, and a
  larger one on Spark (``quality.runner.choose_engine``; the report's ``engine_reason`` and stderr say which).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from contract_platform.archive_record import spark_schema
from contract_platform.catalog import load_catalog
from contract_platform.catalog.model import Catalog
from contract_platform.errors import ArchiveError
from contract_platform.job_options import date_arg
from contract_platform.quality import QualityReport, record_quality, run_suite
from contract_platform.quality import columns as col
from contract_platform.quality.runner import IN_PROCESS_ROWS
from spark_jobs.archive_io import parse_records, read_archive
from spark_jobs.hadoop_fs import path_exists
from spark_jobs.jobs import JobRun, job_parser, run_job

__all__ = [
    "assign_types",
    "envelopes",
    "exclude_redeliveries",
    "main",
    "prepare",
    "received_between",
    "run_quality",
    "with_partition_key_counts",
    "with_time_checks",
]

APP_NAME = "envelope-quality"
RECORD_SCHEMA = spark_schema("exchange", "routingKey", "receivedAt", "redelivered", "properties", "body", "bodyBase64")
_INTEGERS = {"schemaVersion": "int"}
BODY_DDL = "metadata struct<{}>".format(", ".join(f"{name}: {_INTEGERS.get(name, 'string')}" for name in col.METADATA))
# Identifiers whose presence is checked: an empty string is as good as absent.
_ABSENT_WHEN_EMPTY = ("messageId", "correlationId", "causationId", "traceId", "tenantId", "partitionKey")
NON_PERSISTENT = 1  # AMQP: a message without delivery mode is not persistent


# -- transform ----------------------------------------------------------------------------------


def envelopes(records_df: DataFrame) -> DataFrame:
    """Records (``parse_records``: a ``line`` column) -> one row per delivery with ``columns.ENVELOPE``."""
    record = F.from_json("line", RECORD_SCHEMA)
    parsed = records_df.select(record.alias("r")).select(
        F.col("r.*"), F.from_json(F.col("r.body"), BODY_DDL)["metadata"].alias("m")
    )

    def metadata(name: str) -> Column:
        value = F.col(f"m.{name}")
        return F.nullif(value, F.lit("")) if name in _ABSENT_WHEN_EMPTY else value

    body_bytes = F.coalesce(F.octet_length("body"), F.octet_length(F.try_to_binary("bodyBase64", F.lit("base64"))))
    return parsed.select(
        *(metadata(name).alias(name) for name in col.METADATA),
        F.col("receivedAt"),
        F.coalesce(F.col("properties.contentType"), F.lit("")).alias(col.CONTENT_TYPE),
        F.coalesce(F.col("properties.deliveryMode"), F.lit(NON_PERSISTENT)).alias(col.DELIVERY_MODE),
        body_bytes.cast("long").alias(col.BODY_BYTES),
        F.col("routingKey"),
        F.col("exchange"),
        F.coalesce(F.col("redelivered"), F.lit(False)).alias("redelivered"),
    )


def exclude_redeliveries(envelopes_df: DataFrame) -> DataFrame:
    """Leave out deliveries the broker marked redelivered: the same message again, not new traffic."""
    return envelopes_df.where(~F.col("redelivered"))


def received_between(envelopes_df: DataFrame, since: date | None, until: date | None = None) -> DataFrame:
    """Envelopes received on or after ``since`` and before ``until`` (UTC days; None: no bound).

    Those whose receivedAt cannot be read stay in: a missing time is a finding, not a reason to look away.
    """
    received = F.col("receivedAt").try_cast("timestamp")
    inside = F.lit(True)
    if since is not None:
        inside = inside & (received >= F.lit(datetime(since.year, since.month, since.day, tzinfo=UTC)))
    if until is not None:
        inside = inside & (received < F.lit(datetime(until.year, until.month, until.day, tzinfo=UTC)))
    return envelopes_df.where(received.isNull() | inside)


def _lookup(mapping: dict[str, object], key: Column) -> Column:
    if not mapping:
        return F.lit(None)
    return F.create_map(*[F.lit(part) for item in sorted(mapping.items()) for part in item])[key]


def _route(exchange: Column | str, routing_key: Column | str) -> Column:
    return F.concat_ws("\u0000", exchange, routing_key)


def assign_types(envelopes_df: DataFrame, catalog: Catalog) -> DataFrame:
    """Adds ``contractType``: the catalogued messageType, else the contract the delivery was routed as."""
    types = [contract.message_type for contract in catalog]
    routes: dict[str, object] = {
        f"{c.transport.exchange}\u0000{c.transport.routing_key}": c.message_type for c in catalog
    }
    by_route = _lookup(routes, _route(F.col("exchange"), F.col("routingKey")))
    return envelopes_df.withColumn(
        col.CONTRACT_TYPE, F.when(F.col("messageType").isin(types), F.col("messageType")).otherwise(by_route)
    )


def with_time_checks(envelopes_df: DataFrame, catalog: Catalog) -> DataFrame:
    """Adds the parsed times and ``<time>_minus_skew`` for the pair checks (skew of the row's contractType)."""
    skews: dict[str, object] = {c.message_type: c.quality.clock_skew.total_seconds() for c in catalog}
    skew = F.make_dt_interval(secs=_lookup(skews, F.col(col.CONTRACT_TYPE)).cast("decimal(18,6)"))
    frame = envelopes_df
    for name in col.TIMES:
        frame = frame.withColumn(col.parsed(name), F.col(name).try_cast("timestamp"))
    for name, derived in col.MINUS_SKEW.items():
        frame = frame.withColumn(derived, F.col(col.parsed(name)) - skew)
    return frame


def with_partition_key_counts(envelopes_df: DataFrame) -> DataFrame:
    """Adds ``partitionKeyMessages``: envelopes of the same contractType with the row's partitionKey."""
    window = Window.partitionBy(col.CONTRACT_TYPE, "partitionKey")
    counted = F.when(F.col("partitionKey").isNotNull(), F.count(F.lit(1)).over(window))
    return envelopes_df.withColumn(col.PARTITION_KEY_MESSAGES, counted.cast("long"))


def prepare(envelopes_df: DataFrame, catalog: Catalog) -> DataFrame:
    """Envelopes -> the frame ``run_suite`` judges (``columns.REQUIRED``), redeliveries left out."""
    assigned = assign_types(exclude_redeliveries(envelopes_df), catalog)
    return with_partition_key_counts(with_time_checks(assigned, catalog))


# -- run ----------------------------------------------------------------------------------------


def run_quality(
    spark: SparkSession,
    archive_path: str | Path,
    catalog_dir: str | Path,
    *,
    gx_root: str | Path | None = None,
    since: date | None = None,
    until: date | None = None,
    report_path: str | Path | None = None,
    data_docs: bool = True,
    in_process_rows: int = IN_PROCESS_ROWS,
) -> QualityReport:
    """Judge every type found under ``archive_path``; write the report when asked.

    ``in_process_rows``: the most envelopes GX judges in this process on pandas (``quality.runner.choose_engine``;
    0: on Spark whatever the size).

    Raises ``CatalogError`` (catalogue does not load) and ``ArchiveError`` (missing path) before any
    Spark job runs.
    """
    started = time.perf_counter()
    catalog = load_catalog(catalog_dir)
    archive = str(archive_path)
    if not path_exists(spark, archive):
        raise ArchiveError(
            f"{archive}: archive path does not exist; give an archive root, exchange or date folder, or a file"
        )
    delivered = envelopes(parse_records(read_archive(spark, archive)))
    if since is not None or until is not None:
        delivered = received_between(delivered, since, until)
    frame = prepare(delivered, catalog).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        redeliveries = delivered.where(F.col("redelivered")).count()
        report = run_suite(frame, catalog, context_root=gx_root, data_docs=data_docs, in_process_rows=in_process_rows)
    finally:
        frame.unpersist(blocking=True)
    report = replace(
        report,
        archive=archive,
        since=since.isoformat() if since else None,
        until=until.isoformat() if until else None,
        redeliveries=redeliveries,
        elapsed_seconds=time.perf_counter() - started,
    )
    if report_path is not None:
        Path(report_path).parent.mkdir(parents=True, exist_ok=True)
        Path(report_path).write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    return report


# -- main ---------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = job_parser("envelope_quality", (__doc__ or "").splitlines()[0])
    parser.add_argument("archive", help="archive root, exchange or date folder, or one .jsonl[.gz] file")
    parser.add_argument("--report", default=None, help="write the JSON report here")
    parser.add_argument("--gx-root", default=None, help="Great Expectations folder (default <data>/gx)")
    parser.add_argument(
        "--since", type=date_arg, default=None, help="only envelopes received on or after this date (YYYY-MM-DD)"
    )
    parser.add_argument(
        "--until", type=date_arg, default=None, help="only envelopes received before this date (YYYY-MM-DD)"
    )
    parser.add_argument("--no-data-docs", action="store_true", help="do not render the Data Docs")
    parser.add_argument(
        "--in-process-rows",
        type=int,
        default=IN_PROCESS_ROWS,
        help=f"most envelopes GX judges in this process on pandas, else on Spark (default {IN_PROCESS_ROWS}; 0: Spark)",
    )
    return parser


def _quality(run: JobRun) -> int:
    args = run.args
    assert run.catalog is not None and run.catalog_dir is not None  # the parser has --catalog
    archive = run.reads(args.archive)  # before the session starts: a small input gets the quick start
    report = run_quality(
        run.spark,
        archive,
        run.catalog_dir,
        gx_root=args.gx_root,
        since=args.since,
        until=args.until,
        report_path=args.report,
        data_docs=not args.no_data_docs,
        in_process_rows=args.in_process_rows,
    )
    run.close()  # the evidence needs no JVM
    if report.engine_reason:
        print(f"envelope quality: {report.engine_reason}", file=sys.stderr)
    if run.registry_url:
        from contract_platform.store import SqlRegistry  # SQLAlchemy only where evidence is recorded

        with SqlRegistry.open(run.registry_url) as registry:
            record_quality(report, run.catalog, registry, run_id=args.run_id)
    print(json.dumps(report.to_dict()))
    return report.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job; return 0 (all met), 1 (an expectation failed), 2 (bad input) or 3 (store failed)."""
    return run_job(APP_NAME, _parser(), _quality, argv)


if __name__ == "__main__":
    sys.exit(main())

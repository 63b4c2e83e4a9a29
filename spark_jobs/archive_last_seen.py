"""When each message type was last archived: the retention evidence of the retirement audit (docs/design.md#retirement-audit).

    spark-submit spark_jobs/archive_last_seen.py ARCHIVE_ROOT --out FILE [--master URL]

Reads every ``*.jsonl[.gz]`` under ARCHIVE_ROOT (docs/design.md#archive-record, with ``validate_archive``'s reader)
and writes FILE, one entry per messageType::

    {"billing.invoice-issued.v1": {"lastReceivedAt": "2026-07-01T10:15:32.120Z", "records": 4200}}

A record's type is ``archive_record.type_column``: the precedence of ``archive_record.record_type``
(the body's ``metadata.messageType``, else ``properties.type``, else a type header), as every reader has it. FILE is deleted first and written (atomically) only once an
existing ARCHIVE_ROOT has been scanned, so its presence means "scanned": a missing root leaves no file
and exits 0 (the audit then says the retention check is undecided). Exit 2: bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from contract_platform.archive_record import spark_schema, type_column
from spark_jobs.archive_io import parse_records, read_archive
from spark_jobs.hadoop_fs import path_exists
from spark_jobs.jobs import JobRun, job_parser, run_job

__all__ = ["last_seen", "main", "scan_archive", "to_document", "write_document"]

APP_NAME = "archive-last-seen"
RECORD_SCHEMA = spark_schema("receivedAt", "properties", "body")


# -- transform ----------------------------------------------------------------------------------


def last_seen(records: DataFrame) -> DataFrame:
    """Archive records (a ``line`` column, as ``parse_records`` gives) -> messageType, lastReceivedAt, records."""
    record = F.from_json(F.col("line"), RECORD_SCHEMA)
    typed = records.select(
        type_column(record).alias("messageType"), F.to_timestamp(record["receivedAt"]).alias("receivedAt")
    )
    return (
        typed.where(F.col("messageType").isNotNull())
        .groupBy("messageType")
        .agg(F.max("receivedAt").alias("lastReceivedAt"), F.count(F.lit(1)).alias("records"))
    )


# -- load ---------------------------------------------------------------------------------------


def to_document(seen: DataFrame) -> dict[str, dict[str, Any]]:
    """The JSON document (one small row per type; timestamps as UTC ISO-8601 with milliseconds)."""
    rows = seen.select("messageType", F.unix_micros("lastReceivedAt").alias("micros"), "records").collect()
    document = {}
    for row in sorted(rows, key=lambda r: r["messageType"]):
        if row["micros"] is None:
            continue  # records of the type, none with a readable receivedAt: nothing to date
        moment = datetime.fromtimestamp(row["micros"] / 1_000_000, UTC)
        stamp = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
        document[row["messageType"]] = {"lastReceivedAt": stamp, "records": int(row["records"])}
    return document


def scan_archive(spark: SparkSession, archive_root: str) -> dict[str, dict[str, Any]] | None:
    """The document for ``archive_root``, or None when the root does not exist (nothing was scanned)."""
    if not path_exists(spark, archive_root):
        return None
    return to_document(last_seen(parse_records(read_archive(spark, archive_root))))


def write_document(document: dict[str, dict[str, Any]], out: str | Path) -> None:
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    partial.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(partial, target)


# -- main ---------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = job_parser(
        "archive_last_seen", (__doc__ or "").splitlines()[0], catalog=False, evidence=False, findings=False
    )
    parser.add_argument("archive", help="archive root (or an exchange folder)")
    parser.add_argument("--out", required=True, help="write the JSON document here (a local file)")
    return parser


def _last_seen(run: JobRun) -> int:
    args = run.args
    Path(args.out).unlink(missing_ok=True)  # a failed or empty run must not leave yesterday's answer behind
    archive = run.reads(args.archive)  # before the session starts: a small input gets the quick start
    document = scan_archive(run.spark, archive)
    if document is None:
        print(f"archive root {args.archive} does not exist: nothing scanned, no {args.out} written", file=sys.stderr)
        return 0
    write_document(document, args.out)
    print(json.dumps({"out": args.out, "types": len(document)}))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job: 0 (scanned, or no archive root to scan) or 2 (bad arguments)."""
    return run_job(APP_NAME, _parser(), _last_seen, argv)


if __name__ == "__main__":
    sys.exit(main())

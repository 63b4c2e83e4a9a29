"""Migration parity (docs/design.md#migration-parity): the v1 archive against the v2 archive over a window.

    spark-submit spark_jobs/dual_publish_parity.py V1_TYPE [--archive DIR] [--catalog DIR] [--since ISO]
        [--until ISO] [--mode bridge|dual-publish] [--report FILE] [--registry-url URL] [--run-id ID]
        [--no-fail-on-findings] [--master URL]

Reads ``<archive>/<v1 exchange>`` and ``<archive>/<v2 exchange>`` (once when they are the same), and
counts what ``contract_platform.migration.parity`` defines: missing, extra, duplicated (and how many are
redeliveries), content mismatches, out of order per ordering key, and the publish lag p50/p99. Works for
the platform's bridge and for producers that publish both versions (same messageId expected in both).

The window (``--since`` inclusive, ``--until`` exclusive, on the archive's ``receivedAt`` of a messageId's
first copy) selects the v1 messages judged and the v2 messages counted; twins are looked for across the
whole archive read, so a v2 message archived just after ``--until`` still counts for its v1 message, and a
v2 message whose v1 message came before ``--since`` is not extra.

Exit codes: 0 parity holds, 1 it does not (0 with ``--no-fail-on-findings``), 2 bad input (unknown type,
no migration, missing archive, bad option), 3 the registry store failed. The JSON report goes to
``--report`` (and stdout); ``migration_parity`` evidence on V1_TYPE is recorded in ``--registry-url``
(default ``$CONTRACT_REGISTRY_URL``; none: nothing recorded).

Extract -> transform -> load:

* ``read_archive`` + ``parse_records`` (shared with validate_archive), then ``extract_messages``: type,
  messageId, receivedAt, redelivered, ordering key and body, with from_json/get_json_object in the JVM;
* ``first_copies``: one row per messageId with its copy counts; ``pair_twins``: v1 (window) left join v2;
* ``compare_pairs``: each pair re-migrated by the one migration engine and compared, in Python batches
  (``mapInArrow`` over ``parity.compare_batches``); ``find_out_of_order``: window functions per key;
* ``summarize``: a handful of small aggregations into a ``ParityReport``; ``record_parity`` stores it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from contract_platform import settings
from contract_platform.archive_record import spark_schema, type_column
from contract_platform.catalog import load_catalog
from contract_platform.catalog.pointers import split_pointer
from contract_platform.errors import ArchiveError, UsageError
from contract_platform.migration.parity import (
    SAMPLE_LIMIT,
    ParityMode,
    ParityReport,
    TwinComparison,
    TwinStatus,
    compare_batches,
    parity_route,
    record_parity,
)
from contract_platform.validation.bundle import CatalogBundle
from spark_jobs.archive_io import parse_records, read_archive
from spark_jobs.hadoop_fs import path_exists
from spark_jobs.jobs import JobRun, job_parser, run_job

__all__ = [
    "compare_pairs",
    "extract_messages",
    "find_out_of_order",
    "first_copies",
    "main",
    "pair_twins",
    "read_exchange",
    "run_parity",
    "summarize",
]

APP_NAME = "dual-publish-parity"
RECORD_SCHEMA = spark_schema("receivedAt", "redelivered", "properties", "body")
MESSAGE_DDL = (
    "record_id bigint, message_type string, message_id string, received_us bigint, redelivered boolean, "
    "order_key string, body string"
)
PAIR_COLUMNS = ("message_id", "v1_record_id", "v1_received_us", "v2_record_id", "v2_received_us", "order_key")
COMPARED_DDL = (
    "message_id string, v1_record_id bigint, v1_received_us bigint, v2_record_id bigint, v2_received_us bigint, "
    "order_key string, status string, differences array<string>, reason string"
)


# -- extract ------------------------------------------------------------------------------------


def read_exchange(spark: SparkSession, archive_root: str, exchange: str) -> DataFrame | None:
    """``parse_records`` of ``<archive_root>/<exchange>``; None when nothing was ever archived there."""
    path = f"{archive_root.rstrip('/')}/{exchange}"
    if not path_exists(spark, path):
        return None
    return parse_records(read_archive(spark, path))


def _json_path(pointer: str) -> str | None:
    """``/metadata/partitionKey`` -> ``$['metadata']['partitionKey']`` (None if Spark's syntax cannot say it)."""
    tokens = split_pointer(pointer)
    if any("'" in token or "]" in token for token in tokens):
        return None
    return "$" + "".join(f"['{token}']" for token in tokens)


def extract_messages(records: DataFrame, message_types: Sequence[str], order_key: str | None = None) -> DataFrame:
    """Records of ``message_types`` (``MESSAGE_DDL``): lines that are not JSON envelopes are left out.

    ``order_key`` is the contract's ordering key pointer (into the envelope), or None.
    """
    record = F.from_json("line", RECORD_SCHEMA)
    path = _json_path(order_key) if order_key else None
    return (
        records.select("record_id", record.alias("r"))
        .select(
            "record_id",
            F.when(F.get_json_object("r.body", "$.metadata").isNotNull(), type_column(F.col("r"))).alias(
                "message_type"
            ),
            F.coalesce(F.get_json_object("r.body", "$.metadata.messageId"), F.col("r.properties.messageId")).alias(
                "message_id"
            ),
            F.unix_micros(F.try_to_timestamp("r.receivedAt")).alias("received_us"),
            F.coalesce(F.col("r.redelivered"), F.lit(False)).alias("redelivered"),
            (F.get_json_object("r.body", path) if path else F.lit(None).cast("string")).alias("order_key"),
            F.col("r.body").alias("body"),
        )
        .where(F.col("message_type").isin(list(message_types)) & F.col("message_id").isNotNull())
    )


# -- transform ----------------------------------------------------------------------------------


def _in_window(column: str, since_us: int | None, until_us: int | None) -> Column:
    condition = F.lit(True)
    if since_us is not None:
        condition = condition & (F.col(column) >= F.lit(since_us))
    if until_us is not None:
        condition = condition & (F.col(column) < F.lit(until_us))
    return F.coalesce(condition, F.lit(False))  # no receivedAt: outside any bounded window


def first_copies(messages: DataFrame) -> DataFrame:
    """The first copy of each messageId of each type (archive order), with ``copies`` and ``redelivered_copies``.

    ``redelivered_copies`` counts the copies after the first that the archive marks redelivered.
    """
    by_id = Window.partitionBy("message_type", "message_id")
    ordered = by_id.orderBy(F.col("received_us").asc_nulls_last(), F.col("record_id"))
    later_redelivered = F.when((F.col("copy") > 1) & F.col("redelivered"), 1).otherwise(0)
    return (
        messages.withColumn("copy", F.row_number().over(ordered))
        .withColumn("copies", F.count(F.lit(1)).over(by_id))
        .withColumn("redelivered_copies", F.sum(later_redelivered).over(by_id))
        .where(F.col("copy") == 1)
        .drop("copy")
    )


def pair_twins(v1_first: DataFrame, v2_first: DataFrame) -> DataFrame:
    """Each v1 message with its v2 twin's record, time and body (null: no twin)."""
    v1 = v1_first.select(
        "message_id",
        F.col("record_id").alias("v1_record_id"),
        F.col("received_us").alias("v1_received_us"),
        "order_key",
        F.col("body").alias("v1_body"),
    )
    v2 = v2_first.select(
        "message_id",
        F.col("record_id").alias("v2_record_id"),
        F.col("received_us").alias("v2_received_us"),
        F.col("body").alias("v2_body"),
    )
    return v1.join(v2, "message_id", "left").select(*PAIR_COLUMNS, "v1_body", "v2_body")


def compare_pairs(pairs: DataFrame, bundle: CatalogBundle, source: str, mode: ParityMode) -> DataFrame:
    """``COMPARED_DDL``: every pair re-migrated and compared by ``parity.compare_twins``, in Python batches."""
    shipped = pairs.sparkSession.sparkContext.broadcast(bundle)
    body = partial(compare_batches, catalog=shipped, source=source, mode=str(mode))
    return pairs.mapInArrow(body, COMPARED_DDL)


def find_out_of_order(compared: DataFrame) -> DataFrame:
    """Twins (with an ordering key) whose v2 copy arrived after a twin that came later in v1."""
    twins = compared.where(F.col("v2_record_id").isNotNull() & F.col("order_key").isNotNull())
    v1_order = Window.partitionBy("order_key").orderBy(F.col("v1_received_us").asc_nulls_last(), "v1_record_id")
    v2_before = (
        Window.partitionBy("order_key")
        .orderBy(F.col("v2_received_us").asc_nulls_last(), "v2_record_id")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    ranked = twins.withColumn("v1_rank", F.row_number().over(v1_order))
    return ranked.withColumn("highest_before", F.max("v1_rank").over(v2_before)).where(
        F.col("v1_rank") < F.col("highest_before")
    )


def _ids(frame: DataFrame, count: int) -> list[str]:
    """Up to ``SAMPLE_LIMIT`` messageIds of ``frame``, in order (no Spark job when ``count`` says there are none)."""
    if not count:
        return []
    rows = frame.select("message_id").distinct().orderBy("message_id").limit(SAMPLE_LIMIT).collect()
    return [row["message_id"] for row in rows]


def _iso(micros: int | None) -> str | None:
    if micros is None:
        return None
    moment = datetime.fromtimestamp(micros / 1_000_000, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def summarize(
    compared: DataFrame,
    v1_all: DataFrame,
    v2_window: DataFrame,
    v1_window: DataFrame,
    *,
    ordered: bool,
) -> dict[str, Any]:
    """The counts, lags and samples of a ``ParityReport`` (``compared`` should be persisted)."""
    lag_ms = (F.col("v2_received_us") - F.col("v1_received_us")) / F.lit(1000.0)
    status = F.col("status")
    [totals] = compared.agg(  # an aggregate over the whole frame: exactly one row, even over none
        F.count(F.lit(1)).alias("v1_total"),
        F.count(F.when(status == str(TwinStatus.MATCH), 1)).alias("matched"),
        F.count(F.when(status == str(TwinStatus.MISSING), 1)).alias("missing"),
        F.count(F.when((status == str(TwinStatus.MISSING)) & F.col("reason").isNotNull(), 1)).alias("parked"),
        F.count(F.when(status == str(TwinStatus.MISMATCH), 1)).alias("mismatches"),
        F.percentile_approx(lag_ms, [0.5, 0.99]).alias("lag"),
        F.min("v1_received_us").alias("first_us"),
        F.max("v1_received_us").alias("last_us"),
    ).collect()
    sides = v1_window.withColumn("side", F.lit("v1")).unionByName(v2_window.withColumn("side", F.lit("v2")))
    copies = {
        row["side"]: row
        for row in sides.groupBy("side")
        .agg(
            F.count(F.lit(1)).alias("total"),
            F.sum(F.col("copies") - 1).alias("duplicates"),
            F.sum("redelivered_copies").alias("redeliveries"),
        )
        .collect()
    }
    empty = {"total": 0, "duplicates": 0, "redeliveries": 0}
    v2, v1_duplicates = copies.get("v2", empty), copies.get("v1", empty)["duplicates"]
    extra = v2_window.join(v1_all.select("message_id"), "message_id", "left_anti")
    extra_count = extra.count()
    out_of_order = find_out_of_order(compared) if ordered else None
    out_of_order_count = out_of_order.count() if out_of_order is not None else 0
    problems = compared.where(status != str(TwinStatus.MATCH))
    samples = {
        "missing": _ids(problems.where(status == str(TwinStatus.MISSING)), totals["missing"]),
        "extra": _ids(extra, extra_count),
        "duplicates": _ids(v2_window.where(F.col("copies") > 1), v2["duplicates"]),
        "mismatches": _ids(problems.where(status == str(TwinStatus.MISMATCH)), totals["mismatches"]),
        "out_of_order": _ids(out_of_order, out_of_order_count) if out_of_order is not None else [],
    }
    wanted = sorted(set(samples["missing"]) | set(samples["mismatches"]))
    described = problems.where(F.col("message_id").isin(wanted)).select("message_id", "status", "differences", "reason")
    details = {row["message_id"]: _describe(row) for row in described.collect()} if wanted else {}
    lag = totals["lag"] or [None, None]
    return {
        "v1_total": totals["v1_total"],
        "matched": totals["matched"],
        "missing": totals["missing"],
        "missing_not_migratable": totals["parked"],
        "mismatches": totals["mismatches"],
        "v2_total": v2["total"],
        "duplicates": int(v2["duplicates"]),
        "redeliveries": int(v2["redeliveries"]),
        "v1_duplicates": int(v1_duplicates),
        "extra": extra_count,
        "out_of_order": out_of_order_count,
        "lag_p50_ms": lag[0],
        "lag_p99_ms": lag[1],
        "first": _iso(totals["first_us"]),
        "last": _iso(totals["last_us"]),
        "samples": samples,
        "details": details,
    }


def _describe(row: Any) -> str:
    return TwinComparison(TwinStatus(row["status"]), tuple(row["differences"] or ()), row["reason"]).describe()


def _micros(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1_000_000)


def run_parity(
    spark: SparkSession,
    source_type: str,
    archive_root: str | Path,
    catalog_dir: str | Path,
    *,
    mode: ParityMode | str = ParityMode.BRIDGE,
    since: datetime | None = None,
    until: datetime | None = None,
    report_path: str | Path | None = None,
) -> ParityReport:
    """Parity of ``source_type``'s migration over the window; writes the JSON report when asked.

    Raises ``UsageError`` (unknown type, no migration, bad window), ``CatalogError`` and ``ArchiveError``
    (no archive root) before any Spark job runs.
    """
    started = time.perf_counter()
    mode = ParityMode(mode)
    catalog = load_catalog(catalog_dir)
    source, target, _spec = parity_route(catalog, source_type)
    if since is not None and until is not None and since >= until:
        raise UsageError(f"--since {since.isoformat()} is not before --until {until.isoformat()}")
    archive = str(archive_root)
    if not path_exists(spark, archive):
        raise ArchiveError(f"{archive}: archive root does not exist; give the folder the archiver writes into")
    exchanges = {source.transport.exchange: [source.message_type], target.transport.exchange: [target.message_type]}
    if source.transport.exchange == target.transport.exchange:
        exchanges = {source.transport.exchange: [source.message_type, target.message_type]}
    ordered = source.ordering is not None and target.ordering is not None
    key = source.ordering.key if source.ordering is not None else None
    parts = []  # each type comes from one read, so record_id (a tie-breaker within a type) stays unique
    for exchange, types in exchanges.items():
        records = read_exchange(spark, archive, exchange)
        if records is not None:
            parts.append(extract_messages(records, types, key))
    messages = parts[0] if parts else spark.createDataFrame([], MESSAGE_DDL)
    for part in parts[1:]:
        messages = messages.unionByName(part)
    firsts = first_copies(messages).persist(StorageLevel.MEMORY_AND_DISK)
    compared: DataFrame | None = None
    try:
        in_window = _in_window("received_us", _micros(since), _micros(until))
        v1_all = firsts.where(F.col("message_type") == source.message_type)
        v2_all = firsts.where(F.col("message_type") == target.message_type)
        v1_window, v2_window = v1_all.where(in_window), v2_all.where(in_window)
        bundle = CatalogBundle.read(catalog_dir)
        compared = compare_pairs(pair_twins(v1_window, v2_all), bundle, source.message_type, mode).persist(
            StorageLevel.MEMORY_AND_DISK
        )
        found = summarize(compared, v1_all, v2_window, v1_window, ordered=ordered)
    finally:  # blocking: a removal still queued when the session stops is a JVM warning nobody can act on
        if compared is not None:
            compared.unpersist(blocking=True)
        firsts.unpersist(blocking=True)
    report = ParityReport(
        source=source.message_type,
        source_version=source.version,
        target=target.message_type,
        mode=mode,
        v1_total=found["v1_total"],
        v2_total=found["v2_total"],
        matched=found["matched"],
        missing=found["missing"],
        mismatches=found["mismatches"],
        extra=found["extra"],
        duplicates=found["duplicates"],
        redeliveries=found["redeliveries"],
        out_of_order=found["out_of_order"],
        lag_p50_ms=found["lag_p50_ms"],
        lag_p99_ms=found["lag_p99_ms"],
        missing_not_migratable=found["missing_not_migratable"],
        v1_duplicates=found["v1_duplicates"],
        ordering_checked=ordered,
        window={
            "since": since.isoformat() if since else None,
            "until": until.isoformat() if until else None,
            "first": found["first"],
            "last": found["last"],
        },
        samples=found["samples"],
        details=found["details"],
        archive=archive,
        elapsed_seconds=time.perf_counter() - started,
    )
    if report_path is not None:
        Path(report_path).parent.mkdir(parents=True, exist_ok=True)
        Path(report_path).write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    return report


# -- main ---------------------------------------------------------------------------------------


def _moment(text: str) -> datetime | None:
    """An ISO 8601 instant (``Z`` or an offset; a naive one is UTC); empty: no bound."""
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 instant such as 2026-07-01T00:00:00Z") from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _parser() -> argparse.ArgumentParser:
    parser = job_parser("dual_publish_parity", (__doc__ or "").splitlines()[0])
    parser.add_argument("v1_type", help="the older messageType, e.g. billing.invoice-issued.v1")
    parser.add_argument(
        "--archive", default=None, help="archive root (default $CONTRACT_ARCHIVE_DIR or <data>/archive)"
    )
    parser.add_argument("--since", type=_moment, default=None, help="window start, inclusive (ISO 8601; empty: none)")
    parser.add_argument("--until", type=_moment, default=None, help="window end, exclusive (ISO 8601; empty: none)")
    parser.add_argument("--mode", choices=[str(m) for m in ParityMode], default=str(ParityMode.BRIDGE))
    parser.add_argument("--report", default=None, help="write the JSON report here")
    return parser


def _parity(run: JobRun) -> int:
    args = run.args
    assert run.catalog is not None and run.catalog_dir is not None  # the parser has --catalog
    parity_route(run.catalog, args.v1_type)  # fail fast, before a JVM starts
    archive = run.reads(args.archive or str(settings.archive_dir()))
    report = run_parity(
        run.spark,
        args.v1_type,
        archive,
        run.catalog_dir,
        mode=args.mode,
        since=args.since,
        until=args.until,
        report_path=args.report,
    )
    run.close()  # the evidence needs no JVM
    if run.registry_url:
        from contract_platform.store import SqlRegistry  # SQLAlchemy: only when evidence is recorded

        with SqlRegistry.open(run.registry_url) as registry:
            record_parity(report, registry, args.run_id, reference=args.report)
    print(json.dumps(report.to_dict()))
    return report.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job; 0 parity holds, 1 it does not (see ``--no-fail-on-findings``), 2 bad input, 3 store failed."""
    return run_job(APP_NAME, _parser(), _parity, argv)


if __name__ == "__main__":
    sys.exit(main())

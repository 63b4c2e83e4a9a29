"""Archive validation (DESIGN sections 5 and 6): every archived message checked against the catalogue.

    spark-submit spark_jobs/validate_archive.py PATH [--catalog DIR] [--report FILE] [--quarantine DIR]
        [--master URL] [--oversize-bytes N] [--status TYPE=STATUS ...] [--registry-url URL]

PATH is an archive root, an exchange folder, a date folder or one ``*.jsonl[.gz]`` file. Exit codes:
0 every record valid (or only counted: duplicates, deprecated types), 1 invalid records found,
2 bad input (a missing archive path, a catalogue that does not load, bad options), 3 the registry
store failed. The JSON report goes to ``--report`` (and stdout); invalid records, each with all its
reasons, go to ``--quarantine DIR`` as JSON Lines (``part-*.txt``, Spark's text output).

Extract -> transform -> load:

* ``read_archive`` + ``parse_records``: the lines, each with an archive position, file, size, hash;
* ``check_records``: the record-level rules (``contract_platform.validation``) over Arrow batches
  with ``mapInArrow``; each Python worker rebuilds the catalogue from a broadcast of its files'
  contents and compiles its schemas once (a module-level cache), so executors need no access to
  the driver's disk, only the installed ``contract-lifecycle-platform`` distribution. It keeps the
  line of the records it finds invalid only, so what Spark caches stays narrow;
* ``find_duplicates`` and ``find_out_of_order``: the cross-record rules as window functions over
  that cached projection; what they flag is joined back;
* ``aggregate`` / ``summarize``: the report's figures, top error paths included, in one aggregation;
* ``write_quarantine``: invalid records with all their reasons. The few invalid only by a
  cross-record rule are found again by a second read of the same path (same files, same splits,
  same ``record_id``), matched on ``line_hash``; the quarantine's line count is then checked, so an
  archive that changed during the run fails the job (exit 2) instead of giving a wrong quarantine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file (spark-submit): make ``spark_jobs`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from contract_platform import settings
from contract_platform.catalog import load_catalog
from contract_platform.errors import ArchiveError, ContractPlatformError, UsageError
from contract_platform.validation.arrow import CHECKED_FIELDS, check_batches, quarantine_batches
from contract_platform.validation.bundle import CatalogBundle
from contract_platform.validation.evidence import record_evidence
from contract_platform.validation.reasons import Reason
from contract_platform.validation.records import DEFAULT_OVERSIZE_BYTES, effective_statuses
from contract_platform.validation.report import Figures, Group, InputFigures, ValidationReport
from contract_platform.validation.sequence import (
    CONFLICTING_MESSAGE,
    DUPLICATE_MESSAGE,
    DUPLICATE_PATHS,
    OUT_OF_ORDER_MESSAGE,
    UNKNOWN_TIME,
)
from spark_jobs._common import build_session, file_sizes, path_exists, path_is_dir, path_is_empty, print_error

__all__ = [
    "aggregate",
    "check_records",
    "find_duplicates",
    "find_out_of_order",
    "main",
    "parse_records",
    "read_archive",
    "run_validation",
    "summarize",
    "write_quarantine",
]

APP_NAME = "validate-archive"
ARCHIVE_FILES = "*.{jsonl,jsonl.gz}"
_BROADCAST_ROWS = 1_000_000  # records to find again in a second read, beyond which a shuffle join is safer
CHECKED_SCHEMA = from_arrow_schema(pa.schema(list(CHECKED_FIELDS)))
FINDING_DDL = "struct<rank:int,code:string,path:string,message:string>"  # validation.arrow.FINDING_TYPE
FINDINGS_DDL = f"array<{FINDING_DDL}>"
_INVALID_RANKS = [reason.rank for reason in Reason if reason.invalid]
_COUNTED_CODES = [str(reason) for reason in Reason if not reason.invalid]


# -- extract ------------------------------------------------------------------------------------


def read_archive(spark: SparkSession, archive_path: str) -> DataFrame:
    """One ``value`` row per line of every ``*.jsonl[.gz]`` under ``archive_path`` (or of that one file)."""
    reader = spark.read.option("recursiveFileLookup", "true")
    if path_is_dir(spark, archive_path):
        reader = reader.option("pathGlobFilter", ARCHIVE_FILES)
    return reader.text(archive_path)


def parse_records(lines: DataFrame) -> DataFrame:
    """Lines -> records (``RECORD_FIELDS``): archive position (``record_id``), file, line, size and hash.

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


# -- transform ----------------------------------------------------------------------------------


def check_records(
    records: DataFrame,
    catalog_dir: str | Path,
    *,
    oversize_bytes: int = DEFAULT_OVERSIZE_BYTES,
    statuses: Mapping[str, str] | None = None,
    bundle: CatalogBundle | None = None,
) -> DataFrame:
    """The record-level rules, batch by batch in the Python workers (``CHECKED_SCHEMA``)."""
    bundle = bundle or CatalogBundle.read(catalog_dir)
    shipped = records.sparkSession.sparkContext.broadcast(bundle)
    body = partial(
        check_batches, catalog=shipped, oversize_bytes=oversize_bytes, statuses=dict(statuses) if statuses else None
    )
    return records.mapInArrow(body, CHECKED_SCHEMA)


def _finding(reason: Reason, path: Column | str, message: Column) -> Column:
    path = F.lit(path) if isinstance(path, str) else path
    return F.struct(
        F.lit(reason.rank).alias("rank"), F.lit(str(reason)).alias("code"), path.alias("path"), message.alias("message")
    )


def _in_archive_order(*keys: str) -> Any:
    return Window.partitionBy(*keys).orderBy(F.col("received_us").asc_nulls_last(), F.col("record_id"))


def _where_else_null(
    records: DataFrame, condition: Column, column: str, value: Column, keys: Sequence[str]
) -> DataFrame:
    """``value`` as ``column`` for the rows that meet ``condition`` (windowed by ``keys``), null for the others.

    The rows are spread by ``keys`` over as many partitions as the cluster has cores, whatever
    ``spark.sql.shuffle.partitions`` says (its default of 200 costs more than the windows here).
    """
    partitions = max(1, records.sparkSession.sparkContext.defaultParallelism)
    rest = records.where(~condition).withColumn(column, F.lit(None).cast(FINDING_DDL))
    windowed = records.where(condition).repartition(partitions, *keys).withColumn(column, value)
    return windowed.unionByName(rest)


def find_duplicates(records: DataFrame) -> DataFrame:
    """Adds ``duplicate``: DUPLICATE / CONFLICTING_DUPLICATE for every copy after the first (see ``sequence``)."""
    window = _in_archive_order("message_type", "message_id")
    first_at = F.coalesce(F.first("received_at").over(window), F.lit(UNKNOWN_TIME))
    same = F.col("payload_hash").eqNullSafe(F.first("payload_hash").over(window))
    duplicate = _finding(
        Reason.DUPLICATE,
        DUPLICATE_PATHS[Reason.DUPLICATE],
        F.format_string(DUPLICATE_MESSAGE, F.col("message_id"), first_at),
    )
    conflicting = _finding(
        Reason.CONFLICTING_DUPLICATE,
        DUPLICATE_PATHS[Reason.CONFLICTING_DUPLICATE],
        F.format_string(CONFLICTING_MESSAGE, F.col("message_id"), first_at),
    )
    copy = F.row_number().over(window) > 1
    keyed = F.col("message_type").isNotNull() & F.col("message_id").isNotNull()
    flagged = F.when(copy & same, duplicate).when(copy, conflicting)
    return _where_else_null(records, keyed, "duplicate", flagged, ("message_type", "message_id"))


def find_out_of_order(records: DataFrame, sequence_paths: Mapping[str, str]) -> DataFrame:
    """Adds ``out_of_order``: OUT_OF_ORDER where the sequence is below the highest before it for its key.

    Needs ``duplicate`` (``find_duplicates``): duplicates neither count nor get flagged.
    ``sequence_paths`` maps each messageType with ordering to its sequence pointer.
    """
    counted = F.col("duplicate").isNull() & F.col("order_key").isNotNull() & F.col("sequence").isNotNull()
    window = _in_archive_order("message_type", "order_key").rowsBetween(Window.unboundedPreceding, -1)
    highest = F.max("sequence").over(window)
    paths = F.create_map(*[F.lit(part) for item in sorted(sequence_paths.items()) for part in item])
    message = F.format_string(OUT_OF_ORDER_MESSAGE, F.col("sequence"), highest, F.col("order_key"))
    finding = _finding(Reason.OUT_OF_ORDER, paths[F.col("message_type")], message)
    late = F.when(F.col("sequence") < highest, finding)
    return _where_else_null(records, counted, "out_of_order", late, ("message_type", "order_key"))


def _all_findings(records: DataFrame, flags: DataFrame, *, broadcast: bool = True) -> DataFrame:
    """``records`` with ``findings`` completed by the cross-record ones, in precedence order, and ``first_rank``."""
    flagged = F.col("sequence_findings").isNotNull()  # few records: the others keep what Python found
    merged = F.array_sort(F.concat(F.coalesce("findings", F.array().cast(FINDINGS_DDL)), F.col("sequence_findings")))
    return (
        records.join(F.broadcast(flags) if broadcast else flags, "record_id", "left")
        .withColumn("findings", F.when(flagged, merged).otherwise(F.col("findings")))
        .withColumn("first_rank", F.when(flagged, F.col("findings")[0]["rank"]).otherwise(F.col("rank")))
        .withColumn("invalid", F.coalesce(F.col("first_rank").isin(_INVALID_RANKS), F.lit(False)))
        .drop("sequence_findings")
    )


def _aggregate(records: DataFrame) -> tuple[Figures, int]:
    """(figures, invalid records whose line was not kept) in one Spark job.

    One row per (messageType, first reason, error path): each record is counted on its first
    path's row only, each path of an invalid record on its own row.
    """
    error_paths = F.when(
        F.col("invalid"),
        F.transform(F.filter("findings", lambda f: ~f["code"].isin(_COUNTED_CODES)), lambda f: f["path"]),
    )
    exploded = records.select(
        "message_type",
        "first_rank",
        "line_bytes",
        "received_us",
        (F.col("invalid") & F.col("line").isNull()).alias("line_missing"),
        F.posexplode_outer(error_paths).alias("position", "path"),
    )
    first = F.col("position").isNull() | (F.col("position") == 0)
    rows = (
        exploded.groupBy("message_type", "first_rank", "path")
        .agg(
            F.count(F.when(first, 1)).alias("records"),
            F.sum(F.when(first, F.col("line_bytes"))).alias("line_bytes"),
            F.min(F.when(first, F.col("received_us"))).alias("first_us"),
            F.max(F.when(first, F.col("received_us"))).alias("last_us"),
            F.count(F.when(first & F.col("line_missing"), 1)).alias("line_missing"),
            F.count("path").alias("path_count"),
        )
        .collect()
    )
    groups: dict[tuple[str | None, int | None], Group] = {}
    paths: Counter[str] = Counter()
    for row in rows:
        key = (row["message_type"], row["first_rank"])
        part = Group(*key, row["records"], row["line_bytes"] or 0, row["first_us"], row["last_us"])
        groups[key] = _merged(groups[key], part) if key in groups else part
        if row["path"] is not None:
            paths[row["path"]] += row["path_count"]
    figures = Figures.from_groups((g for g in groups.values() if g.records), paths.items())
    return figures, sum(row["line_missing"] for row in rows)


def _merged(one: Group, other: Group) -> Group:
    firsts = [x for x in (one.first_us, other.first_us) if x is not None]
    lasts = [x for x in (one.last_us, other.last_us) if x is not None]
    return Group(
        one.message_type,
        one.rank,
        one.records + other.records,
        one.line_bytes + other.line_bytes,
        min(firsts, default=None),
        max(lasts, default=None),
    )


def aggregate(records: DataFrame) -> Figures:
    """The report's figures from records that carry ``first_rank``, ``invalid`` and complete ``findings``."""
    return _aggregate(records)[0]


def summarize(records: DataFrame) -> dict[str, Any]:
    """``aggregate`` as the JSON figures of the report (totals, by_reason, by_type, top paths, window)."""
    report = ValidationReport("", "", "", aggregate(records), InputFigures(), 0.0).to_dict()
    return {key: report[key] for key in ("totals", "by_reason", "by_type", "top_error_paths", "window")}


# -- load ---------------------------------------------------------------------------------------


def _check_quarantine_dir(spark: SparkSession, quarantine_dir: str) -> None:
    if not path_is_empty(spark, quarantine_dir) and not path_exists(spark, f"{quarantine_dir}/_SUCCESS"):
        raise UsageError(f"{quarantine_dir} is not empty and holds no earlier quarantine: give an empty or new folder")


def write_quarantine(
    records: DataFrame, quarantine_dir: str, reread: DataFrame | None = None, *, broadcast: bool = True
) -> None:
    """Invalid records, as the original record plus ``reasons`` (JSON Lines), replacing a previous quarantine.

    ``records`` keep the line of records the record-level rules found invalid; records invalid only
    by the cross-record rules (CONFLICTING_DUPLICATE, OUT_OF_ORDER) take theirs from ``reread``
    (``parse_records`` of the same archive read again), matched by ``record_id`` and ``line_hash``;
    those are broadcast (when ``broadcast``: they are few), so the archive is not shuffled to find them.
    """
    _check_quarantine_dir(records.sparkSession, quarantine_dir)
    invalid = records.where("invalid")
    quarantined = invalid.where(F.col("line").isNotNull()).select("line", "archive_file", "findings")
    if reread is not None:
        wanted = invalid.where(F.col("line").isNull()).select("record_id", "line_hash", "findings")
        wanted = F.broadcast(wanted) if broadcast else wanted
        found = reread.join(wanted, ["record_id", "line_hash"]).select("line", "archive_file", "findings")
        quarantined = quarantined.unionByName(found)
    quarantined.mapInArrow(quarantine_batches, "value string").write.mode("overwrite").text(quarantine_dir)


def _verify_quarantine(spark: SparkSession, quarantine_dir: str, invalid: int) -> None:
    """Lines read a second time must be the same lines: else the archive changed under the job."""
    written = spark.read.text(quarantine_dir).count()
    if written != invalid:
        raise ArchiveError(
            f"{quarantine_dir}: {written} quarantined lines for {invalid} invalid records: the archive changed "
            "while it was validated (files added or rewritten); validate closed partitions, or run again"
        )


def run_validation(
    spark: SparkSession,
    archive_path: str | Path,
    catalog_dir: str | Path,
    *,
    report_path: str | Path | None = None,
    quarantine_dir: str | Path | None = None,
    oversize_bytes: int = DEFAULT_OVERSIZE_BYTES,
    statuses: Mapping[str, str] | None = None,
) -> ValidationReport:
    """Validate every record under ``archive_path``; write the report and quarantine when asked.

    Raises ``ArchiveError`` (missing path), ``CatalogError`` (catalogue does not load) and
    ``UsageError`` (bad status or quarantine folder) before any Spark job runs.
    """
    started = time.perf_counter()
    started_at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    archive, statuses = str(archive_path), dict(statuses or {})
    catalog = load_catalog(catalog_dir)  # CatalogError lists every problem
    try:
        effective_statuses(catalog, statuses)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if oversize_bytes < 1:
        raise UsageError(f"oversize_bytes must be at least 1, not {oversize_bytes}")
    if not path_exists(spark, archive):
        raise ArchiveError(
            f"{archive}: archive path does not exist; give an archive root, exchange or date folder, or a file"
        )
    if quarantine_dir is not None:
        _check_quarantine_dir(spark, str(quarantine_dir))
    bundle = CatalogBundle.read(catalog_dir)
    lines = read_archive(spark, archive)
    checked = check_records(
        parse_records(lines), catalog_dir, oversize_bytes=oversize_bytes, statuses=statuses, bundle=bundle
    ).persist(StorageLevel.MEMORY_AND_DISK)
    flags: DataFrame | None = None
    try:
        keys = checked.select(
            "record_id",
            "message_type",
            "message_id",
            "payload_hash",
            "received_at",
            "received_us",
            "order_key",
            "sequence",
        )
        sequence_paths = {c.message_type: c.ordering.sequence for c in catalog if c.ordering is not None}
        sequenced = find_out_of_order(find_duplicates(keys), sequence_paths)
        flags = (
            sequenced.where(F.col("duplicate").isNotNull() | F.col("out_of_order").isNotNull())
            .select("record_id", F.array_compact(F.array("duplicate", "out_of_order")).alias("sequence_findings"))
            .persist(StorageLevel.MEMORY_AND_DISK)
        )
        flagged = flags.count()  # materializes them once, and says whether they are few enough to broadcast
        records = _all_findings(checked, flags, broadcast=flagged <= _BROADCAST_ROWS)
        figures, lines_missing = _aggregate(records)
        if quarantine_dir is not None:
            reread = parse_records(read_archive(spark, archive)) if lines_missing else None
            write_quarantine(
                records,
                str(quarantine_dir),
                reread,
                broadcast=lines_missing <= _BROADCAST_ROWS,
            )
            if reread is not None:
                _verify_quarantine(spark, str(quarantine_dir), figures.totals.invalid)
        files = lines.inputFiles()
        report = ValidationReport(
            archive=archive,
            catalog=str(catalog_dir),
            catalog_fingerprint=bundle.fingerprint,
            figures=figures,
            input=InputFigures(files=len(files), bytes=file_sizes(spark, files)),
            elapsed_seconds=time.perf_counter() - started,
            quarantine=str(quarantine_dir) if quarantine_dir is not None else None,
            oversize_bytes=oversize_bytes,
            statuses=statuses,
            started_at=started_at,
        )
    finally:
        checked.unpersist()
        if flags is not None:
            flags.unpersist()
    if report_path is not None:
        Path(report_path).parent.mkdir(parents=True, exist_ok=True)
        Path(report_path).write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    return report


# -- main ---------------------------------------------------------------------------------------


def _status(text: str) -> tuple[str, str]:
    message_type, sep, status = text.partition("=")
    if not sep or not message_type or not status:
        raise argparse.ArgumentTypeError(f"{text!r} is not TYPE=STATUS (e.g. billing.invoice-issued.v1=retired)")
    return message_type, status


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="validate_archive", description=__doc__.splitlines()[0])
    parser.add_argument("path", help="archive root, exchange or date folder, or one .jsonl[.gz] file")
    parser.add_argument("--catalog", default=None, help="catalogue folder (default $CONTRACT_CATALOG or ./contracts)")
    parser.add_argument("--report", default=None, help="write the JSON report here")
    parser.add_argument("--quarantine", default=None, help="write invalid records (JSON Lines) into this folder")
    parser.add_argument("--master", default=None, help="Spark master (default: spark-submit's, else local[*])")
    parser.add_argument("--oversize-bytes", type=int, default=DEFAULT_OVERSIZE_BYTES, help="OVERSIZE above this")
    parser.add_argument(
        "--status", type=_status, action="append", default=[], help="TYPE=STATUS effective status (repeatable)"
    )
    parser.add_argument(
        "--registry-url", default=None, help="record evidence in this registry (default $CONTRACT_REGISTRY_URL)"
    )
    parser.add_argument(
        "--no-fail-on-findings",
        action="store_true",
        help="exit 0 when the job ran, even if it found invalid records (they are evidence, not a failure)",
    )
    return parser


def registry_statuses(registry_url: str) -> dict[str, str]:
    """Effective statuses from the registry, so a retired version's traffic counts as RETIRED_TYPE."""
    from contract_platform.store import Registry

    registry = Registry.open(registry_url)
    try:
        return {state.message_type: str(state.status) for state in registry.all_effective()}
    finally:
        registry.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job; return 0 (all valid), 1 (invalid records found), 2 (bad input) or 3 (store failed)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse already printed usage or help
        return int(exc.code or 0)
    catalog_dir = args.catalog or str(settings.catalog_dir())
    registry_url = args.registry_url or os.environ.get("CONTRACT_REGISTRY_URL")
    try:
        catalog = load_catalog(catalog_dir)  # fail fast, before a JVM starts
        statuses = dict(args.status) or (registry_statuses(registry_url) if registry_url else {})
        spark, created = build_session(APP_NAME, args.master)
        try:
            report = run_validation(
                spark,
                args.path,
                catalog_dir,
                report_path=args.report,
                quarantine_dir=args.quarantine,
                oversize_bytes=args.oversize_bytes,
                statuses=statuses,
            )
        finally:
            if created:
                spark.stop()
        if registry_url:
            record_evidence(report, catalog, registry_url, reference=args.report)
    except ContractPlatformError as exc:
        print_error(exc)
        return exc.exit_code
    print(json.dumps(report.to_dict()))
    return 0 if args.no_fail_on_findings and report.exit_code == 1 else report.exit_code


if __name__ == "__main__":
    sys.exit(main())

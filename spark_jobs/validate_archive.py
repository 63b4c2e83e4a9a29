"""Archive validation (docs/design.md#reason-codes): every archived message checked against the catalogue.

    spark-submit spark_jobs/validate_archive.py PATH [--catalog DIR] [--report FILE] [--quarantine DIR]
        [--since DATE] [--until DATE] [--state DIR] [--master URL] [--oversize-bytes N]
        [--status TYPE=STATUS ...] [--registry-url URL] [--run-id ID] [--no-fail-on-findings]

``contractctl validate-archive`` takes the same arguments (``contract_platform.validation.request``,
defined once) and calls the same runner, ``run(ValidationRequest)``, through its entry point
(``contract_platform.spark`` in pyproject.toml); ``main`` is that runner behind this job's parser.
PATH is an archive root, an exchange folder, a date folder or one ``*.jsonl[.gz]`` file. Exit codes
(``spark_jobs.jobs.run_job``): 0 every record valid (or only counted: duplicates, deprecated
types), 1 invalid records found (0 with ``--no-fail-on-findings``), 2 bad input (a missing archive
path, a catalogue that does not load, bad options), 3 the registry store failed. The JSON report goes
to ``--report`` (and stdout); invalid records, each with all its reasons, go to ``--quarantine DIR``
as JSON Lines (``part-*.txt``, Spark's text output).

Incremental runs (docs/archive-validation.md): ``--since``/``--until`` (``since <= date < until``)
read only the ``date=YYYY-MM-DD`` partitions in range, listed by folder name. The cross-record rules
keep their meaning across the boundary through the state kept under ``--state`` (default under the
platform's data folder, ``spark_jobs/_archive_state.py``): copies are compared with the first copies
received within their type's ``validation.dedupWindow`` (24 h by default) before the interval,
sequences with the last one known per ordering key. A lookback day no run kept is read from its
archive partitions (``prior_state``, inside the window only); what neither gives is named in the
report's ``interval.incomplete`` and on stderr, and the evidence is not clean.

Extract -> transform -> load:

* ``list_archive`` + ``archive_splits``: the archive's files, as Spark lists them, cut into splits
  (a gzipped file whole, a plain one in ``spark.sql.files.maxPartitionBytes`` pieces) and packed
  into about two partitions per core;
* ``check_records``: each Python worker reads its splits itself and runs the record-level rules
  (``contract_platform.validation``) on every line, returning Arrow batches (``mapInArrow``): the
  lines never cross into the JVM and back. The catalogue travels as a broadcast of its files'
  contents, compiled once per worker process, so executors need only the installed distribution;
  only records found invalid keep their line, so what Spark caches stays narrow. An input that one
  partition would hold anyway is checked in the driver instead (``check_in_driver``, local masters:
  the same ``check_splits``, the same rows), so a small run starts no Python worker for it;
* ``find_duplicates`` and ``find_out_of_order`` (``spark_jobs/_archive_rules.py``): the cross-record
  rules; duplicates are found by an aggregation first, so the window that names the first copy only
  sees repeated messageIds;
* ``aggregate`` / ``summarize`` (same module): the report's figures, top error paths included, in one
  aggregation;
* ``write_quarantine``: invalid records with all their reasons. The few invalid only by a
  cross-record rule are read again from their splits (same split, same line number, same hash,
  or the job fails with exit 2: the archive changed under it) and checked again for their
  record-level reasons.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
from py4j.protocol import Py4JJavaError
from pyspark import Broadcast, StorageLevel
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from contract_platform import settings
from contract_platform.catalog import load_catalog
from contract_platform.catalog.model import Catalog
from contract_platform.errors import ArchiveError, ContractPlatformError, UsageError
from contract_platform.validation.arrow import (
    CHECKED_FIELDS,
    REREAD_FIELDS,
    SPLIT_FIELDS,
    check_splits,
    quarantine_batches,
    reread_batches,
)
from contract_platform.validation.bundle import CatalogBundle
from contract_platform.validation.evidence import record_evidence
from contract_platform.validation.reading import LINE_BITS, Split
from contract_platform.validation.records import DEFAULT_OVERSIZE_BYTES, effective_statuses
from contract_platform.validation.report import InputFigures, Interval, ValidationReport
from contract_platform.validation.request import ValidationRequest, add_arguments
from spark_jobs._archive_rules import (
    aggregate,
    all_findings,
    find_duplicates,
    find_out_of_order,
    first_copies,
    last_sequences,
    summarize,
)
from spark_jobs._archive_state import (
    DEFAULT_LOOKBACK,
    ArchiveState,
    PriorState,
    dedup_windows,
    default_state_dir,
    split_days,
)
from spark_jobs.archive_io import date_partitions, folder_date, partition_date
from spark_jobs.archive_splits import (
    PARTITION_WORK,
    SPLIT_SCHEMA,
    list_archive,
    packed,
    plan_archive,
    split_frame,
    split_row,
    split_work,
)
from spark_jobs.hadoop_fs import path_exists, path_is_empty
from spark_jobs.jobs import JobRun, run_job, run_parsed

__all__ = [
    "aggregate",
    "check_in_driver",
    "check_records",
    "find_duplicates",
    "find_out_of_order",
    "main",
    "prior_state",
    "run",
    "run_validation",
    "summarize",
    "write_quarantine",
]

APP_NAME = "validate-archive"
_BROADCAST_ROWS = 1_000_000  # flagged records to broadcast, beyond which a shuffle join is safer
_BROADCAST_KEYS = 10_000_000  # records whose repeated keys' hashes (8 bytes each, one per two at most) are broadcast
_COLLECT_ROWS = 100_000  # records to read again that the driver groups itself, beyond which Spark does
CHECKED_SCHEMA = from_arrow_schema(pa.schema(list(CHECKED_FIELDS)))
REREAD_SCHEMA = from_arrow_schema(pa.schema(list(REREAD_FIELDS)))
_SMALL_INPUT = 64 * 2**20  # input bytes below which the flagged records are broadcast without counting them
_IN_DRIVER_WORK = PARTITION_WORK  # work one partition would hold anyway: checked in the driver on a local master


# -- extract ------------------------------------------------------------------------------------


# -- transform ----------------------------------------------------------------------------------


def check_records(
    splits: DataFrame,
    catalog: str | Path | CatalogBundle | Broadcast[CatalogBundle],
    *,
    oversize_bytes: int = DEFAULT_OVERSIZE_BYTES,
    statuses: Mapping[str, str] | None = None,
    keep_lines: bool = False,
) -> DataFrame:
    """The record-level rules on every line of ``splits`` (``CHECKED_SCHEMA``); ``keep_lines`` keeps every line.

    ``catalog``: the catalogue's files as a ``CatalogBundle`` or a broadcast of one (the job's), or
    the catalogue folder to read them from (a benchmark's, a test's).
    """
    if isinstance(catalog, Broadcast):
        shipped = catalog
    else:
        bundle = catalog if isinstance(catalog, CatalogBundle) else CatalogBundle.read(catalog)
        shipped = splits.sparkSession.sparkContext.broadcast(bundle)
    body = partial(
        check_splits,
        catalog=shipped,
        oversize_bytes=oversize_bytes,
        statuses=dict(statuses) if statuses else None,
        keep_lines=keep_lines,
    )
    return splits.mapInArrow(body, CHECKED_SCHEMA)


def check_in_driver(
    spark: SparkSession,
    splits: Sequence[Split],
    bundle: CatalogBundle,
    *,
    oversize_bytes: int = DEFAULT_OVERSIZE_BYTES,
    statuses: Mapping[str, str] | None = None,
) -> DataFrame:
    """``check_records`` run in this process instead of a Python worker: the same ``check_splits``, the same rows.

    For an input that one partition would hold anyway (``_IN_DRIVER_WORK``) on a local master, where
    the driver reads the same files as the workers: no Python worker has to start for it.
    """
    names = [name for name, _ in SPLIT_FIELDS]
    table = pa.RecordBatch.from_pylist(
        [dict(zip(names, split_row(split), strict=True)) for split in splits], schema=pa.schema(list(SPLIT_FIELDS))
    )
    checked = list(
        check_splits(
            [table], catalog=bundle, oversize_bytes=oversize_bytes, statuses=dict(statuses) if statuses else None
        )
    )
    if not any(batch.num_rows for batch in checked):  # Arrow has no rows to build the columns from
        return spark.createDataFrame([], CHECKED_SCHEMA)
    return spark.createDataFrame(pa.Table.from_batches(checked, schema=pa.schema(list(CHECKED_FIELDS))))


def _checked(
    spark: SparkSession,
    splits: Sequence[Split],
    bundle: CatalogBundle,
    shipped: Broadcast[CatalogBundle],
    *,
    oversize_bytes: int,
    statuses: Mapping[str, str],
) -> DataFrame:
    """The record-level rules' rows: in the driver for a small input on a local master, else by the Python workers."""
    local = (spark.sparkContext.master or "").startswith("local")
    if local and sum(split_work(split) for split in splits) <= _IN_DRIVER_WORK:
        return check_in_driver(spark, splits, bundle, oversize_bytes=oversize_bytes, statuses=statuses)
    frame = split_frame(spark, splits)
    return check_records(frame, shipped, oversize_bytes=oversize_bytes, statuses=statuses)


def prior_state(
    spark: SparkSession,
    state: ArchiveState,
    archive: str,
    since: date,
    check: Callable[[Sequence[Split]], DataFrame],
    *,
    windows: Mapping[str, timedelta] | None = None,
    default: timedelta = DEFAULT_LOOKBACK,
    cached: list[DataFrame] | None = None,
) -> PriorState:
    """What the cross-record rules know before ``since``: the state, completed from the window's archive partitions.

    A lookback day no run kept (its first copies, or its sequences after the ordering state's day)
    is read from its archive partitions with ``check`` (the record-level rules' rows of some splits),
    one day at a time, so a day that cannot be read is named instead of failing the run; days outside
    the window are never read (``ArchiveState.plan``). The rows read are cached (and appended to
    ``cached``, for the caller to release once the run is done).
    """
    archived = {day for day in map(folder_date, date_partitions(spark, archive, None, since)) if day is not None}
    plan = state.plan(since, archived, windows, default)
    if not plan.from_archive:
        return state.prior(plan, windows, default)
    listed: dict[date, list[tuple[str, int]]] = {}
    unreadable: set[date] = set()
    for day in plan.from_archive:
        try:
            listed[day] = list_archive(spark, archive, day, day + timedelta(days=1))
        except ArchiveError:
            unreadable.add(day)
    by_day: dict[date | None, list[Split]] = {}
    every_file = [file for day in sorted(listed) for file in listed[day]]
    for split in plan_archive(spark, every_file):  # one plan: record ids unique across the days
        by_day.setdefault(partition_date(split.uri), []).append(split)
    read: dict[date, DataFrame] = {}
    for day in sorted(listed):
        if not by_day.get(day):
            continue  # a partition without archive files: read, and nothing in it
        try:
            rows = check(by_day[day]).persist(StorageLevel.MEMORY_AND_DISK)
            if cached is not None:
                cached.append(rows)
            rows.count()  # read now: a file that cannot be opened fails here, for this day alone
        except (ArchiveError, PySparkException, Py4JJavaError) as exc:
            if not isinstance(exc, ArchiveError) and _job_error(exc) is None:
                raise
            unreadable.add(day)
            continue
        read[day] = rows

    def union(wanted: Sequence[date]) -> DataFrame | None:
        frames = [read[day] for day in wanted if day in read]
        if not frames:
            return None
        joined = frames[0]
        for frame in frames[1:]:
            joined = joined.unionByName(frame)
        return joined

    everything = union(sorted(read))
    if everything is None:
        return state.prior(plan, windows, default, unreadable=unreadable)
    copies = find_duplicates(everything)  # a copy among the days read is no first copy and no sequence, as in a run
    seen = union(plan.seen_from_archive)
    ordered = union(plan.order_from_archive)
    return state.prior(
        plan,
        windows,
        default,
        seen_rebuilt=first_copies(seen, copies) if seen is not None else None,
        last_rebuilt=last_sequences(ordered, copies) if ordered is not None else None,
        unreadable=unreadable,
    )


# -- load ---------------------------------------------------------------------------------------


def _check_quarantine_dir(spark: SparkSession, quarantine_dir: str) -> None:
    if not path_is_empty(spark, quarantine_dir) and not path_exists(spark, f"{quarantine_dir}/_SUCCESS"):
        raise UsageError(f"{quarantine_dir} is not empty and holds no earlier quarantine: give an empty or new folder")


def write_quarantine(
    records: DataFrame,
    quarantine_dir: str,
    splits: Sequence[Split],
    reread: Any,
    *,
    collect_limit: int | None = None,
) -> None:
    """Invalid records, as the original record plus ``reasons`` (JSON Lines), replacing a previous quarantine.

    ``records`` keep the line of records the record-level rules found invalid; the others (invalid
    by a cross-record rule only) are read again from their ``splits`` by ``reread``
    (``reread_batches`` with the job's catalogue and options), which checks them again for their
    record-level reasons. Up to ``collect_limit`` (default ``_COLLECT_ROWS``) such records are
    grouped by split on the driver and the splits spread evenly over the cores; more, by Spark.
    """
    limit = _COLLECT_ROWS if collect_limit is None else collect_limit
    spark = records.sparkSession
    _check_quarantine_dir(spark, quarantine_dir)
    invalid = records.where("invalid")
    kept = invalid.where(F.col("line").isNotNull()).select("line", "archive_file", "findings")
    missing = invalid.where(F.col("line").isNull()).select("record_id", "line_hash", "findings")
    found = missing.limit(limit + 1).collect()
    if len(found) <= limit:
        again = _reread_splits(spark, splits, found)
    else:
        wanted = missing.groupBy(F.shiftright("record_id", LINE_BITS).alias("split_index")).agg(
            F.collect_list(F.struct("record_id", "line_hash", "findings")).alias("wanted")
        )
        table = spark.createDataFrame([split_row(s) for s in splits], SPLIT_SCHEMA)
        again = table.join(wanted, "split_index").select(*[name for name, _ in REREAD_FIELDS])
    quarantined = kept.mapInArrow(quarantine_batches, "value string").unionByName(
        again.mapInArrow(reread, "value string")
    )
    quarantined.write.mode("overwrite").text(quarantine_dir)


def _reread_splits(spark: SparkSession, splits: Sequence[Split], found: Sequence[Any]) -> DataFrame:
    """``REREAD_FIELDS`` rows for the splits that hold ``found`` records, packed evenly over the cores."""
    wanted: dict[int, list[tuple[Any, ...]]] = {}
    for row in found:
        findings = [tuple(f) for f in row["findings"] or []]
        wanted.setdefault(Split.of_record(row["record_id"])[0], []).append(
            (row["record_id"], row["line_hash"], findings)
        )
    by_index = {split.index: split for split in splits}
    context = spark.sparkContext
    bins = [
        [(*split_row(split), wanted[split.index]) for split in part]
        for part in packed([by_index[index] for index in sorted(wanted)], 2 * context.defaultParallelism)
    ]
    return spark.createDataFrame(context.parallelize(bins, len(bins)).flatMap(lambda part: part), REREAD_SCHEMA)


def _job_error(exc: Exception) -> ContractPlatformError | None:
    """The platform error a Python worker raised (an archive file gone or changed), if that is what failed."""
    text = str(exc)
    marker = "contract_platform.errors.ArchiveError: "
    if marker in text:
        return ArchiveError(text.split(marker, 1)[1].splitlines()[0])
    return None


def run_validation(
    spark: SparkSession, request: ValidationRequest, *, catalog: Catalog | None = None
) -> ValidationReport:
    """Validate every record under ``request.path`` (or its date partitions in ``[since, until)``); write the report and quarantine when asked.

    With ``request.state``, the cross-record rules start from what earlier intervals kept there (when
    ``since`` is given) and this interval's state is written there afterwards (``_archive_state``);
    each type looks back over its own ``validation.dedupWindow`` for an earlier copy (24 h for a type
    the catalogue does not hold). ``catalog``: the catalogue already loaded from ``request.catalog``
    (loaded here when not given). Raises ``ArchiveError`` (missing path, or files that changed during
    the run), ``CatalogError`` (catalogue does not load) and ``UsageError`` (bad status or quarantine folder).
    """
    try:
        return _run_validation(spark, request, catalog)
    except (PySparkException, Py4JJavaError) as exc:  # a Python worker's error, as Spark hands it back
        mapped = _job_error(exc)
        if mapped is None:
            raise
        raise mapped from None


def _run_validation(spark: SparkSession, request: ValidationRequest, catalog: Catalog | None) -> ValidationReport:
    started = time.perf_counter()
    started_at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    archive = str(request.path)
    since, until = request.since, request.until
    statuses = dict(request.statuses)
    oversize_bytes = request.oversize_bytes
    quarantine_dir = str(request.quarantine) if request.quarantine is not None else None
    if catalog is None:
        catalog = load_catalog(request.catalog or settings.catalog_dir())  # CatalogError lists every problem
    windows = dedup_windows(catalog)  # each type its own window
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
        _check_quarantine_dir(spark, quarantine_dir)
    # The workers need the files' bytes, which a loaded Catalog does not keep: the bundle reads them from
    # the folder the catalogue was loaded from, so both describe the same catalogue.
    bundle = CatalogBundle.read(catalog.root)
    shipped = spark.sparkContext.broadcast(bundle)  # once: the record rules and the second read share it
    state = ArchiveState(spark, str(request.state)) if request.state is not None else None
    files = list_archive(spark, archive, since, until)

    def check(splits: Sequence[Split]) -> DataFrame:
        return _checked(spark, splits, bundle, shipped, oversize_bytes=oversize_bytes, statuses=statuses)

    rebuilt: list[DataFrame] = []  # lookback days read from the archive, released with the rest
    flags: DataFrame | None = None
    duplicates: DataFrame | None = None
    checked: DataFrame | None = None
    try:
        prior = (
            prior_state(
                spark,
                state or ArchiveState(spark, None),  # no state kept: the lookback's partitions are still read
                archive,
                since,
                check,
                windows=windows,
                cached=rebuilt,
            )
            if since is not None
            else PriorState(None, None, 0, None)
        )
        planned = plan_archive(spark, files)
        checked = check(planned).persist(StorageLevel.MEMORY_AND_DISK)
        sequence_paths = {c.message_type: c.ordering.sequence for c in catalog if c.ordering is not None}
        # The flagged records are a subset of the records: when these are few enough to broadcast, so are
        # those, and nothing has to be counted. A small input is known to be few; a larger one counts its
        # records (the Spark job that runs the record-level rules and fills the cache, needed anyway).
        small_input = sum(size for _, size in files) <= _SMALL_INPUT
        counted = None if small_input else checked.count()
        few = counted is None or counted <= _BROADCAST_ROWS
        keys_few = prior.seen is None and (counted is None or counted <= _BROADCAST_KEYS)
        duplicates = find_duplicates(checked, prior.seen, broadcast_keys=keys_few).persist(StorageLevel.MEMORY_AND_DISK)
        small = F.broadcast(duplicates) if few or duplicates.count() <= _BROADCAST_ROWS else duplicates
        flags = duplicates.unionByName(find_out_of_order(checked, sequence_paths, small, prior.last)).persist(
            StorageLevel.MEMORY_AND_DISK
        )
        # Not cached: the report's aggregation and the quarantine each read the cached records with the
        # flags joined on the way, which costs less than writing a second copy of every record.
        records = all_findings(checked, flags, broadcast=few or flags.count() <= _BROADCAST_ROWS)
        figures = aggregate(records)
        if quarantine_dir is not None:
            reread = partial(reread_batches, catalog=shipped, oversize_bytes=oversize_bytes, statuses=statuses or None)
            write_quarantine(records, quarantine_dir, planned, reread)
        report = ValidationReport(
            archive=archive,
            catalog=str(catalog.root),
            catalog_fingerprint=bundle.fingerprint,
            figures=figures,
            input=InputFigures(files=len(files), bytes=sum(size for _, size in files)),
            elapsed_seconds=time.perf_counter() - started,
            quarantine=quarantine_dir,
            oversize_bytes=oversize_bytes,
            statuses=statuses,
            started_at=started_at,
            interval=Interval(
                since,
                until,
                partitions=len({str(uri).rsplit("/", 1)[0] for uri, _ in files}),
                lookback_days=prior.lookback_days,
                state_from=prior.state_from,
                rebuilt=prior.rebuilt,
                incomplete=prior.incomplete,
            )
            if request.incremental
            else None,
        )
        if state is not None:
            by_split = split_days(planned)
            last_day = (until - timedelta(days=1)) if until is not None else max(by_split.values(), default=None)
            first_day = since if since is not None else min(by_split.values(), default=None)
            if last_day is not None:
                state.write(
                    first_copies(checked, small),
                    last_sequences(checked, small, prior.last),
                    by_split,
                    last_day,
                    run_days=_days(first_day, last_day + timedelta(days=1)) if first_day is not None else (),
                    ordering_gaps=prior.incomplete.ordering,
                )
    finally:
        for cached in (checked, flags, duplicates, *rebuilt):
            if cached is not None:
                cached.unpersist(blocking=True)
    if request.report is not None:
        Path(request.report).parent.mkdir(parents=True, exist_ok=True)
        Path(request.report).write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    return report


def _days(since: date, until: date) -> list[date]:
    """Every day of ``[since, until)``."""
    return [since + timedelta(days=n) for n in range((until - since).days)]


# -- main ---------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    """This job's parser: ``contractctl validate-archive``'s arguments (one definition), under the job's name."""
    parser = argparse.ArgumentParser(prog="validate_archive", description=(__doc__ or "").splitlines()[0])
    add_arguments(parser)
    return parser


def registry_statuses(registry_url: str) -> dict[str, str]:
    """Effective statuses from the registry, as the record rules read them (``validation.records.statuses_given``),
    so a retired version's traffic counts as RETIRED_TYPE."""
    from contract_platform.store import SqlRegistry
    from contract_platform.validation.records import statuses_given

    with SqlRegistry.open(registry_url) as registry:
        return statuses_given(registry.all_effective())


def _validate(run: JobRun) -> int:
    request: ValidationRequest = run.args
    assert run.catalog is not None  # a request names its catalogue (or the default one)
    statuses = request.statuses or (registry_statuses(run.registry_url) if run.registry_url else {})
    state = request.state or (default_state_dir(str(request.path)) if request.incremental else None)
    run.reads(str(request.path))  # before the session starts
    # the catalogue was loaded once, before the JVM started
    report = run_validation(run.spark, replace(request, statuses=statuses, state=state), catalog=run.catalog)
    run.close()  # the evidence needs no JVM: free it first
    if not report.incomplete.complete:
        interval = report.interval
        print(
            f"warning: the cross-day checks of {interval.since if interval else 'this run'} onwards are incomplete, "
            f"not clean: {report.incomplete.describe()}; validate those days in order, then this range again "
            "(docs/archive-validation.md#incremental-runs)",
            file=sys.stderr,
        )
    if run.registry_url:
        from contract_platform.store import SqlRegistry  # SQLAlchemy: only where evidence is recorded

        reference = str(request.report) if request.report is not None else None
        with SqlRegistry.open(run.registry_url) as registry:
            record_evidence(report, run.catalog, registry, reference=reference, run_id=request.run_id)
    print(json.dumps(report.to_dict()))
    return report.exit_code


def run(request: ValidationRequest) -> int:
    """The one runner, for ``main`` and ``contractctl validate-archive``: 0 all valid, 1 invalid records, 2 bad input, 3 store failed."""
    return run_parsed(APP_NAME, request, _validate)


def main(argv: Sequence[str] | None = None) -> int:
    """The job under ``spark-submit``: its arguments parsed into a ``ValidationRequest``, then ``run``."""
    return run_job(APP_NAME, _parser(), _validate, argv, request=ValidationRequest.from_args)


if __name__ == "__main__":
    sys.exit(main())

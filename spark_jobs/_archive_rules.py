"""Archive validation's cross-record rules and report figures, as DataFrame transforms.

What ``spark_jobs/validate_archive.py`` runs after the record-level rules, on the narrow rows they
return (``validation.arrow.CHECKED_FIELDS``): DUPLICATE / CONFLICTING_DUPLICATE and OUT_OF_ORDER as
defined in ``contract_platform.validation.sequence`` (whose plain-Python ``sequence_findings`` the
tests compare these with), the merge of their findings into each record's, and the report's
figures in one aggregation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from contract_platform.validation.reasons import Reason
from contract_platform.validation.report import Figures, Group, InputFigures, RetiredGroup, ValidationReport
from contract_platform.validation.sequence import (
    CONFLICTING_MESSAGE,
    DUPLICATE_MESSAGE,
    DUPLICATE_PATHS,
    OUT_OF_ORDER_MESSAGE,
    UNKNOWN_TIME,
)

__all__ = [
    "FINDINGS_DDL",
    "FINDING_DDL",
    "aggregate",
    "all_findings",
    "find_duplicates",
    "find_out_of_order",
    "first_copies",
    "last_sequences",
    "ordered_records",
    "summarize",
]

FINDING_DDL = "struct<rank:int,code:string,path:string,message:string>"  # validation.arrow.FINDING_TYPE
FINDINGS_DDL = f"array<{FINDING_DDL}>"
_INVALID_RANKS = [reason.rank for reason in Reason if reason.invalid]
_COUNTED_CODES = [str(reason) for reason in Reason if not reason.invalid]


def _finding(reason: Reason, path: Column | str, message: Column) -> Column:
    path = F.lit(path) if isinstance(path, str) else path
    return F.struct(
        F.lit(reason.rank).alias("rank"), F.lit(str(reason)).alias("code"), path.alias("path"), message.alias("message")
    )


def _in_archive_order(*keys: str) -> Any:
    return Window.partitionBy(*keys).orderBy(F.col("received_us").asc_nulls_last(), F.col("record_id"))


SEEN_COLUMNS = ("message_type", "message_id", "payload_hash", "received_at", "received_us")
LAST_COLUMNS = ("message_type", "order_key", "sequence")
PRIOR_ID = -1  # record_id of what an earlier run saw: it takes part in the rules, it is never flagged
_BEFORE_ALL = -(2**63)  # received_us of the ordering state: before anything in the interval


def find_duplicates(records: DataFrame, prior: DataFrame | None = None, *, broadcast_keys: bool = False) -> DataFrame:
    """(record_id, finding): DUPLICATE / CONFLICTING_DUPLICATE for every copy after the first (see ``sequence``).

    The messageIds seen more than once are found by an aggregation on a 64-bit hash of the key (a
    collision only lets a record into the window, which orders by the key itself); only their copies
    are windowed. ``prior`` (``SEEN_COLUMNS``: first copies an earlier interval's run kept, within the
    lookback) take part as originals, so a copy of a message received before the interval is still
    found. ``broadcast_keys``: the repeated keys' hashes are few enough (at most one per two records)
    to send to every task, so the records are filtered where they are instead of shuffled.
    """
    key = ["message_type", "message_id"]
    keyed = records.where(F.col("message_type").isNotNull() & F.col("message_id").isNotNull()).select(
        "record_id", *key, "payload_hash", "received_at", "received_us"
    )
    if prior is not None:
        keyed = keyed.unionByName(prior.select(F.lit(PRIOR_ID).cast("long").alias("record_id"), *SEEN_COLUMNS))
    keyed = keyed.withColumn("key_hash", F.xxhash64(*key))
    repeated = keyed.groupBy("key_hash").count().where(F.col("count") > 1).select("key_hash")
    copies = keyed.join(F.broadcast(repeated) if broadcast_keys else repeated, "key_hash", "left_semi")
    window = _in_archive_order(*key)
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
    flagged = F.when(copy & same, duplicate).when(copy, conflicting)
    found = copies.select("record_id", flagged.alias("finding")).where(F.col("finding").isNotNull())
    return found.where(F.col("record_id") != PRIOR_ID) if prior is not None else found


def find_out_of_order(
    records: DataFrame, sequence_paths: Mapping[str, str], duplicates: DataFrame, prior: DataFrame | None = None
) -> DataFrame:
    """(record_id, finding): OUT_OF_ORDER where the sequence is below the highest before it for its key.

    ``duplicates`` (``find_duplicates``) neither count nor get flagged. ``sequence_paths`` maps each
    messageType with ordering to its sequence pointer. ``prior`` (``LAST_COLUMNS``: the highest
    sequence per key before the interval) counts as received before every record of the interval.
    """
    ordered = ordered_records(records, duplicates)
    if prior is not None:
        ordered = ordered.unionByName(
            prior.select(
                F.lit(PRIOR_ID).cast("long").alias("record_id"),
                *LAST_COLUMNS,
                F.lit(_BEFORE_ALL).cast("long").alias("received_us"),
            )
        )
    window = _in_archive_order("message_type", "order_key").rowsBetween(Window.unboundedPreceding, -1)
    highest = F.max("sequence").over(window)
    paths = F.create_map(*[F.lit(part) for item in sorted(sequence_paths.items()) for part in item])
    message = F.format_string(OUT_OF_ORDER_MESSAGE, F.col("sequence"), highest, F.col("order_key"))
    late = F.when(F.col("sequence") < highest, _finding(Reason.OUT_OF_ORDER, paths[F.col("message_type")], message))
    return ordered.select("record_id", late.alias("finding")).where(
        F.col("finding").isNotNull() & (F.col("record_id") != PRIOR_ID)
    )


def ordered_records(records: DataFrame, duplicates: DataFrame) -> DataFrame:
    """The records the ordering rule reads: a key and a sequence, duplicates left out."""
    ordered = records.where(F.col("order_key").isNotNull() & F.col("sequence").isNotNull()).select(
        "record_id", "message_type", "order_key", "sequence", "received_us"
    )
    return ordered.join(duplicates.select("record_id"), "record_id", "left_anti")


def first_copies(records: DataFrame, duplicates: DataFrame) -> DataFrame:
    """``SEEN_COLUMNS`` of the records that are not a copy: what a later interval's duplicates are compared with."""
    keyed = records.where(F.col("message_type").isNotNull() & F.col("message_id").isNotNull())
    return keyed.join(duplicates.select("record_id"), "record_id", "left_anti").select("record_id", *SEEN_COLUMNS)


def last_sequences(records: DataFrame, duplicates: DataFrame, prior: DataFrame | None = None) -> DataFrame:
    """``LAST_COLUMNS``: the highest sequence per (messageType, key) known at the end of the interval."""
    ordered = ordered_records(records, duplicates).select(*LAST_COLUMNS)
    if prior is not None:
        ordered = ordered.unionByName(prior.select(*LAST_COLUMNS))
    return ordered.groupBy("message_type", "order_key").agg(F.max("sequence").alias("sequence"))


def all_findings(records: DataFrame, flags: DataFrame, *, broadcast: bool = True) -> DataFrame:
    """``records`` with ``findings`` completed by the cross-record ones, in precedence order, ``first_rank`` and ``invalid``.

    A record has one cross-record finding at most (copies are left out of the ordering rule). A
    record whose line was not kept gets only that finding here: its record-level ones are all
    counted ones (else it would have been kept), which the quarantine reads again.
    """
    flag = F.col("finding")
    flagged = flag.isNotNull()
    merged = F.array_sort(F.concat(F.coalesce("findings", F.array().cast(FINDINGS_DDL)), F.array(flag)))
    first = F.when(flagged, F.least(F.col("rank"), flag["rank"])).otherwise(F.col("rank"))
    return (
        records.join(F.broadcast(flags) if broadcast else flags, "record_id", "left")
        .withColumn("findings", F.when(flagged, merged).otherwise(F.col("findings")))
        .withColumn("first_rank", first)
        .withColumn("invalid", F.coalesce(F.col("first_rank").isin(_INVALID_RANKS), F.lit(False)))
        .drop("finding")
    )


def aggregate(records: DataFrame) -> Figures:
    """The report's figures from records that carry ``first_rank``, ``invalid`` and ``findings``, in one Spark job.

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
        "retired_producer",
        F.posexplode_outer(error_paths).alias("position", "path"),
    )
    first = F.col("position").isNull() | (F.col("position") == 0)
    rows = (
        exploded.groupBy("message_type", "first_rank", "path", "retired_producer")
        .agg(
            F.count(F.when(first, 1)).alias("records"),
            F.sum(F.when(first, F.col("line_bytes"))).alias("line_bytes"),
            F.min(F.when(first, F.col("received_us"))).alias("first_us"),
            F.max(F.when(first, F.col("received_us"))).alias("last_us"),
            F.count("path").alias("path_count"),
        )
        .collect()
    )
    groups: dict[tuple[str | None, int | None], Group] = {}
    paths: Counter[str] = Counter()
    retired: list[RetiredGroup] = []  # messages received on a retired version, per producer (null: none)
    for row in rows:
        key = (row["message_type"], row["first_rank"])
        part = Group(*key, row["records"], row["line_bytes"] or 0, row["first_us"], row["last_us"])
        groups[key] = _merged(groups[key], part) if key in groups else part
        if row["path"] is not None:
            paths[row["path"]] += row["path_count"]
        if row["retired_producer"] is not None and row["message_type"] is not None and row["records"]:
            retired.append(
                RetiredGroup(
                    row["message_type"], row["retired_producer"], row["records"], row["first_us"], row["last_us"]
                )
            )
    return Figures.from_groups((g for g in groups.values() if g.records), paths.items(), retired)


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


def summarize(records: DataFrame) -> dict[str, Any]:
    """``aggregate`` as the JSON figures of the report (totals, by_reason, by_type, top paths, window)."""
    report = ValidationReport("", "", "", aggregate(records), InputFigures(), 0.0).to_dict()
    return {key: report[key] for key in ("totals", "by_reason", "by_type", "top_error_paths", "window")}

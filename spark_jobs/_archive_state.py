"""What an incremental archive validation keeps between runs, so no run re-reads history (docs/archive-validation.md).

Under the state folder (default ``<data>/state/archive-validation/<archive digest>``), Parquet
partitioned by the archive's date partition:

* ``seen/date=YYYY-MM-DD/``: the first copy of every message of that day (messageType, messageId,
  payload hash, receivedAt): what a later day's DUPLICATE / CONFLICTING_DUPLICATE compare with,
  read back only for the lookback before the interval;
* ``last/date=YYYY-MM-DD/``: the highest sequence per (messageType, ordering key) known at the end
  of that day (cumulative): a run starts OUT_OF_ORDER from the latest one before its interval. Its
  ``_gaps.json`` (hidden from Spark's reader) names the earlier days that state lacks, when any.

A run writes its own days' partitions only (dynamic overwrite): running a day again replaces that
day's state and reads exactly what the first run read. A day of the interval without records gets
an empty ``seen/`` partition: it was run, and had no traffic.

Where a lookback day has no state (never run: the first run over an existing archive, an outage, a
backfill in the wrong order), ``contract_platform.validation.lookback.plan_lookback`` decides from
folder names which of those days' archive partitions to read (inside the dedup window only) and
which days nobody can see; ``prior`` takes what was read and names what is missing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from contract_platform import settings
from contract_platform.archive_layout import validation_state_dir
from contract_platform.catalog.model import Contract, ValidationSettings
from contract_platform.validation.lookback import Incomplete, LookbackPlan, lookback_days, plan_lookback
from contract_platform.validation.reading import LINE_BITS, Split
from spark_jobs._archive_rules import LAST_COLUMNS, SEEN_COLUMNS
from spark_jobs.archive_io import folder_date, partition_date
from spark_jobs.hadoop_fs import hadoop_path

__all__ = [
    "DEFAULT_LOOKBACK",
    "ArchiveState",
    "PriorState",
    "dedup_windows",
    "default_state_dir",
    "split_days",
]

DEFAULT_LOOKBACK = ValidationSettings().dedup_window  # a contract's dedupWindow unless it declares one


def dedup_windows(contracts: Iterable[Contract]) -> dict[str, timedelta]:
    """messageType -> its ``validation.dedupWindow`` (``ArchiveState.prior`` gives other types ``DEFAULT_LOOKBACK``)."""
    return {contract.message_type: contract.validation.dedup_window for contract in contracts}


def default_state_dir(archive: str) -> str:
    """``<data>/state/archive-validation/<digest of the archive path>``: one state per archive validated."""
    return str(validation_state_dir(archive, settings.data_dir()))


@dataclass(frozen=True)
class PriorState:
    """What earlier runs knew when this interval starts (None: nothing kept), and what nobody knew.

    ``rebuilt``: lookback days read from their archive partitions for want of state;
    ``incomplete``: the earlier days the cross-day rules could not see.
    """

    seen: DataFrame | None
    last: DataFrame | None
    lookback_days: int
    state_from: date | None
    rebuilt: tuple[date, ...] = ()
    incomplete: Incomplete = field(default_factory=Incomplete)


@dataclass(frozen=True)
class ArchiveState:
    """The state under ``root``; None: a run that keeps none (it still reads its lookback's partitions)."""

    spark: SparkSession
    root: str | None

    def plan(
        self,
        since: date,
        archived: Iterable[date],
        windows: Mapping[str, timedelta] | None = None,
        default: timedelta = DEFAULT_LOOKBACK,
    ) -> LookbackPlan:
        """Where each earlier day's state comes from for a run starting at ``since`` (``plan_lookback``).

        ``archived``: the days with an archive partition (folder names only). The window is the
        widest of the types' (``windows``, ``default`` for the others).
        """
        widest = max([default, *dict(windows or {}).values()])
        last_day = self._latest_before(since)
        return plan_lookback(
            since,
            lookback_days(widest),
            archived=archived,
            seen=self._days("seen"),
            last_day=last_day,
            last_gaps=self._gaps(last_day) if last_day is not None else (),
        )

    def prior(
        self,
        plan: LookbackPlan,
        windows: Mapping[str, timedelta] | None = None,
        default: timedelta = DEFAULT_LOOKBACK,
        *,
        seen_rebuilt: DataFrame | None = None,
        last_rebuilt: DataFrame | None = None,
        unreadable: Iterable[date] = (),
    ) -> PriorState:
        """First copies received in their dedup window before ``plan.since`` and the latest ordering state before it.

        A messageType in ``windows`` looks back its own window, any other ``default``. What the
        state holds is read from it; ``seen_rebuilt`` (``SEEN_COLUMNS``) and ``last_rebuilt``
        (``LAST_COLUMNS``) are what the archive partitions of the plan's other days gave, and
        ``unreadable`` the days whose partitions could not be read.
        """
        per_type = dict(windows or {})
        failed = set(unreadable)
        since = plan.since
        seen_paths = [f"{self.root}/seen/date={day}" for day in plan.seen_from_state]
        seen = self.spark.read.schema(_SEEN_SCHEMA).parquet(*seen_paths).select(*SEEN_COLUMNS) if seen_paths else None
        if seen_rebuilt is not None:
            rebuilt = seen_rebuilt.select(*SEEN_COLUMNS)
            seen = rebuilt if seen is None else seen.unionByName(rebuilt)
        if seen is not None:
            start_us = int(datetime.combine(since, datetime.min.time(), UTC).timestamp() * 1_000_000)
            seen = seen.where(F.col("received_us") >= F.lit(start_us) - _window_us(per_type, default))
        state_from = self._latest_before(since)
        last = None
        if state_from is not None:
            last = self.spark.read.parquet(f"{self.root}/last/date={state_from}").select(*LAST_COLUMNS)
        if last_rebuilt is not None:
            rebuilt_last = last_rebuilt.select(*LAST_COLUMNS)
            last = rebuilt_last if last is None else last.unionByName(rebuilt_last)
        return PriorState(
            seen,
            last,
            len(plan.window),
            state_from,
            rebuilt=tuple(day for day in plan.from_archive if day not in failed),
            incomplete=plan.with_unreadable(failed),
        )

    def _days(self, part: str) -> set[date]:
        """The days ``part`` (``seen``, ``last``) holds a partition for, by folder name."""
        if self.root is None:
            return set()
        fs, root = hadoop_path(self.spark, f"{self.root}/{part}")
        if not fs.exists(root):
            return set()
        found = [folder_date(str(status.getPath())) for status in fs.listStatus(root) if status.isDirectory()]
        return {day for day in found if day is not None}

    def _latest_before(self, since: date) -> date | None:
        return max((day for day in self._days("last") if day < since), default=None)

    def _gaps(self, day: date) -> list[date]:
        """The earlier days the ordering state at the end of ``day`` lacks (``_gaps.json``; none: complete)."""
        if self.root is None:
            return []
        fs, path = hadoop_path(self.spark, f"{self.root}/last/date={day}/{_GAPS_FILE}")
        if not fs.exists(path):
            return []
        stream = fs.open(path)
        try:
            scanner = self.spark.sparkContext._jvm.java.util.Scanner(stream, "UTF-8").useDelimiter("\\A")  # type: ignore[union-attr]
            text = str(scanner.next()) if scanner.hasNext() else ""
        finally:
            stream.close()
        try:
            return list(Incomplete.from_dict(json.loads(text)).ordering)
        except ValueError:  # a damaged file: the state cannot say what it lacks, so it lacks that day itself
            return [day]

    def write(
        self,
        seen: DataFrame,
        last: DataFrame,
        split_days: dict[int, date],
        last_day: date,
        *,
        run_days: Iterable[date] = (),
        ordering_gaps: Iterable[date] = (),
    ) -> None:
        """This interval's first copies (by their file's date partition) and the ordering state at ``last_day``'s end.

        ``run_days``: the interval's days; those without records get an empty ``seen/`` partition.
        ``ordering_gaps``: the earlier days the ordering state lacks (``_gaps.json`` beside it).
        """
        if self.root is None:
            return
        if split_days:
            day_of = self.spark.createDataFrame(
                [(index, day.isoformat()) for index, day in split_days.items()], "split_index long, date string"
            )
            (
                seen.withColumn("split_index", F.shiftright("record_id", LINE_BITS))
                .join(F.broadcast(day_of), "split_index")
                .select(*SEEN_COLUMNS, "date")
                .coalesce(1)
                .write.mode("overwrite")
                .option("partitionOverwriteMode", "dynamic")
                .partitionBy("date")
                .parquet(f"{self.root}/seen")
            )
        quiet = sorted(set(run_days) - set(split_days.values()))
        for day in quiet:
            empty = self.spark.createDataFrame([], _SEEN_SCHEMA)
            empty.coalesce(1).write.mode("overwrite").parquet(f"{self.root}/seen/date={day}")
        target = f"{self.root}/last/date={last_day}"
        last.select(*LAST_COLUMNS).coalesce(1).write.mode("overwrite").parquet(target)
        gaps = sorted(set(ordering_gaps))
        if gaps:
            fs, path = hadoop_path(self.spark, f"{target}/{_GAPS_FILE}")
            out = fs.create(path, True)
            try:
                out.write(bytearray(json.dumps(Incomplete(ordering=tuple(gaps)).to_dict()).encode("utf-8")))
            finally:
                out.close()


_GAPS_FILE = "_gaps.json"  # a leading underscore: Spark's Parquet reader leaves it out
_SEEN_SCHEMA = "message_type string, message_id string, payload_hash binary, received_at string, received_us long"


def _window_us(windows: Mapping[str, timedelta], default: timedelta) -> Column:
    """A column of each row's dedup window in microseconds, by its ``message_type``."""

    def us(window: timedelta) -> int:
        return window // timedelta(microseconds=1)

    fallback = F.lit(us(default)).cast("long")
    if not windows:
        return fallback
    pairs = [(F.lit(name), F.lit(us(window)).cast("long")) for name, window in sorted(windows.items())]
    table = F.create_map(*[part for pair in pairs for part in pair])
    return F.coalesce(table[F.col("message_type")], fallback)


def split_days(splits: list[Split]) -> dict[int, date]:
    """Split index -> the date partition of its file (files outside a date partition are left out)."""
    found = {split.index: partition_date(split.uri) for split in splits}
    return {index: day for index, day in found.items() if day is not None}

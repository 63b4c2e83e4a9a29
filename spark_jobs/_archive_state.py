"""What an incremental archive validation keeps between runs, so no run re-reads history (docs/archive-validation.md).

Under the state folder (default ``<data>/state/archive-validation/<archive digest>``), Parquet
partitioned by the archive's date partition:

* ``seen/date=YYYY-MM-DD/``: the first copy of every message of that day (messageType, messageId,
  payload hash, receivedAt): what a later day's DUPLICATE / CONFLICTING_DUPLICATE compare with,
  read back only for the lookback before the interval;
* ``last/date=YYYY-MM-DD/``: the highest sequence per (messageType, ordering key) known at the end
  of that day (cumulative): a run starts OUT_OF_ORDER from the latest one before its interval.

A run writes its own days' partitions only (dynamic overwrite): running a day again replaces that
day's state and reads exactly what the first run read.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from contract_platform import settings
from contract_platform.catalog.model import Contract, ValidationSettings
from contract_platform.validation.reading import LINE_BITS, Split
from spark_jobs._archive_rules import LAST_COLUMNS, SEEN_COLUMNS
from spark_jobs._common import folder_date, hadoop_path, partition_date, path_exists

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
    digest = hashlib.sha256(archive.rstrip("/").encode("utf-8")).hexdigest()[:16]
    return str(settings.data_dir() / "state" / "archive-validation" / digest)


@dataclass(frozen=True)
class PriorState:
    """What earlier runs knew when this interval starts (None: nothing kept)."""

    seen: DataFrame | None
    last: DataFrame | None
    lookback_days: int
    state_from: date | None


@dataclass(frozen=True)
class ArchiveState:
    spark: SparkSession
    root: str

    def prior(
        self, since: date, windows: Mapping[str, timedelta] | None = None, default: timedelta = DEFAULT_LOOKBACK
    ) -> PriorState:
        """First copies received in their dedup window before ``since`` and the latest ordering state before it.

        A messageType in ``windows`` looks back its own window, any other ``default``; the days read
        are those of the widest.
        """
        per_type = dict(windows or {})
        lookback_days = max(1, math.ceil(max([default, *per_type.values()]) / timedelta(days=1)))
        seen_paths = [
            path
            for n in range(lookback_days, 0, -1)
            if path_exists(self.spark, path := f"{self.root}/seen/date={since - timedelta(days=n)}")
        ]
        seen = None
        if seen_paths:
            start_us = int(datetime.combine(since, datetime.min.time(), UTC).timestamp() * 1_000_000)
            seen = self.spark.read.parquet(*seen_paths).select(*SEEN_COLUMNS)
            seen = seen.where(F.col("received_us") >= F.lit(start_us) - _window_us(per_type, default))
        state_from = self._latest_before(since)
        last = None
        if state_from is not None:
            last = self.spark.read.parquet(f"{self.root}/last/date={state_from}").select(*LAST_COLUMNS)
        return PriorState(seen, last, lookback_days, state_from)

    def _latest_before(self, since: date) -> date | None:
        fs, root = hadoop_path(self.spark, f"{self.root}/last")
        if not fs.exists(root):
            return None
        found = [folder_date(str(status.getPath())) for status in fs.listStatus(root) if status.isDirectory()]
        return max((day for day in found if day is not None and day < since), default=None)

    def write(self, seen: DataFrame, last: DataFrame, split_days: dict[int, date], last_day: date) -> None:
        """This interval's first copies (by their file's date partition) and the ordering state at ``last_day``'s end."""
        if not split_days:
            return
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
        target = f"{self.root}/last/date={last_day}"
        last.select(*LAST_COLUMNS).coalesce(1).write.mode("overwrite").parquet(target)


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

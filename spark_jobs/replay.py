"""Replay (docs/replay.md): archived and in-flight messages of each changed version checked against it.

    spark-submit spark_jobs/replay.py [ARCHIVE] [--catalog DIR] [--registry-url URL] [--run-id ID]
        [--report FILE] [--only TYPE ...] [--no-in-flight] [--master URL] [--no-fail-on-findings]

ARCHIVE is the archive root (default: the platform's, ``settings.archive_dir()``). This job always runs
on Spark; ``contractctl check --replay`` runs the same replay in-process for a small local window
(``replay.local``, docs/replay.md#engines). Which versions: each
version of the catalogue with an earlier version of its major in the registry's schema history, and
each new major with a ``migration.yaml`` (``replay.run.replay_targets``). Exit codes
(``spark_jobs.jobs.run_job``): 0 nothing refused, 1 replay refused a version (0 with
``--no-fail-on-findings``), 2 bad input, 3 the registry store failed.

Extract -> transform -> load:

* ``list_archive`` + ``archive_splits`` (``archive_splits``): only ``<ARCHIVE>/<exchange>/date=...``
  partitions of the version's window are listed, then cut into splits packed over the cores;
* ``tally_archive`` (``spark_tally``, this job's archive engine for ``replay.run.replay_versions``):
  each Python worker reads its splits and judges every line with the record engine
  (``replay.judge.ReplayJudge`` over ``RecordChecker``, compiled once per worker), returning one tally
  per partition (``mapInArrow``); the driver adds them up;
* in-flight messages (``replay.run.broker_in_flight``, the non-destructive peek) are judged on the driver
  the same way;
* ``replay.run.conclude`` decides, ``record_result`` writes the evidence, the report goes to ``--report``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark import Broadcast
from pyspark.sql import SparkSession

from contract_platform import settings
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.checks import History
from contract_platform.evidence.registry import earlier_schemas
from contract_platform.replay.judge import ReplayPlan, Tally, judge_for
from contract_platform.replay.run import (
    InFlightOf,
    ReplayResult,
    ReplayTarget,
    TallyOf,
    broker_in_flight,
    missing_archive,
    record_result,
    replay_targets,
    replay_versions,
    replay_window,
)
from contract_platform.validation.bundle import CatalogBundle
from contract_platform.validation.reading import Split, line_batches
from spark_jobs.archive_splits import archive_splits, list_archive
from spark_jobs.hadoop_fs import path_exists
from spark_jobs.jobs import FINDINGS, JobRun, job_parser, run_job

__all__ = [
    "broker_in_flight",
    "main",
    "replay_archive",
    "replay_targets_on_spark",
    "run_replay",
    "spark_tally",
    "tally_archive",
    "tally_splits",
]

APP_NAME = "replay"


def tally_splits(batches: Iterable[pa.RecordBatch], *, catalog: Any, plan: ReplayPlan) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: split rows in, one row (the partition's tally as JSON) out."""
    bundle: CatalogBundle = catalog.value if hasattr(catalog, "value") else catalog
    judge = judge_for(bundle, plan)
    tally = Tally()
    for batch in batches:
        for row in batch.to_pylist():
            split = Split(row["split_index"], row["uri"], row["start"], row["length"], row["compressed"])
            for lines in line_batches(split):
                for line in lines:
                    judge.replay(line, tally)
    yield pa.RecordBatch.from_pydict({"tally": [tally.to_json()]})


def tally_archive(
    spark: SparkSession, archive: str, target: ReplayTarget, bundle: Broadcast[CatalogBundle], since: Any, until: Any
) -> Tally:
    """The tally of the window's date partitions of the target's exchange (no other partition is listed)."""
    folder = f"{archive.rstrip('/')}/{target.exchange}"
    total = Tally()
    if not path_exists(spark, folder):
        return total
    files = list_archive(spark, folder, since, until)
    if not files:
        return total
    _, splits = archive_splits(spark, files)
    body = partial(tally_splits, catalog=bundle, plan=target.plan)
    for row in splits.mapInArrow(body, "tally string").collect():
        total.merge(Tally.from_json(row["tally"]))
    return total


def spark_tally(spark: SparkSession) -> TallyOf:
    """This job's archive engine (``replay.run.TallyOf``): ``tally_archive`` on ``spark``, the catalogue
    broadcast once (at the first window that needs it) and shared by every target."""
    shipped: dict[str, Broadcast[CatalogBundle]] = {}  # bundle fingerprint -> its broadcast

    def tally_of(archive: str, target: ReplayTarget, bundle: CatalogBundle, since: Any, until: Any) -> Tally:
        if bundle.fingerprint not in shipped:
            shipped[bundle.fingerprint] = spark.sparkContext.broadcast(bundle)
        return tally_archive(spark, archive, target, shipped[bundle.fingerprint], since, until)

    return tally_of


def run_replay(
    spark: SparkSession,
    archive: str,
    catalog_dir: str,
    targets: Sequence[ReplayTarget],
    *,
    in_flight_of: InFlightOf | None = None,
    now: datetime | None = None,
) -> list[ReplayResult]:
    """Replay every target: archive window on Spark, in-flight messages on the driver, then the decision."""
    bundle = CatalogBundle.read(catalog_dir)
    return replay_window(targets, archive, bundle, spark_tally(spark), in_flight_of=in_flight_of, now=now)


def replay_archive(
    spark: SparkSession,
    archive: str,
    catalog_dir: str,
    catalog: Catalog,
    history_of: Callable[[Contract], History],
    *,
    only: Iterable[str] | None = None,
    in_flight: bool = True,
    broker_url: str | None = None,
    now: datetime | None = None,
) -> list[ReplayResult]:
    """This job's replay: the targets (``replay.run.replay_targets``), then ``replay_targets_on_spark``."""
    if not path_exists(spark, archive):
        raise missing_archive(archive)
    return replay_targets_on_spark(
        spark,
        archive,
        catalog_dir,
        replay_targets(catalog, history_of, only),
        in_flight=in_flight,
        broker_url=broker_url,
        now=now,
    )


def replay_targets_on_spark(
    spark: SparkSession,
    archive: str,
    catalog_dir: str,
    targets: Sequence[ReplayTarget],
    *,
    in_flight: bool = True,
    broker_url: str | None = None,
    now: datetime | None = None,
) -> list[ReplayResult]:
    """``replay.run.replay_versions`` of targets already chosen, with the archive on Spark (also
    ``contractctl check --replay --engine spark``, whose check chose them)."""
    if not path_exists(spark, archive):
        raise missing_archive(archive)
    return replay_versions(
        targets, archive, catalog_dir, spark_tally(spark), in_flight=in_flight, broker_url=broker_url, now=now
    )


def _parser() -> Any:
    parser = job_parser("replay", (__doc__ or "").splitlines()[0])
    parser.add_argument("archive", nargs="?", default=None, help="archive root (default: the platform's archive)")
    parser.add_argument("--report", default=None, help="write the JSON report here")
    parser.add_argument("--only", action="append", default=None, metavar="TYPE", help="replay only this messageType")
    parser.add_argument("--no-in-flight", action="store_true", help="do not read the broker's queues")
    return parser


def report_of(results: Sequence[ReplayResult]) -> dict[str, Any]:
    return {
        "ok": not any(r.decision.refuses for r in results),
        "results": [r.to_dict() for r in results],
        "problems": [p for r in results for p in r.replay_problems()],
        "lifted": [r.message_type for r in results if r.decision.lifts_breaking],
    }


def _replay(run: JobRun) -> int:
    args = run.args
    assert run.catalog is not None and run.catalog_dir is not None
    archive = run.reads(args.archive or str(settings.archive_dir()))
    registry = None
    if run.registry_url:
        from contract_platform.store import SqlRegistry

        registry = SqlRegistry.open(run.registry_url)
    try:
        targets = replay_targets(run.catalog, partial(earlier_schemas, registry), args.only)
        # No version narrowed its schema: nothing to replay, and no JVM to start for it.
        results = (
            replay_targets_on_spark(
                run.spark, archive, run.catalog_dir, targets, in_flight=not args.no_in_flight, now=datetime.now(UTC)
            )
            if targets
            else []
        )
        run.close()
        if registry is not None:
            for result in results:
                record_result(registry, result, run_id=args.run_id)
    finally:
        if registry is not None:
            registry.close()
    report = report_of(results)
    text = json.dumps(report)
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(text, encoding="utf-8")
    print(text)
    return FINDINGS if not report["ok"] else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job; return 0 (nothing refused), 1 (replay refused a version), 2 (bad input) or 3 (store failed)."""
    return run_job(APP_NAME, _parser(), _replay, argv)


if __name__ == "__main__":
    sys.exit(main())

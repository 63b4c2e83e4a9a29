"""Archive validation throughput, side by side with a bare read and a naive per-row jsonschema UDF.

    .venv/bin/python benchmarks/archive_validation.py [--messages 200000] [--master local[2]] [--repeat 3]

Generates two archives of the same mix (``--messages`` / 2 and ``--messages``; the catalogue's
valid fixtures with fresh ids and ~2% defects of every kind, gzipped JSON Lines, 2 dates), then,
in one Spark session, times for each size (median of ``--repeat`` runs, after a warm-up):

* ``bare``: ``spark.read.text(...).count()`` of the same files (the floor: reading only);
* ``jvm``: the honest limit of a validation that reads every field, all in the JVM: every record
  parsed (``from_json``), its ``body`` parsed with Spark 4's ``try_parse_json``, and a dozen
  envelope predicates over the result (``variant_get``), no Python per record. The job is reported
  as a multiple of it (``validate_over_jvm``) and as a fraction of its throughput;
* ``check``: reading and the job's record-level rules alone (``check_records(...).count()``);
* ``validate``: the whole job, ``run_validation`` (rules, duplicates and ordering, report, quarantine);

and once, on the smaller archive, ``naive``: a per-row Python UDF that parses with ``json`` and
validates with the ``jsonschema`` library (``EnvelopeValidator``, schemas compiled once per task).
Prints one JSON line of figures; nothing is asserted (see benchmarks/README.md for the targets).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.generate_archive import ArchiveSpec, GeneratedArchive, generate_archive  # noqa: E402

__all__ = ["main", "run_benchmark"]


def _seconds(action: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _bare_count(spark: Any, path: str) -> int:
    return int(spark.read.option("recursiveFileLookup", "true").text(path).count())


RECORD_DDL = (
    "exchange string, routingKey string, receivedAt string, redelivered boolean, "
    "properties struct<messageId: string, type: string, contentType: string, deliveryMode: int>, "
    "body string, bodyBase64 string"
)


def _jvm_pass(spark: Any, path: str) -> int:
    """Records failing any of a dozen envelope predicates, computed by Spark alone (the JVM pass)."""
    from pyspark.sql import functions as F

    record = F.from_json(F.col("value"), RECORD_DDL)
    body = F.try_parse_json(record["body"])

    def field(pointer: str, kind: str = "string") -> Any:
        return F.try_variant_get(body, pointer, kind)

    checks = [
        record.isNull(),
        body.isNull(),
        field("$.metadata.messageId").isNull(),
        field("$.metadata.messageType").isNull(),
        field("$.metadata.schemaVersion", "int").isNull(),
        field("$.metadata.occurredAt", "timestamp").isNull(),
        field("$.metadata.publishedAt", "timestamp").isNull(),
        field("$.metadata.producer").isNull(),
        field("$.metadata.correlationId").isNull(),
        field("$.payload", "string").isNull() & F.try_variant_get(body, "$.payload", "variant").isNull(),
        ~field("$.metadata.messageType").eqNullSafe(record["properties"]["type"]),
        F.coalesce(record["properties"]["contentType"], F.lit("")) != "application/json",
        F.octet_length(record["body"]) > 1_048_576,
        F.to_timestamp(record["receivedAt"]).isNull(),
    ]
    failed = checks[0]
    for check in checks[1:]:
        failed = failed | F.coalesce(check, F.lit(True))
    lines = spark.read.option("recursiveFileLookup", "true").text(path)
    return int(lines.where(failed).count())


def _check_count(spark: Any, path: str, catalog_dir: str) -> int:
    from spark_jobs.archive_splits import archive_splits, list_archive
    from spark_jobs.validate_archive import check_records

    _, splits = archive_splits(spark, list_archive(spark, path))
    return int(check_records(splits, catalog_dir).count())


def _naive_count(spark: Any, path: str, catalog_dir: str) -> int:
    """Invalid records by a per-row Python UDF: ``json`` + the ``jsonschema`` library, as one would first write it."""
    from pyspark.sql import functions as F

    def invalid(line):  # no type hints: Spark would take them for a pandas UDF
        import base64
        import json as stdlib_json

        from contract_platform.catalog import load_catalog
        from contract_platform.envelope import EnvelopeValidator

        cache = invalid.__dict__
        if "validator" not in cache:  # once per task: the closure is unpickled per task
            cache["validator"] = EnvelopeValidator(load_catalog(catalog_dir))
        try:
            record = stdlib_json.loads(line)
            body = record.get("body")
            if body is None:
                body = base64.b64decode(record["bodyBase64"]).decode("utf-8")
            document = stdlib_json.loads(body)
        except Exception:  # malformed: invalid
            return True
        if not isinstance(document, dict):
            return True
        _, issues = cache["validator"].issues(document)
        return bool(issues)

    udf = F.udf(invalid, "boolean")
    lines = spark.read.option("recursiveFileLookup", "true").text(path)
    return int(lines.where(udf("value")).count())


def _machine(spark: Any) -> dict[str, Any]:
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    import pyspark

    java = spark.sparkContext._jvm.System.getProperty("java.version")
    return {
        "cores": os.cpu_count(),
        "memory_gib": round(memory, 1),
        "python": platform.python_version(),
        "java": str(java),
        "pyspark": pyspark.__version__,
        "master": spark.sparkContext.master,
    }


def run_benchmark(
    spark: Any,
    *,
    messages: int,
    catalog_dir: str | Path = ROOT / "contracts",
    work_dir: str | Path | None = None,
    repeat: int = 3,
    naive_messages: int | None = None,
    compression: str = "gzip",
) -> dict[str, Any]:
    """Generate the archives, time bare / check / validate / naive, and return the figures."""
    from contract_platform.validation.request import ValidationRequest
    from spark_jobs.validate_archive import run_validation

    work = Path(work_dir or tempfile.mkdtemp(prefix="archive-validation-bench-"))
    catalog_dir = str(catalog_dir)
    sizes = sorted({max(1, messages // 2), messages})
    archives: dict[int, GeneratedArchive] = {}
    for size in sizes:
        spec = ArchiveSpec(messages=size, defect_rate=0.02, files_per_partition=4, compression=compression)
        archives[size] = generate_archive(work / f"archive-{size}", catalog_dir, spec)
    load_before = os.getloadavg()

    smallest = str(archives[sizes[0]].root)
    # warm-up: JVM, Python workers, compiled schemas
    run_validation(spark, ValidationRequest(smallest, catalog=catalog_dir))
    _bare_count(spark, smallest)
    _jvm_pass(spark, smallest)

    rows = []
    for size in sizes:
        archive = archives[size]
        path = str(archive.root)
        bare = _seconds(partial(_bare_count, spark, path), repeat)
        jvm = _seconds(partial(_jvm_pass, spark, path), repeat)
        check = _seconds(partial(_check_count, spark, path, catalog_dir), repeat)
        reports: list[Any] = []

        def validate(path: str = path, size: int = size, reports: list[Any] = reports) -> None:
            quarantine = work / f"quarantine-{size}"
            reports.append(run_validation(spark, ValidationRequest(path, catalog=catalog_dir, quarantine=quarantine)))

        seconds = _seconds(validate, repeat)
        report = reports[-1]
        if report.totals.records != archive.records:
            raise RuntimeError(f"validated {report.totals.records} records of {archive.records}")
        rows.append(
            {
                "messages": size,
                "records": archive.records,
                "files": len(archive.files),
                "bytes": archive.bytes,
                "line_bytes": report.figures.line_bytes,
                "invalid": report.totals.invalid,
                "bare_count_seconds": round(bare, 3),
                "jvm_pass_seconds": round(jvm, 3),
                "validate_over_jvm": round(seconds / jvm, 3),
                "fraction_of_jvm_throughput": round(jvm / seconds, 3),
                "jvm_records_per_second": round(archive.records / jvm),
                "check_seconds": round(check, 3),
                "validate_seconds": round(seconds, 3),
                "validate_records_per_second": round(archive.records / seconds),
                "validate_megabytes_per_second": round(report.figures.line_bytes / 1e6 / seconds, 2),
                "bare_records_per_second": round(archive.records / bare),
                "fraction_of_bare_throughput": round(bare / seconds, 3),
            }
        )

    naive_size = naive_messages or sizes[0]
    if naive_size not in archives:
        spec = ArchiveSpec(messages=naive_size, defect_rate=0.02, files_per_partition=4, compression=compression)
        archives[naive_size] = generate_archive(work / f"archive-{naive_size}", catalog_dir, spec)
    naive_archive = archives[naive_size]
    naive_seconds = _seconds(lambda: _naive_count(spark, str(naive_archive.root), catalog_dir), 1)
    naive_rps = naive_archive.records / naive_seconds
    largest = rows[-1]
    per_record = [row["validate_seconds"] / row["records"] for row in rows]
    return {
        "benchmark": "archive_validation",
        "date": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "machine": _machine(spark),
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        "compression": compression,
        "repeat": repeat,
        "sizes": rows,
        "naive_udf": {
            "messages": naive_archive.records,
            "seconds": round(naive_seconds, 3),
            "records_per_second": round(naive_rps),
        },
        "speedup_over_naive": round(largest["validate_records_per_second"] / naive_rps, 2),
        "cost_per_record_ratio_large_to_small": round(per_record[-1] / per_record[0], 3),
        "targets": {
            "half_of_bare_throughput": largest["fraction_of_bare_throughput"] >= 0.5,
            "ten_times_naive": largest["validate_records_per_second"] >= 10 * naive_rps,
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000, help="messages in the larger archive")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per measure (the median is reported)")
    parser.add_argument("--naive-messages", type=int, default=None, help="archive size for the naive UDF")
    parser.add_argument("--compression", choices=("gzip", "plain", "mixed"), default="gzip")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--catalog", type=Path, default=ROOT / "contracts")
    args = parser.parse_args(argv)

    from spark_jobs.session import local_session

    conf = {"spark.ui.showConsoleProgress": "false", "spark.ui.enabled": "false"}
    with local_session("archive-validation-benchmark", args.master, conf) as spark:
        spark.sparkContext.setLogLevel("ERROR")
        figures = run_benchmark(
            spark,
            messages=args.messages,
            catalog_dir=args.catalog,
            work_dir=args.work_dir,
            repeat=args.repeat,
            naive_messages=args.naive_messages,
            compression=args.compression,
        )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())

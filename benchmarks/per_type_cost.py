"""The fixed cost per message type of the two daily evidence jobs, at 1, 10 and 100 types, as whole processes.

    .venv/bin/python benchmarks/per_type_cost.py [--types 1 10 100] [--per-type 100] [--spark-gx-up-to 10]

Every daily run of ``envelope_quality`` and ``topic_archive_validation`` judges each type of the catalogue that has
traffic, and pays what a type costs whatever its traffic. For each size ``n`` of ``--types`` this generates a
catalogue of ``n`` contracts (``benchmarks/estate.generate_catalog``) and an archive of ``--per-type`` valid
envelopes of each (``benchmarks/generate_archive.generate_archive``, plain JSON Lines, one day), then runs, each
as a fresh process the way the DAGs' ``spark-submit`` runs them:

* ``quality``: ``spark_jobs/envelope_quality.py ARCHIVE --catalog C --gx-root G --no-fail-on-findings`` with a new
  Great Expectations folder: GX judges a small window in-process on pandas (``quality.runner.choose_engine``);
* ``quality_spark``: the same with ``--in-process-rows 0``, GX on Spark whatever the size (only up to
  ``--spark-gx-up-to`` types: some twenty Spark jobs per type make 100 types take many minutes on two cores);
* ``quality_again``: ``quality`` once more on the same GX folder: the Data Docs render only this run's results
  and no suite whose expectations did not change;
* ``validate``: ``spark_jobs/validate_archive.py ARCHIVE --catalog C --report R --no-fail-on-findings``.

Wall and CPU seconds are those of the process and every process it starts, the JVM and its Python workers
included (``benchmarks/fixed_cost.measure``: this process becomes their reaper). The per-type cost is the
difference between two sizes over the difference in types. Prints one JSON line (and each size's figures to stderr
as they come); nothing is asserted (benchmarks/README.md has the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.estate import generate_catalog  # noqa: E402
from benchmarks.fixed_cost import _become_subreaper, measure  # noqa: E402
from benchmarks.generate_archive import ArchiveSpec, generate_archive  # noqa: E402

__all__ = ["main"]


def _estate(work: Path, types: int, per_type: int) -> tuple[Path, Path]:
    """(catalogue, archive) of ``types`` generated contracts with ``per_type`` valid envelopes each."""
    catalog = work / "contracts"
    names = generate_catalog(catalog, types)
    archive = work / "archive"
    day = datetime.now(UTC).date().isoformat()
    spec = ArchiveSpec(
        messages=types * per_type,
        defect_rate=0.0,
        message_types=names,
        dates=(day,),
        files_per_partition=1,
        compression="plain",
    )
    generate_archive(archive, catalog, spec)
    return catalog, archive


def _job(name: str) -> list[str]:
    return [sys.executable, str(ROOT / "spark_jobs" / f"{name}.py")]


def _per_type(figures: dict[str, dict[str, Any]], measure_name: str) -> dict[str, Any]:
    """Seconds per type between consecutive sizes that both ran ``measure_name``."""
    sizes = sorted(int(n) for n, found in figures.items() if measure_name in found)
    steps = {}
    for low, high in zip(sizes, sizes[1:], strict=False):
        a, b = figures[str(low)][measure_name], figures[str(high)][measure_name]
        steps[f"{low}->{high}"] = {
            "wall": round((b["wall"] - a["wall"]) / (high - low), 3),
            "cpu": round((b["cpu"] - a["cpu"]) / (high - low), 3),
        }
    return steps


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--types", type=int, nargs="+", default=[1, 10, 100], help="catalogue sizes to measure")
    parser.add_argument("--per-type", type=int, default=100, help="envelopes of each type in the archive")
    parser.add_argument(
        "--spark-gx-up-to", type=int, default=10, help="run GX on Spark (quality_spark) up to this many types"
    )
    args = parser.parse_args(argv)
    subreaper = _become_subreaper()
    env = {k: v for k, v in os.environ.items() if k != "CONTRACT_REGISTRY_URL"}  # no evidence recorded
    env["PYSPARK_PYTHON"] = sys.executable
    figures: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="per-type-cost-") as scratch:
        for types in args.types:
            work = Path(scratch) / str(types)
            catalog, archive = _estate(work, types, args.per_type)
            quality = [*_job("envelope_quality"), str(archive), "--catalog", str(catalog), "--no-fail-on-findings"]
            found: dict[str, Any] = {"load_before": round(os.getloadavg()[0], 2)}
            found["quality"] = measure([*quality, "--gx-root", str(work / "gx")], env=env)
            found["quality_again"] = measure([*quality, "--gx-root", str(work / "gx")], env=env)
            if types <= args.spark_gx_up_to:
                spark_gx = [*quality, "--gx-root", str(work / "gx-spark"), "--in-process-rows", "0"]
                found["quality_spark"] = measure(spark_gx, env=env)
            validate = [*_job("validate_archive"), str(archive), "--catalog", str(catalog)]
            found["validate"] = measure(
                [*validate, "--report", str(work / "report.json"), "--no-fail-on-findings"], env=env
            )
            figures[str(types)] = found
            print(json.dumps({str(types): found}), file=sys.stderr, flush=True)  # each size as it is measured
            shutil.rmtree(work, ignore_errors=True)
    names = ("quality", "quality_again", "quality_spark", "validate")
    print(
        json.dumps(
            {
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "cpu_of_jvm": subreaper},
                "per_type_envelopes": args.per_type,
                "sizes": figures,
                "per_type_seconds": {name: _per_type(figures, name) for name in names},
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

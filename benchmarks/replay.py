"""Replay time against archive validation of the same archive (docs/replay.md; target: replay <= 1.5x).

    .venv/bin/python benchmarks/replay.py [--messages 100000] [--master local[2]] [--repeat 3]

Generates one archive of ``order.order-created.v1`` traffic (the catalogue's valid fixtures with fresh
ids, no defects, gzipped JSON Lines, 2 dates: ``benchmarks/generate_archive.py``), then in one Spark
session times (median of ``--repeat`` runs, after a warm-up):

* ``validate``: archive validation of the whole archive (``validate_archive.run_validation``);
* ``check``: its record-level rules alone (``check_records(...).count()``), the part replay shares;
* ``replay``: replay of the same records against a candidate whose ``orderId`` pattern is stricter
  (``spark_jobs.replay.run_replay``, archive only: no broker).

Prints one JSON line of figures, ``replay_over_validate`` and ``replay_over_check`` among them; nothing
is asserted (benchmarks/README.md#replay holds the figures).
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

from benchmarks.archive_validation import _seconds  # noqa: E402
from benchmarks.generate_archive import ArchiveSpec, generate_archive  # noqa: E402

__all__ = ["main", "run_benchmark"]

ORDER = "order.order-created.v1"
DATES = ("2026-07-01", "2026-07-02")


def _candidate(catalog_dir: Path, target: Path) -> tuple[Path, dict[str, Any]]:
    """A copy of the catalogue whose orderId pattern is stricter; and the schema it replaces."""
    shutil.copytree(catalog_dir, target)
    schema_file = target / "order" / "order-created" / "v1" / "payload.schema.json"
    old = json.loads(schema_file.read_text(encoding="utf-8"))
    new = json.loads(json.dumps(old))
    new["properties"]["orderId"]["pattern"] = "^ord-[0-9]{5,}$"
    schema_file.write_text(json.dumps(new), encoding="utf-8")
    return target, old


def run_benchmark(spark: Any, work: Path, messages: int, repeat: int) -> dict[str, Any]:
    from contract_platform.catalog import load_catalog
    from contract_platform.validation.request import ValidationRequest
    from spark_jobs import replay as replay_job
    from spark_jobs import validate_archive as job

    catalog_dir = ROOT / "contracts"
    spec = ArchiveSpec(messages=messages, defect_rate=0.0, message_types=(ORDER,), dates=DATES, seed=3)
    archive = generate_archive(work / "archive", load_catalog(catalog_dir), spec)
    candidate_dir, old = _candidate(catalog_dir, work / "candidate")
    candidate = load_catalog(candidate_dir)
    targets = replay_job.replay_targets(
        candidate, lambda c: [("1.2.0", old)] if c.message_type == ORDER else [], [ORDER]
    )
    now = datetime.fromisoformat(DATES[-1]).replace(hour=12, tzinfo=UTC)
    root = str(archive.root)
    files = job.list_archive(spark, root)
    _, splits = job.archive_splits(spark, files)

    def validate() -> None:
        job.run_validation(spark, ValidationRequest(root, catalog=catalog_dir))

    def check() -> None:
        job.check_records(splits, catalog_dir).count()

    def replay() -> None:
        (result,) = replay_job.run_replay(spark, root, str(candidate_dir), targets, now=now)
        assert result.archive.replayed == archive.records, (result.archive.replayed, archive.records)

    for action in (validate, check, replay):  # warm-up: JVM, Python workers, compiled schemas
        action()
    figures = {
        name: _seconds(action, repeat)
        for name, action in (("validate", validate), ("check", check), ("replay", replay))
    }
    return {
        "records": archive.records,
        "bytes": archive.bytes,
        "files": len(archive.files),
        **{f"{name}_s": round(value, 2) for name, value in figures.items()},
        "replay_over_validate": round(figures["replay"] / figures["validate"], 2),
        "replay_over_check": round(figures["replay"] / figures["check"], 2),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    from spark_jobs.session import local_session

    with (
        local_session("benchmark-replay", args.master) as spark,
        tempfile.TemporaryDirectory(prefix="replay-benchmark-") as folder,
    ):
        figures = run_benchmark(spark, Path(folder), args.messages, args.repeat)
    figures.update(
        machine=f"{platform.machine()} {os.cpu_count()} cpus",
        python=platform.python_version(),
        master=args.master,
        date=datetime.now(UTC).date().isoformat(),
        load=os.getloadavg(),
    )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())

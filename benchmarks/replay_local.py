"""``contractctl check --replay`` as a whole process, in-process against Spark (docs/replay.md#engines).

    .venv/bin/python benchmarks/replay_local.py [--messages 10000] [--runs 3] [--engines local,spark]
        [--compression gzip|plain]

Generates one archive of three types' traffic (``order.order-created.v1``, ``quote.quote-approved.v1``,
``order.create-order.v1``: the catalogue's valid fixtures with fresh ids, no defects, gzipped JSON Lines
(plain ones, as the archiver writes them, with ``--compression plain``), yesterday and today, ``benchmarks/generate_archive.py``), a catalogue whose ``orderId`` pattern is
stricter and a registry holding an earlier version of each of the three, so each is a changed version
replay reads. Then runs ``contractctl check CATALOG --replay ARCHIVE --no-in-flight --format json
--engine E`` as a fresh process, the engines taking turns, and prints one JSON line: the wall seconds
of each run and their median per engine, and the messages each engine replayed (they must agree).
Target: under 5 s wall in-process for 10,000 messages. Nothing is asserted beyond the agreement
(benchmarks/README.md#replay holds the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.generate_archive import ArchiveSpec, generate_archive  # noqa: E402
from tests.support.replay import check_replay_args  # noqa: E402

__all__ = ["main", "prepare", "run_check"]

TYPES = ("order.order-created.v1", "quote.quote-approved.v1", "order.create-order.v1")


def prepare(work: Path, messages: int, compression: str = "gzip") -> tuple[Path, Path, str, int]:
    """(catalogue, archive, registry URL, archive bytes): three changed versions and their traffic."""
    from tests.support.replay import ORDER, tighten

    from contract_platform.catalog import load_catalog
    from contract_platform.store import SqlRegistry

    catalog_dir, old = tighten(Path(shutil.copytree(ROOT / "contracts", work / "contracts")))
    today = datetime.now(UTC).date()
    dates = ((today - timedelta(days=1)).isoformat(), today.isoformat())
    spec = ArchiveSpec(
        messages=messages, defect_rate=0.0, message_types=TYPES, dates=dates, compression=compression, seed=5
    )
    archive = generate_archive(work / "archive", load_catalog(ROOT / "contracts"), spec)
    url = f"sqlite:///{work / 'registry.db'}"
    registry = SqlRegistry.open(url)
    try:
        catalog = load_catalog(catalog_dir)
        for message_type in TYPES:
            contract = catalog.get(message_type)
            assert contract is not None
            if message_type == ORDER:
                registry.snapshot_schema(ORDER, "1.2.0", old)
            else:  # the same schema under an earlier version: a changed version replay confirms
                registry.snapshot_schema(message_type, "1.0.0-rc.1", contract.payload_schema)
    finally:
        registry.close()
    return catalog_dir, archive.root, url, archive.bytes


def run_check(catalog_dir: Path, archive: Path, url: str, engine: str, work: Path) -> tuple[float, dict[str, int]]:
    """Wall seconds of one ``contractctl check --replay`` process; messages replayed per version."""
    command = [
        str(Path(sys.executable).with_name("contractctl")),
        *check_replay_args(catalog_dir, url, archive),
        "--engine",
        engine,
    ]
    environment = {**os.environ, "CONTRACT_PLATFORM_HOME": str(work / "home")}
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=work, check=False)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"contractctl check --engine {engine} exited {done.returncode}:\n{done.stderr}")
    report = json.loads(done.stdout)
    return seconds, {r["messageType"]: r["figures"]["replayed"] for r in report["replay"]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engines", default="local,spark", help="comma-separated, run in turns")
    parser.add_argument("--compression", choices=("gzip", "plain"), default="gzip")
    args = parser.parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    walls: dict[str, list[float]] = {engine: [] for engine in engines}
    replayed: dict[str, dict[str, int]] = {}
    load: list[float] = []
    with tempfile.TemporaryDirectory(prefix="replay-local-benchmark-") as folder:
        work = Path(folder)
        catalog_dir, archive, url, size = prepare(work, args.messages, args.compression)
        for _ in range(args.runs):
            for engine in engines:
                load.append(os.getloadavg()[0])
                seconds, counts = run_check(catalog_dir, archive, url, engine, work)
                walls[engine].append(round(seconds, 2))
                replayed[engine] = counts
    counts_seen = list(replayed.values())
    if any(counts != counts_seen[0] for counts in counts_seen):
        raise SystemExit(f"the engines replayed different messages: {replayed}")
    figures: dict[str, Any] = {
        "messages": args.messages,
        "compression": args.compression,
        "archive_bytes": size,
        "replayed": counts_seen[0] if counts_seen else {},
        **{f"{engine}_s": walls[engine] for engine in engines},
        **{f"{engine}_median_s": round(statistics.median(walls[engine]), 2) for engine in engines},
        "machine": f"{platform.machine()} {os.cpu_count()} cpus",
        "python": platform.python_version(),
        "date": datetime.now(UTC).isoformat(timespec="minutes"),
        "load_before_runs": [round(value, 1) for value in load],
    }
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())

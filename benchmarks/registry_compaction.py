"""What compacting an SQLite registry after evidence pruning costs, and what it gives back.

    .venv/bin/python benchmarks/registry_compaction.py [--rows 50000] [--figures-bytes 1000] [--keep-days 30]

Fills a fresh SQLite registry (``SqlRegistry.add_evidence``, in batches of one transaction each) with ``--rows``
evidence rows spread over 365 days for 20 message types, then runs ``housekeeping.prune_evidence`` with a window of
``--keep-days`` (the store is then more than ``housekeeping.MIN_FREE_RATIO`` free, so it is compacted), and a second
time a day later (a day's pruning: nothing to compact). Prints one JSON line: the store's bytes on disk (file and
WAL) before and after, the rows removed, and the seconds of the first prune (DELETE, then VACUUM and the WAL
checkpoint) and of the daily one. Nothing is asserted; benchmarks/README.md has the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def footprint(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(REPO / "plugins"))
    from contract_platform import housekeeping as hk
    from contract_platform.store import EvidenceKind, SqlRegistry, Verdict

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--figures-bytes", type=int, default=1_000, help="size of each row's figures")
    parser.add_argument("--keep-days", type=int, default=30)
    args = parser.parse_args(argv)

    now = datetime(2027, 1, 1, tzinfo=UTC)
    types = [f"bench.type-{n:02d}.v1" for n in range(20)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "registry.db"
        with SqlRegistry.open(f"sqlite:///{path}") as registry:
            started = time.perf_counter()
            for n in range(args.rows):
                at = now - timedelta(days=365 * (args.rows - n) / args.rows)
                registry.add_evidence(types[n % len(types)], contract_version="1.0.0", kind=EvidenceKind.REPLAY,
                                      verdict=Verdict.PASS, figures={"pad": "x" * args.figures_bytes},
                                      collected_at=at)  # fmt: skip
            filled = time.perf_counter() - started
            grown = footprint(path)

            started = time.perf_counter()
            first = hk.prune_evidence(registry, now=now, keep=timedelta(days=args.keep_days))
            first_seconds = time.perf_counter() - started
            shrunk = footprint(path)

            started = time.perf_counter()
            daily = hk.prune_evidence(registry, now=now + timedelta(days=1), keep=timedelta(days=args.keep_days))
            daily_seconds = time.perf_counter() - started
            level = footprint(path)
    print(json.dumps({
        "rows": args.rows, "figuresBytes": args.figures_bytes, "keepDays": args.keep_days,
        "fillSeconds": round(filled, 1), "bytesBefore": grown, "firstPrune": {"removed": first.removed,
        "compactedBytes": first.bytes, "seconds": round(first_seconds, 2), "bytesAfter": shrunk},
        "dailyPrune": {"removed": daily.removed, "compactedBytes": daily.bytes, "seconds": round(daily_seconds, 3),
                       "bytesAfter": level},
    }))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

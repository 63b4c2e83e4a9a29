"""A year of operation on a small estate, with time shifted: does anything the platform keeps grow without bound?

    .venv/bin/python benchmarks/year_soak.py [--days 365] [--every 30] [--out DIR] [--json]

The catalogue's contracts (``contracts/``) are the estate. Each simulated day writes what the platform writes in a day,
through its own writers where they are cheap, and otherwise with its layout:

* the topic archive: one gzipped partition per exchange (``archive_layout``), and the incremental validation state
  of that day (``<data>/state/archive-validation/<archive>/seen|last/date=D/``);
* evidence in the registry store (``SqlRegistry.add_evidence``, SQLite): archive validation and envelope quality per
  contract, a retirement audit per contract each week;
* Great Expectations results (ones GX reads: housekeeping builds the Data Docs index again from them) and Data Docs
  pages (one per contract and run, GX's folder layout), step logs (the Airflow task logs of the day's DAG runs, the
  CLI's Spark logs), per-run reports, a quarantine folder, and the retirement audit's timestamped copies; each file
  dated that day.

Then it runs, with that day's ``now``, what the platform schedules daily: ``retention.apply_archive_retention`` (the
``archive_retention`` DAG) and ``housekeeping.housekeep`` (the ``housekeeping`` DAG), every retention at its default.
It prints the data folder's size (by area), the store's rows and the store file's size every ``--every`` days. With
``--airflow-clean-every N`` (default 14), Airflow's metadata database is simulated too: a SQLite one beside the data
folder, migrated by ``airflow db migrate``, gets each day's DAG runs, task instances and log-table events for the
four daily DAGs, and ``housekeeping.clean_airflow_metadata`` (``airflow db clean``) runs every N simulated days
(the DAG runs it daily; each run is a 2-3 s process, so the soak runs it less often); its size and rows are printed.
Nothing is asserted; benchmarks/README.md has the figures.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
START = datetime(2027, 1, 1, 22, 0, tzinfo=UTC)
AREAS = ("archive", "state", "gx", "logs", "airflow", "reports", "migrations", "quarantine", "docs")
DAILY_TASKS = {
    "topic_archive_validation": ("archive", "validate", "record"),
    "envelope_quality": ("prepare", "run_suite", "record"),
    "archive_retention": ("apply_retention",),
    "housekeeping": ("prune_files", "prune_evidence", "clean_airflow_metadata"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--every", type=int, default=30, help="print the figures every N simulated days")
    parser.add_argument("--out", type=Path, help="the data folder (default: a temporary one, removed)")
    parser.add_argument("--json", action="store_true", help="one JSON line per sample instead of a table")
    parser.add_argument("--airflow-clean-every", type=int, default=14, metavar="DAYS",
                        help="simulate Airflow's metadata and clean it every DAYS days (0: not simulated; default 14)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.out is not None:
        soak(args.out, args.days, args.every, args.json, airflow_clean_every=args.airflow_clean_every)
        return 0
    with tempfile.TemporaryDirectory(prefix="year-soak-") as folder:
        soak(Path(folder) / "data", args.days, args.every, args.json, airflow_clean_every=args.airflow_clean_every)
    return 0


def soak(data: Path, days: int, every: int, as_json: bool, *, airflow_clean_every: int = 0) -> list[dict[str, Any]]:
    """Run ``days`` simulated days in the data folder ``data``; the figures sampled every ``every`` days. With
    ``airflow_clean_every``, an Airflow metadata database (SQLite, beside ``data``) gets each day's runs and is
    cleaned by ``housekeeping.clean_airflow_metadata`` every that many days."""
    data.mkdir(parents=True, exist_ok=True)
    metadata = _AirflowMetadata(data.parent / "airflow-metadata") if airflow_clean_every else None
    os.environ["CONTRACT_PLATFORM_HOME"] = str(data)  # the retention's default validation state lives below it
    for name in [n for n in os.environ if n.startswith("CONTRACT_RETENTION_")]:
        del os.environ[name]  # the defaults
    from contract_platform.archive_layout import partition_name, validation_state_dir
    from contract_platform.catalog import load_catalog
    from contract_platform.housekeeping import housekeep
    from contract_platform.retention import apply_archive_retention
    from contract_platform.store import SqlRegistry

    catalog = load_catalog(REPO / "contracts")
    contracts = sorted(catalog, key=lambda c: c.message_type)
    exchanges = sorted({c.transport.exchange for c in contracts})
    archive = data / "archive"
    state = validation_state_dir(archive, data)
    blobs = _Blobs()
    started, cpu = time.perf_counter(), time.process_time()
    samples = []
    with SqlRegistry.open(f"sqlite:///{data / 'registry.db'}") as store:
        for day in range(days):
            now = START + timedelta(days=day)
            run = f"scheduled__{now.date().isoformat()}T00_00_00_00_00"
            for exchange in exchanges:
                _put(archive / exchange / partition_name(now.date()) / f"h-1-{day}-000001.jsonl.gz", blobs.archive, now)
            for kind in ("seen", "last"):
                _put(state / kind / partition_name(now.date()) / "part-00000.parquet", blobs.state[kind], now)
            for contract in contracts:
                _daily_evidence(store, contract, now, run, weekly_audit=day % 7 == 6)
                _gx_run(data / "gx", contract.message_type, now, blobs)
                if day % 7 == 6:
                    stamp = now.strftime("%Y%m%dT%H%M%SZ")
                    folder = data / "docs" / "retirement" / contract.message_type
                    for name in (f"{stamp}.json", f"{stamp}.md", "latest.json", "latest.md"):
                        _put(folder / name, blobs.audit, now)
            _logs_and_reports(data, run, now, blobs)
            apply_archive_retention(catalog, archive, now=now, holds={}, registry=store, run_id=run)
            housekeep(data, now=now, registry=store)
            if metadata is not None:
                metadata.add_day(now)
                if (day + 1) % airflow_clean_every == 0:
                    metadata.clean(now)
            if (day + 1) % every == 0 or day + 1 == days:
                samples.append({**_sample(data, day + 1), **(metadata.sample() if metadata else {})})
                _show(samples[-1], as_json, first=len(samples) == 1)
    elapsed = time.perf_counter() - started
    print(f"# {days} simulated days in {elapsed:.0f} s wall, {time.process_time() - cpu:.0f} s CPU", file=sys.stderr)
    return samples


class _Blobs:
    """Bytes of realistic size, made once (the sizes of a main job's outputs, rounded)."""

    def __init__(self) -> None:
        rng = random.Random(7)
        lines = [json.dumps({"id": rng.getrandbits(64), "body": rng.randbytes(120).hex()}) for _ in range(400)]
        self.archive = gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0)
        self.state = {"seen": rng.randbytes(24_000), "last": rng.randbytes(3_000)}
        self.gx_result, self.gx_page = b"{}" + b" " * 12_000, b"<html>" + b" " * 40_000
        self.log, self.spark_log, self.report = b"l" * 20_000, b"s" * 60_000, b"{}" + b" " * 6_000
        self.quarantine, self.audit = rng.randbytes(8_000), b"{}" + b" " * 4_000


class _AirflowMetadata:
    """Airflow's metadata database (SQLite, migrated by ``airflow db migrate``) with each day's DAG runs, task
    instances and log-table events written as Airflow writes them, cleaned by the platform's own function."""

    def __init__(self, home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.file = home / "airflow.db"
        self.env = {**os.environ, "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.file}"}  # fmt: skip
        airflow = Path(sys.executable).with_name("airflow")
        done = subprocess.run(
            [str(airflow), "db", "migrate"], env=self.env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise SystemExit(f"airflow db migrate failed: {done.stderr[-2000:]}")

    def add_day(self, now: datetime) -> None:
        at = now.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ")
        with sqlite3.connect(self.file) as db:
            for dag_id, tasks in DAILY_TASKS.items():
                run = f"scheduled__{now.date().isoformat()}T00:00:00+00:00"
                db.execute("INSERT INTO dag_run (dag_id, run_id, run_type, run_after, logical_date, queued_at, start_date, "
                           "end_date, state) VALUES (?, ?, 'scheduled', ?, ?, ?, ?, ?, 'success')",
                           (dag_id, run, at, at, at, at, at))  # fmt: skip
                for task_id in tasks:
                    db.execute("INSERT INTO task_instance (id, task_id, dag_id, run_id, try_number, pool, pool_slots, "
                               "start_date, end_date, state, hostname, operator) VALUES (?, ?, ?, ?, 1, 'default_pool', "
                               "1, ?, ?, 'success', 'worker-1', '@task')",
                               (uuid.uuid4().hex, task_id, dag_id, run, at, at))  # fmt: skip
                    for event in ("running", "success"):
                        db.execute("INSERT INTO log (dttm, dag_id, task_id, run_id, event) VALUES (?, ?, ?, ?, ?)",
                                   (at, dag_id, task_id, run, event))  # fmt: skip

    def clean(self, now: datetime) -> None:
        from contract_platform import housekeeping as hk

        hk.clean_airflow_metadata(now=now, keep=hk.retention(hk.Kind.AIRFLOW_METADATA), environ=self.env)

    def sample(self) -> dict[str, Any]:
        with sqlite3.connect(f"file:{self.file}?mode=ro", uri=True) as db:
            rows = {
                t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("dag_run", "task_instance", "log")
            }
        return {"airflowBytes": sum(_size(p) for p in self.file.parent.glob("airflow.db*")), "airflowRows": rows}


def _put(path: Path, content: bytes, at: datetime) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    stamp = at.timestamp()
    for touched in (path, path.parent):
        os.utime(touched, (stamp, stamp))


def _daily_evidence(store: Any, contract: Any, now: datetime, run: str, *, weekly_audit: bool) -> None:
    from contract_platform.store import EvidenceKind, Verdict

    kinds = [EvidenceKind.ARCHIVE_VALIDATION, EvidenceKind.ENVELOPE_QUALITY]
    if weekly_audit:
        kinds.append(EvidenceKind.RETIREMENT_AUDIT)
    for kind in kinds:
        store.add_evidence(contract.message_type, contract_version=contract.version, kind=kind, verdict=Verdict.PASS,
                           figures={"records": 400, "invalid": 0}, run_id=run, collected_at=now)  # fmt: skip


def _gx_run(gx: Path, message_type: str, now: datetime, blobs: _Blobs) -> None:
    suite = Path("envelope_quality", *message_type.split("."))
    stamp = now.strftime("%Y%m%dT%H%M%S.000000Z")
    name = f"envelope_quality.{message_type}-envelopes"
    result = json.dumps({"id": None, "meta": {"run_id": {"run_name": "__none__", "run_time": now.isoformat()}},
                         "results": [], "statistics": {}, "success": True, "suite_name": f"envelope_quality.{message_type}",
                         "suite_parameters": {}}).encode()  # fmt: skip
    result += b" " * max(0, len(blobs.gx_result) - len(result))  # what GX writes, readable when the index is built
    _put(gx / "uncommitted" / "validations" / suite / "__none__" / stamp / f"{name}.json", result, now)
    site = gx / "uncommitted" / "data_docs" / "local_site"
    _put(site / "validations" / suite / "__none__" / stamp / f"{name}.html", blobs.gx_page, now)
    _put(site / "index.html", blobs.gx_page, now)


def _logs_and_reports(data: Path, run: str, now: datetime, blobs: _Blobs) -> None:
    for dag_id, tasks in DAILY_TASKS.items():
        for task_id in tasks:
            _put(data / "airflow" / "logs" / f"dag_id={dag_id}" / f"run_id={run}" / f"task_id={task_id}" /
                 "attempt=1.log", blobs.log, now)  # fmt: skip
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    for verb in ("validate-archive", "quality"):
        _put(data / "logs" / "cli" / f"{verb}-{stamp}-4242.log", blobs.spark_log, now)
    for job in ("archive-validation", "envelope_quality"):
        _put(data / "reports" / job / f"{run}.json", blobs.report, now)
    _put(data / "migrations" / "billing.invoice-issued.v1" / f"parity-{run}.json", blobs.report, now)
    _put(data / "quarantine" / run / "part-00000.txt", blobs.quarantine, now)


def _sample(data: Path, day: int) -> dict[str, Any]:
    sizes = {area: _size(data / area) for area in AREAS}
    store_files = sum(_size(p) for p in data.glob("registry.db*"))
    with sqlite3.connect(f"file:{data / 'registry.db'}?mode=ro", uri=True) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'cp_%'")]
        rows = {t: db.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}
    return {
        "day": day,
        "dataBytes": sum(sizes.values()) + store_files,
        "areas": sizes,
        "storeBytes": store_files,
        "evidenceRows": rows.get("cp_evidence", 0),
        "storeRows": sum(rows.values()),
        "files": sum(1 for _ in _files(data)),
    }


def _show(sample: dict[str, Any], as_json: bool, *, first: bool) -> None:
    if as_json:
        print(json.dumps(sample), flush=True)
        return
    if first:
        print(f"{'day':>4} {'data MiB':>9} {'files':>6} {'store MiB':>9} {'evidence':>8} {'rows':>6} {'af MiB':>6} "
              f"{'af runs':>7} {'af tis':>6} {'af log':>6}  " + " ".join(f"{a[:8]:>8}" for a in AREAS))  # fmt: skip
    mib, af = 2**20, sample.get("airflowRows", {})
    print(f"{sample['day']:>4} {sample['dataBytes'] / mib:>9.1f} {sample['files']:>6} {sample['storeBytes'] / mib:>9.2f} "
          f"{sample['evidenceRows']:>8} {sample['storeRows']:>6} {sample.get('airflowBytes', 0) / mib:>6.2f} "
          f"{af.get('dag_run', '-'):>7} {af.get('task_instance', '-'):>6} {af.get('log', '-'):>6}  "
          + " ".join(f"{sample['areas'][a] / mib:>8.1f}" for a in AREAS), flush=True)  # fmt: skip


def _files(root: Path) -> Iterator[Path]:
    for here, _, names in os.walk(root):
        for name in names:
            yield Path(here) / name


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.lstat().st_size for p in _files(path))


if __name__ == "__main__":
    raise SystemExit(main())

"""``contractctl housekeeping [--dry-run] [--json]``: what the ``housekeeping`` DAG does, by hand
(docs/deploy.md#what-the-platform-keeps).

The DAG's three tasks, in order, through the same function (``housekeeping.run_task``): the files of the data
folder, Airflow's task logs and the class-data cache; the registry store's evidence rows (then an SQLite store
compacted when a quarter or more of it is free); Airflow's metadata (``airflow db clean``). Every retention setting
is read before anything is removed, so a bad one stops the run at once, named. ``--dry-run`` removes nothing and
says, per kind, how many files, folders or rows would go and how many bytes (never what is in them); for Airflow's
metadata it runs ``airflow db clean --dry-run``. Where Airflow is not installed beside ``contractctl``, its metadata
is left alone and the output says so.

Exit codes: 0 done; 2 a bad ``CONTRACT_RETENTION_*`` setting; 3 a folder that cannot be emptied, the registry store
unreachable, or ``airflow db clean`` failing.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

from contract_platform.cli.common import add_format_argument
from contract_platform.cli.output import emit_json, out, table

HELP = "prune what the platform keeps past its retention, as the housekeeping DAG does (--dry-run: only say what)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="say what would be removed (kinds, counts, bytes)")
    parser.add_argument("--registry", default=None, help="registry store URL (default $CONTRACT_REGISTRY_URL)")
    parser.add_argument(
        "--airflow-logs",
        type=Path,
        default=None,
        help="Airflow's task log folder (default: its [logging] base_log_folder, asked of the airflow command)",
    )
    add_format_argument(parser)
    parser.add_argument("--json", dest="format", action="store_const", const="json", help="same as --format json")


def run(args: argparse.Namespace) -> int:
    from contract_platform import housekeeping as hk
    from contract_platform.store import SqlRegistry

    windows = hk.retentions()  # every setting checked before anything is removed
    now, dry_run = datetime.now(UTC), bool(args.dry_run)
    places = hk.Places.configured(airflow_logs=args.airflow_logs or hk.airflow_log_folder())
    pruned = list(hk.run_task(hk.Task.PRUNE_FILES, places, now=now, dry_run=dry_run))
    with SqlRegistry.open(args.registry) as registry:
        pruned += hk.run_task(hk.Task.PRUNE_EVIDENCE, places, now=now, registry=registry, dry_run=dry_run)
    if hk.airflow_installed():
        pruned += hk.run_task(hk.Task.CLEAN_AIRFLOW_METADATA, places, now=now, dry_run=dry_run)
    else:
        skipped = "skipped: Airflow is not installed beside contractctl (the housekeeping DAG cleans it)"
        before = now - windows[hk.Kind.AIRFLOW_METADATA]
        pruned.append(hk.Pruned(hk.Kind.AIRFLOW_METADATA, before, None, dry_run=dry_run, note=skipped))
    if args.format == "json":
        emit_json({"dryRun": dry_run, "pruned": [p.to_dict() for p in pruned]})
        return 0
    table(
        ["kind", "older than", "would remove" if dry_run else "removed", "bytes", "note"],
        [[str(p.kind), f"{p.before:%Y-%m-%d %H:%M}", "-" if p.removed is None else p.removed, p.bytes, p.note or "-"]
         for p in pruned],
    )  # fmt: skip
    count = sum(p.removed or 0 for p in pruned)
    size = sum(p.bytes for p in pruned if p.kind is not hk.Kind.EVIDENCE)
    if dry_run:
        out(f"dry run: {count} files, folders and rows ({size} bytes of files) would be removed; nothing was")
    else:
        out(f"removed {count} files, folders and rows ({size} bytes of files)")
    return 0

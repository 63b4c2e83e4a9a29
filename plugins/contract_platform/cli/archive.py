"""``contractctl archive``: drain ``archive.<exchange>`` queues into the topic archive (docs/design.md#archive-record)."""

from __future__ import annotations

import argparse
from pathlib import Path

from contract_platform import settings
from contract_platform.cli.common import add_catalog_argument, add_format_argument, load
from contract_platform.cli.output import emit_json, out, table
from contract_platform.errors import QueueMissing, UsageError

HELP = "drain archive.<exchange> queues into <root>/<exchange>/date=YYYY-MM-DD/*.jsonl"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--exchange",
        action="append",
        default=None,
        metavar="NAME",
        help="exchange to archive (repeatable; default: every exchange of the catalogue)",
    )
    parser.add_argument(
        "--root", type=Path, default=None, help="archive root (default $CONTRACT_ARCHIVE_DIR or <data>/archive)"
    )
    parser.add_argument(
        "--follow", action="store_true", help="run until SIGTERM/SIGINT instead of stopping when the queues are empty"
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=2.0,
        metavar="S",
        help="drain: stop once every queue has been empty this many seconds (default 2)",
    )
    add_catalog_argument(parser, positional=False)
    add_format_argument(parser)


def run(args: argparse.Namespace) -> int:
    from contract_platform.archiver import Archiver, ArchiverConfig

    exchanges = args.exchange or load(args.catalog).exchanges
    config = ArchiverConfig(
        root=args.root or settings.archive_dir(), exchanges=tuple(exchanges), idle_timeout=args.idle_timeout
    )
    try:
        report = Archiver(settings.rabbitmq_url(), config).run("follow" if args.follow else "drain")
    except QueueMissing as exc:  # a name that has no archive queue is bad input here
        raise UsageError(str(exc)) from exc
    if args.format == "json":
        emit_json(report.as_dict())
        return 0
    out(
        f"archived {report.total} records into {config.root} in {report.elapsed:.1f} s "
        f"({len(report.files)} files, {report.bytes} bytes, {report.redelivered} redelivered)"
    )
    table(["EXCHANGE", "RECORDS"], [[name, count] for name, count in report.records.items()])
    for path in report.repaired:
        out(f"repaired (partial last line removed): {path}")
    return 0

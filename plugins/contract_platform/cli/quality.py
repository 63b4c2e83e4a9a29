"""``contractctl quality``: the envelope quality suites over an archive, on a local SparkSession.

The same code as the ``envelope_quality`` Spark job (``spark_jobs/envelope_quality.py``), run
in-process through its ``quality`` entry point (``contract_platform.cli.on_spark``); nothing is
recorded in the registry. Exit 0 when every expectation meets its
threshold, 1 when any misses, 2 for bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from contract_platform import settings
from contract_platform.cli import on_spark
from contract_platform.cli.common import add_catalog_argument, add_format_argument
from contract_platform.cli.output import emit_json, out, table
from contract_platform.days import parse_day
from contract_platform.errors import UsageError

HELP = "envelope quality (Great Expectations) over an archive, per message type"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("archive", type=Path, help="archive root, exchange or date folder, or one .jsonl[.gz] file")
    add_catalog_argument(parser, positional=False)
    parser.add_argument("--gx-root", type=Path, default=None, help="Great Expectations folder (default <data>/gx)")
    parser.add_argument("--since", default=None, metavar="YYYY-MM-DD", help="only envelopes received from then on")
    add_format_argument(parser)
    parser.add_argument(
        "--verbose", action="store_true", help="print the path of the Spark and JVM log (kept under <data>/logs/cli)"
    )


def run(args: argparse.Namespace) -> int:
    return on_spark.run_quietly("quality", args.verbose, lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    from contract_platform.catalog import load_catalog

    catalog_dir = args.catalog or settings.catalog_dir()
    since = parse_day(args.since, "--since")
    load_catalog(catalog_dir)  # a catalogue that does not load is bad input, before a JVM starts
    if not args.archive.exists():
        raise UsageError(f"{args.archive}: archive path does not exist; give an archive root, folder or file")
    report = on_spark.quality()(args.archive, catalog_dir, gx_root=args.gx_root, since=since)
    if args.format == "json":
        emit_json(report.to_dict())
        return report.exit_code
    rows = []
    for quality in report.types:
        for result in quality.results:
            observed = f"{result.observed:.1%}" if result.observed is not None else "-"
            verdict = "error" if result.error else ("pass" if result.success else "FAIL")
            rows.append([quality.message_type, result.id, f"{result.mostly:g}", observed, result.unexpected, verdict])
        rows.extend([quality.message_type, skipped, "", "-", "", "skipped"] for skipped in quality.skipped)
    table(["TYPE", "EXPECTATION", "MOSTLY", "OBSERVED", "UNEXPECTED", "VERDICT"], rows)
    for quality in report.types:
        out(f"{quality.message_type}: {quality.verdict} ({quality.rows} envelopes, {len(quality.failed)} failed)")
        for expectation, why in quality.skipped.items():
            out(f"  {expectation} skipped: {why}")
    for name, count in report.unassigned.items():
        out(f"not judged: {count} envelopes of {name} (no contract by type or route)")
    if not report.types:
        out(f"no envelopes found under {args.archive}")
    out(f"Data Docs: {report.data_docs or '(not built)'}")
    if report.results_page:
        out(f"Results page (opens offline): {report.results_page}")
    return report.exit_code

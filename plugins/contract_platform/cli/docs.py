"""``contractctl docs [CATALOG] [--out DIR]``: one Markdown page per contract, plus an index."""

from __future__ import annotations

import argparse
from pathlib import Path

from contract_platform import settings
from contract_platform.cli.common import add_catalog_argument, add_format_argument, load
from contract_platform.cli.output import emit_json, out

HELP = "write one Markdown page per contract (meaning, owner, transport, fields, PII, retention)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_catalog_argument(parser)
    parser.add_argument("--out", type=Path, default=None, help="output folder (default <data>/docs/contracts)")
    add_format_argument(parser)


def run(args: argparse.Namespace) -> int:
    from contract_platform.docs import write_docs

    catalog = load(args.catalog)
    target = args.out or settings.docs_dir() / "contracts"
    written = write_docs(catalog, target)
    if args.format == "json":
        emit_json({"out": str(target), "files": [str(p) for p in written]})
    else:
        out(f"wrote {len(written)} pages to {target}")
    return 0

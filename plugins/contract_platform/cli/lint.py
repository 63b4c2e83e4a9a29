"""``contractctl lint [CATALOG]``: every lint rule over the catalogue."""

from __future__ import annotations

import argparse

from contract_platform.cli.common import add_catalog_argument, add_dialect_argument, add_format_argument, load
from contract_platform.cli.output import emit_json, out

HELP = "run every lint rule over the catalogue"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_catalog_argument(parser)
    add_format_argument(parser, ci=True)
    add_dialect_argument(parser)
    parser.add_argument("--strict", action="store_true", help="warnings fail the run too")


def run(args: argparse.Namespace) -> int:
    from contract_platform.lint import Severity, lint_catalog

    catalog = load(args.catalog, args.default_dialect)
    findings = lint_catalog(catalog)
    bad = any(f.fails(strict=args.strict) for f in findings)
    if args.format in ("github", "junit"):
        from contract_platform.cli.ci_formats import lint_output

        errors = sum(1 for f in findings if f.severity is Severity.ERROR)
        summary = f"{len(catalog)} contracts, {errors} errors, {len(findings) - errors} warnings"
        lint_output(args.format, catalog, findings, strict=args.strict, summary=summary)
    elif args.format == "json":
        emit_json({"ok": not bad, "contracts": len(catalog), "findings": [f.to_dict() for f in findings]})
    else:
        for finding in findings:
            out(str(finding))
        errors = sum(1 for f in findings if f.severity is Severity.ERROR)
        out(f"{len(catalog)} contracts, {errors} errors, {len(findings) - errors} warnings")
    return 1 if bad else 0

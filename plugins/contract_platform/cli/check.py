"""``contractctl check [CATALOG]``: lint + fixtures + compatibility with predecessors; the pull-request gate."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from contract_platform.cli.common import add_catalog_argument, add_format_argument, load
from contract_platform.cli.output import emit_json, out

if TYPE_CHECKING:
    from contract_platform.catalog.model import Contract

HELP = "lint, fixtures and compatibility of each version with its predecessors"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_catalog_argument(parser)
    add_format_argument(parser)
    parser.add_argument(
        "--against",
        metavar="GITREF",
        help="compare each contract with the same major at this git ref (e.g. origin/main)",
    )
    parser.add_argument("--strict", action="store_true", help="warnings fail the run too")


def run(args: argparse.Namespace) -> int:
    from contract_platform.checks import check_catalog

    catalog = load(args.catalog)
    history_of = None
    if args.against:
        from contract_platform.catalog.history import schema_at_git_ref

        def history_of(contract: Contract) -> list[tuple[str, object]]:
            found = schema_at_git_ref(contract, args.against)
            return [found] if found else []

    report = check_catalog(catalog, history_of)
    ok = report.ok(strict=args.strict)
    if args.format == "json":
        emit_json(report.to_dict(strict=args.strict))
        return 0 if ok else 1
    for finding in report.findings:
        out(str(finding))
    for result in report.compatibility:
        state = "ok" if result.ok else "FAIL"
        out(f"{state} {result.message_type}: {result.mode} against {', '.join(result.against)}")
        for change in result.changes:
            if not change["compatible"]:
                out(f"     breaking [{change['rule']}] {change['path'] or '/'}: {change['message']}")
        for problem in result.semver_problems:
            out(f"     version: {problem}")
    out(
        f"{report.contracts} contracts checked: {len(report.findings)} lint findings, "
        f"{sum(1 for r in report.compatibility if not r.ok)} compatibility failures — {'OK' if ok else 'FAILED'}"
    )
    return 0 if ok else 1

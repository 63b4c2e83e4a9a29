"""``contractctl status [TYPE]``: declared vs effective status, history and latest evidence."""

from __future__ import annotations

import argparse
from typing import Any

from contract_platform.cli.common import add_format_argument, load
from contract_platform.cli.output import emit_json, out, table

HELP = "declared vs effective status, transition history and latest evidence"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("type", nargs="?", help="one messageType (default: every contract)")
    parser.add_argument("--catalog", default=None, help="catalogue folder (default ./contracts)")
    parser.add_argument(
        "--registry", default=None, help="registry store URL (default $CONTRACT_REGISTRY_URL or SQLite)"
    )
    add_format_argument(parser)


def run(args: argparse.Namespace) -> int:
    from contract_platform.status import contract_status, overview
    from contract_platform.store import Registry

    catalog = load(args.catalog)
    registry = Registry.open(args.registry)
    try:
        if args.type:
            detail = contract_status(catalog, registry, args.type)
            if args.format == "json":
                emit_json(detail)
            else:
                _print_detail(detail)
            return 0
        rows = overview(catalog, registry)
        if args.format == "json":
            emit_json({"contracts": rows})
        else:
            table(
                ["MESSAGE TYPE", "DECLARED", "EFFECTIVE", "", "LAST CHANGE", "BLOCKED BY"],
                [
                    [
                        r["messageType"],
                        r["declared"],
                        r["effective"] or "-",
                        "" if r["inSync"] else "≠",
                        r["lastTransitionAt"] or "",
                        (r["lastRefusal"] or "")[:70],
                    ]
                    for r in rows
                ],
            )
        return 0
    finally:
        registry.close()


def _print_detail(detail: dict[str, Any]) -> None:
    out(f"{detail['messageType']}  declared {detail['declared']}  effective {detail['effective'] or '-'}")
    out("")
    out("History:")
    for h in detail["history"] or [{"at": "", "from": "", "to": "(none yet)", "actor": "", "reason": ""}]:
        out(f"  {h['at']}  {h['from'] or '∅'} -> {h['to']}  by {h['actor']}  {h['reason']}")
    if detail["refusals"]:
        out("")
        out("Latest refusal:")
        latest = detail["refusals"][0]
        out(f"  {latest['at']}  {latest['from']} -> {latest['to']}")
        for reason in latest["reasons"]:
            out(f"    - {reason}")
    out("")
    out("Latest evidence:")
    if not detail["evidence"]:
        out("  (none)")
    for kind, e in detail["evidence"].items():
        out(f"  {kind:<20} {e['verdict']:<8} {e['collectedAt']}  {e.get('summary', '')}")

"""``contractctl status [TYPE]``: declared vs effective status, history and latest evidence."""

from __future__ import annotations

import argparse
from typing import Any

from contract_platform.cli.common import add_format_argument, load
from contract_platform.cli.output import emit_json, out, table
from contract_platform.errors import printable

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
    from contract_platform.store import SqlRegistry

    catalog = load(args.catalog)
    registry = SqlRegistry.open(args.registry)
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
        out(f"  {h['at']}  {h['from'] or '∅'} -> {h['to']}  by {printable(h['actor'])}  {printable(h['reason'])}")
    if detail["refusals"]:
        out("")
        out("Latest refusal:")
        latest = detail["refusals"][0]
        out(f"  {latest['at']}  {latest['from']} -> {latest['to']}")
        for reason in latest["reasons"]:  # an audit's blockers name readers other clients named
            out(f"    - {printable(reason)}")
    out("")
    out("Latest evidence:")
    if not detail["evidence"]:
        out("  (none)")
    for kind, e in detail["evidence"].items():
        out(f"  {kind:<20} {e['verdict']:<8} {e['collectedAt']}  {e.get('summary', '')}")
    if detail.get("replay"):
        out("")
        out("Replay (latest per version):")
        for replay in detail["replay"]:
            _print_replay(replay)


def _print_replay(replay: dict[str, Any]) -> None:
    rate = replay["rejectionRate"]
    shown_rate = f" ({rate:.2%})" if isinstance(rate, int | float) else ""
    run = f"  run {replay['runId']}" if replay["runId"] else ""
    out(
        f"  {replay['version']:<10} {replay['decision']:<21} replayed {_count(replay['replayed'])}, "
        f"rejected {_count(replay['rejected'])}{shown_rate}  {replay['collectedAt']}{run}"
    )
    for pointer in replay["topPointers"]:
        out(f"    {pointer.get('pointer')} [{pointer.get('keyword')}]: {pointer.get('count')}")
    in_flight = replay["inFlight"]
    if in_flight["inspected"] is None:
        out(f"    {in_flight['note'] or 'in-flight messages not checked'}")
    else:
        out(f"    in flight: {in_flight['inspected']} inspected, {_count(in_flight['rejected'])} rejected")
    for queue in in_flight["queues"]:
        skipped = f"  skipped: {queue['skipped']}" if queue.get("skipped") else ""
        out(
            f"      {queue.get('queue')} (vhost {queue.get('vhost')}): {queue.get('inspected')} inspected, "
            f"{_count(queue.get('rejected'))} rejected{skipped}"
        )
    for reason in replay["reasons"]:
        out(f"    - {printable(reason)}")


def _count(value: Any) -> str:
    return "-" if value is None else str(value)

"""``contractctl bridge MIGRATION``: publish every v<N-1> message as v<N> too, until drained (or SIGTERM).

Exit codes: 0 every message was published to the target; 1 some were parked (or the broker refused a
republication: the target topology is missing); 2 bad input (the migration spec names file and pointer);
3 the broker is unreachable.
"""

from __future__ import annotations

import argparse

from contract_platform.cli.common import add_catalog_argument, add_format_argument, load
from contract_platform.cli.output import emit_json, out, table

HELP = "bridge v<N-1> messages to v<N> through the migration spec (drain the tap queue, or --follow)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("migration", help="target messageType (billing.invoice-issued.v2) or its migration.yaml")
    add_catalog_argument(parser, positional=False)
    parser.add_argument("--follow", action="store_true", help="run until SIGTERM/SIGINT instead of draining")
    parser.add_argument("--idle-timeout", type=float, default=5.0, help="drain: stop after S idle seconds (5)")
    parser.add_argument("--max-messages", type=int, default=None, help="stop after N messages")
    parser.add_argument("--max-seconds", type=float, default=None, help="stop after S seconds")
    parser.add_argument("--tap-queue", default=None, help="the bridge's queue (default bridge.<source type>)")
    add_format_argument(parser)


def run(args: argparse.Namespace) -> int:
    from contract_platform.bridge import Bridge, BridgeConfig, Mode, exit_code
    from contract_platform.bridge.translation import resolve_route

    catalog = load(args.catalog)
    route = resolve_route(catalog, args.migration)
    config = BridgeConfig(
        mode=Mode.FOLLOW if args.follow else Mode.DRAIN,
        tap_queue=args.tap_queue,
        idle_timeout=args.idle_timeout,
        max_messages=args.max_messages,
        max_seconds=args.max_seconds,
    )
    report = Bridge(catalog, route, config).run()
    if args.format == "json":
        emit_json(report.as_dict())
    else:
        out(f"{report.source} -> {report.target}: {report.tap_queue} ({report.mode}, stopped by {report.stopped_by})")
        rows = [["published", report.published], ["redelivered", report.redelivered]]
        rows += [[f"parked: {reason}", count] for reason, count in report.parked.items()]
        table(["", "MESSAGES"], rows)
        out(f"{report.rate:.0f} messages/s over {report.elapsed_seconds:.1f} s; parking lot: {report.parking_lot}")
    return exit_code(report)

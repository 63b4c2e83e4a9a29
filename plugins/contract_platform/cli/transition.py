"""``contractctl transition TYPE STATUS --reason TEXT``: a manual lifecycle step through the same guards."""

from __future__ import annotations

import argparse
import getpass

from contract_platform.cli.common import add_format_argument, load
from contract_platform.cli.output import emit_json, out
from contract_platform.errors import UsageError

HELP = "move one contract version one lifecycle step, through the same guards as the DAGs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("type", help="messageType, e.g. billing.invoice-issued.v1")
    parser.add_argument("status", help="target status (the next lifecycle step)")
    parser.add_argument("--reason", required=True, help="why; kept in the append-only history")
    parser.add_argument("--actor", default=None, help="who (default: your user name)")
    parser.add_argument("--catalog", default=None, help="catalogue folder (default ./contracts)")
    parser.add_argument(
        "--registry", default=None, help="registry store URL (default $CONTRACT_REGISTRY_URL or SQLite)"
    )
    add_format_argument(parser)


def run(args: argparse.Namespace) -> int:
    from contract_platform.catalog.model import Status
    from contract_platform.lifecycle import request_transition
    from contract_platform.store import SqlRegistry

    try:
        target = Status(args.status)
    except ValueError as exc:
        raise UsageError(f"{args.status!r} is not a status; use one of {', '.join(s.value for s in Status)}") from exc
    if not args.reason.strip():
        raise UsageError("--reason must say why; it is kept in the history")
    catalog = load(args.catalog)
    contract = catalog.require(args.type)
    registry = SqlRegistry.open(args.registry)
    try:
        record = request_transition(
            contract, target, registry, actor=args.actor or getpass.getuser(), reason=args.reason.strip()
        )
    finally:
        registry.close()
    if args.format == "json":
        emit_json({"messageType": args.type, "from": str(record.from_status), "to": str(record.to_status)})
    else:
        out(f"{args.type}: {record.from_status} -> {record.to_status}")
    return 0

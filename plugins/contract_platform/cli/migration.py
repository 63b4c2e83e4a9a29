"""``contractctl migration status TYPE``: parity, lag and the cutover of one v<N-1> -> v<N> migration.

TYPE is either side of the migration: the older messageType or the one holding ``migration.yaml``.
Everything but the tap queue comes from the registry store: the latest ``migration_parity`` evidence
(recorded on the older type) and its recent history, and the consumers per version over time (the
observations the ``dual_publish_migration`` DAG records on each run). The bridge's tap queue depth is
asked of the broker, and shown as unknown when the broker does not answer.

Exit codes: 0 shown; 2 bad input (unknown type, no migration); 3 the registry store is unreachable.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from contract_platform.cli.common import add_catalog_argument, add_format_argument, load
from contract_platform.cli.output import emit_json, out, table
from contract_platform.errors import BrokerError, UsageError

if TYPE_CHECKING:
    from contract_platform.catalog.model import Catalog, Contract
    from contract_platform.evidence.records import EvidenceRecord

HELP = "a v<N-1> -> v<N> migration: parity, lag, consumers per version over time, the bridge's queue"
PARITY_HISTORY = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    actions.required = True
    status = actions.add_parser("status", help="parity, lag and cutover of one migration")
    status.add_argument("type", help="either messageType of the migration, e.g. billing.invoice-issued.v1")
    add_catalog_argument(status, positional=False)
    status.add_argument("--registry", default=None, help="registry store URL (default $CONTRACT_REGISTRY_URL)")
    status.add_argument("--tap-queue", default=None, help="the bridge's queue (default bridge.<older type>)")
    status.add_argument("--last", type=int, default=20, help="observation moments to show (default 20)")
    add_format_argument(status)


def run(args: argparse.Namespace) -> int:
    return {"status": _status}[args.action](args)


def _pair(catalog: Catalog, message_type: str) -> tuple[Contract, Contract]:
    """(older, newer) for either side of a migration."""
    from contract_platform.migration.route import parity_route
    from contract_platform.migration.spec import parse_spec

    contract = catalog.require(message_type)
    if contract.migration is not None:
        spec = parse_spec(contract.migration, str(contract.migration_file))
        source = catalog.get(spec.source)
        if source is None:
            raise UsageError(f"{contract.migration_file} migrates {spec.source}, which is not in the catalogue")
        return source, contract
    source, target, _ = parity_route(catalog, message_type)
    return source, target


def _status(args: argparse.Namespace) -> int:
    from contract_platform.amqp.plan import tap_queue_name
    from contract_platform.migration.cutover import cutover_series
    from contract_platform.retirement.readers_seen import observed_moves
    from contract_platform.store import SqlRegistry

    if args.last < 1:
        raise UsageError(f"--last must be at least 1, not {args.last}")
    catalog = load(args.catalog)
    source, target = _pair(catalog, args.type)
    registry = SqlRegistry.open(args.registry)
    try:
        history = registry.evidence(source.message_type, "migration_parity", limit=PARITY_HISTORY)
        states = {c.message_type: registry.effective(c.message_type) for c in (source, target)}
        series = cutover_series(registry, [source, target], limit=args.last)
        moves = observed_moves(catalog, source, target, registry)
    finally:
        registry.close()
    document = {
        "source": source.message_type,
        "target": target.message_type,
        "status": {
            name: {"declared": str(contract.status), "effective": str(state.status) if state else None}
            for contract in (source, target)
            for name, state in [(contract.message_type, states[contract.message_type])]
        },
        "parity": _evidence(history[0]) if history else None,
        "parityHistory": [_evidence(record, brief=True) for record in history],
        "consumers": series,
        "consumerMoves": [m.to_dict() for m in moves],
        "tapQueue": _tap_queue(args.tap_queue or tap_queue_name(source.message_type)),
    }
    if args.format == "json":
        emit_json(document)
    else:
        _print(document)
    return 0


def _evidence(record: EvidenceRecord, *, brief: bool = False) -> dict[str, Any]:
    figures = dict(record.figures)
    keys = ("mode", "parity", "v1_total", "missing", "mismatches", "lag_p50_ms", "lag_p99_ms")
    shown = {key: figures.get(key) for key in keys} if brief else figures
    return {
        "id": record.id,
        "collectedAt": record.collected_at.isoformat().replace("+00:00", "Z"),
        "verdict": str(record.verdict),
        "runId": record.run_id,
        "report": record.reference,
        **shown,
    }


def _tap_queue(name: str) -> dict[str, Any]:
    """The tap queue's depth, or ``available: false`` with why when the broker does not answer."""
    from contract_platform.amqp.connection import close_quietly, open_connection
    from contract_platform.amqp.inspection import inspect_queue

    try:
        connection = open_connection()
        try:
            state = inspect_queue(connection, name)
        finally:
            close_quietly(connection)
    except BrokerError as exc:
        return {"name": name, "available": False, "error": str(exc)}
    return {
        "name": name,
        "available": True,
        "exists": state.exists,
        "ready": state.ready,
        "unacked": state.unacked,
        "consumers": state.consumers,
    }


def _print(document: dict[str, Any]) -> None:
    source, target = document["source"], document["target"]
    out(f"{source} -> {target}")
    for name, status in document["status"].items():
        out(f"  {name}: declared {status['declared']}, effective {status['effective'] or '-'}")
    parity = document["parity"]
    out("")
    if parity is None:
        out("Parity: no evidence yet (run the dual_publish_migration DAG)")
    else:
        value = "-" if parity.get("parity") is None else f"{parity['parity']:.2%}"
        out(f"Parity: {value} ({parity['verdict']}, {parity.get('mode')}, {parity['collectedAt']})")
        counts = (
            "v1_total",
            "v2_total",
            "missing",
            "extra",
            "duplicates",
            "redeliveries",
            "mismatches",
            "out_of_order",
        )
        out("  " + "  ".join(f"{key} {parity.get(key)}" for key in counts))
        out(f"  lag p50 {parity.get('lag_p50_ms')} ms, p99 {parity.get('lag_p99_ms')} ms")
    out("")
    out("Consumers per version:")
    if not document["consumers"]:
        out("  (no observations yet)")
    else:
        table(
            ["OBSERVED AT", source, target, f"READY {source}", f"READY {target}"],
            [
                [p["at"], p["consumers"][source], p["consumers"][target], p["ready"][source], p["ready"][target]]
                for p in document["consumers"]
            ],
        )
    out("")
    out(f"Consumers of {source} (what each must change before moving, and whether it has moved):")
    if not document["consumerMoves"]:
        out("  (none declared)")
    for move in document["consumerMoves"]:
        owner = f"{move['team'] or 'owner unknown'}, {move['contact'] or 'no contact'}"
        out(f"  {move['service']} ({owner}): {move['state']} - {move['why']}")
        if move["canMoveUnchanged"]:
            out("    can move unchanged: nothing it reads is renamed, transformed or dropped")
        for fate in move["mustChange"]:
            out(f"    must change: reads {fate['read']}: {fate['field']} {fate['detail']}")
    tap = document["tapQueue"]
    out("")
    if not tap["available"]:
        out(f"Tap queue {tap['name']}: unknown ({tap['error']})")
    elif not tap["exists"]:
        out(f"Tap queue {tap['name']}: does not exist (no bridge has run)")
    else:
        out(f"Tap queue {tap['name']}: {tap['ready']} ready, {tap['unacked']} unacked, {tap['consumers']} consumers")

"""``contractctl retention``: the catalogue's ``retention`` enforced, by hand (docs/design.md#retention).

- ``apply [--dry-run] [--type T]``: delete the archive partitions past their contract's ``retention.archive``
  that no hold keeps, with evidence (``retention.apply_archive_retention``, the function the
  ``archive_retention`` DAG runs). ``--type`` limits it to T's exchange, whose partitions hold every version
  the exchange carries. Another run holding the archive's lock makes this one a no-op (exit 0, says so).
- ``hold TYPE --reason R --owner O [--until DATE]`` / ``release TYPE [--owner O]``: an investigation hold
  on TYPE's archive (``<data>/retention/holds.json``); ``holds``: every hold in force, catalogue ones too.
- ``purge-dead-letters TYPE [--dry-run] [--vhost V]``: remove from TYPE's DLQs and parking lots the messages
  older than its ``retention.dlq``, the rest kept in order, with evidence of the removed messages' ids
  (``retention.purge_dead_letters``). A dry run counts and gives every message back.

Exit codes: 0 done; 2 bad input (unknown type, no archive); 3 the registry store is unreachable.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from contract_platform import settings
from contract_platform.cli.common import add_catalog_argument, add_format_argument, load
from contract_platform.cli.output import emit_json, out, table
from contract_platform.days import parse_day
from contract_platform.errors import UsageError

if TYPE_CHECKING:
    from contract_platform.catalog.model import Catalog
    from contract_platform.retention import RetentionHold

HELP = "enforce the catalogue's retention: delete archive partitions past their window; holds that stop it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    actions.required = True
    apply = actions.add_parser("apply", help="delete archive partitions past retention.archive, with evidence")
    apply.add_argument("--dry-run", action="store_true", help="say what would be deleted; delete nothing")
    apply.add_argument("--type", default=None, help="only this messageType's exchange")
    apply.add_argument("--archive", type=Path, default=None, help="archive root (default $CONTRACT_ARCHIVE_DIR)")
    apply.add_argument("--registry", default=None, help="registry store URL (default $CONTRACT_REGISTRY_URL)")
    hold = actions.add_parser("hold", help="keep TYPE's archive for an investigation")
    hold.add_argument("type", help="messageType, e.g. billing.invoice-issued.v1")
    hold.add_argument("--reason", required=True, help="why the archive must be kept")
    hold.add_argument("--owner", required=True, help="who to ask before the hold is released")
    hold.add_argument("--until", default=None, help="last day the hold is in force (default: until released)")
    release = actions.add_parser("release", help="release investigation holds on TYPE's archive")
    release.add_argument("type", help="messageType")
    release.add_argument("--owner", default=None, help="only this owner's hold (default: every one on TYPE)")
    listing = actions.add_parser("holds", help="every retention hold in force, from the catalogue and by hand")
    purge = actions.add_parser(
        "purge-dead-letters", help="remove dead letters older than TYPE's retention.dlq, with evidence"
    )
    purge.add_argument("type", help="messageType whose DLQs and parking lots are purged")
    purge.add_argument("--dry-run", action="store_true", help="count what would go; give every message back")
    purge.add_argument("--vhost", default=None, help="virtual host of the queues (default: the broker URL's)")
    purge.add_argument("--registry", default=None, help="registry store URL (default $CONTRACT_REGISTRY_URL)")
    for sub in (apply, hold, release, listing, purge):
        add_catalog_argument(sub, positional=False)
        add_format_argument(sub)


def run(args: argparse.Namespace) -> int:
    verbs = {"apply": _apply, "hold": _hold, "release": _release, "holds": _holds, "purge-dead-letters": _purge}
    return verbs[args.action](args)


def _in_force(catalog: Catalog, now: datetime) -> dict[str, tuple[RetentionHold, ...]]:
    from contract_platform.retention import holds_file, holds_in_force, read_investigation_holds

    return holds_in_force(catalog, read_investigation_holds(holds_file()), now.date())


def _apply(args: argparse.Namespace) -> int:
    from contract_platform.retention import Action, apply_archive_retention
    from contract_platform.store import SqlRegistry

    catalog, now = load(args.catalog), datetime.now(UTC)
    if args.type:
        catalog.require(args.type)
    root = args.archive or settings.archive_dir()
    if not root.is_dir():
        raise UsageError(f"{root}: no archive here; pass --archive or set CONTRACT_ARCHIVE_DIR")
    holds = _in_force(catalog, now)
    if args.dry_run:
        result = apply_archive_retention(
            catalog, root, now=now, holds=holds, registry=None, message_type=args.type, dry_run=True
        )
    else:
        with SqlRegistry.open(args.registry) as registry:
            result = apply_archive_retention(
                catalog, root, now=now, holds=holds, registry=registry, message_type=args.type
            )
    if args.format == "json":
        emit_json(result.to_dict())
        return 0
    if result.busy:
        out(f"another retention run holds {root}'s lock: nothing done by this one")
        return 0
    shown = [d for d in result.decisions if d.action is not Action.KEEP]
    table(
        ["exchange", "day", "action", "window", "held by"],
        [[d.exchange, d.day.isoformat(), str(d.action), d.to_dict()["window"] or "-",
          "; ".join(h.describe() for h in d.held_by) or "-"] for d in shown],  # fmt: skip
    )
    kept = len(result.decisions) - len(shown)
    if result.dry_run:
        would = sum(d.action is Action.DELETE for d in result.decisions)
        out(f"dry run: {would} partitions would be deleted, {kept} are inside their window")
    else:
        records, size = sum(p.records for p in result.deleted), sum(p.bytes for p in result.deleted)
        out(f"deleted {len(result.deleted)} partitions ({records} records, {size} bytes), {kept} inside their window")
        if result.pruned_state:
            out(f"validation state: {len(result.pruned_state)} days no run reads any more removed")
    return 0


def _hold(args: argparse.Namespace) -> int:
    from contract_platform.retention import holds_file, set_hold

    contract = load(args.catalog).require(args.type)
    until = parse_day(args.until, "--until")
    hold = set_hold(holds_file(), contract, reason=args.reason, owner=args.owner, until=until, now=datetime.now(UTC))
    if args.format == "json":
        emit_json(hold.to_dict())
    else:
        out(f"held: {contract.message_type}'s archive is kept {f'through {until}' if until else 'until released'}")
    return 0


def _release(args: argparse.Namespace) -> int:
    from contract_platform.retention import holds_file, release_hold

    message_type = load(args.catalog).require(args.type).message_type
    released = release_hold(holds_file(), message_type, owner=args.owner)
    if args.format == "json":
        emit_json([h.to_dict() for h in released])
    else:
        out(f"released {len(released)} investigation hold(s) on {message_type}")
    return 0


def _holds(args: argparse.Namespace) -> int:
    holds = _in_force(load(args.catalog), datetime.now(UTC))
    rows = [h for found in holds.values() for h in found]
    if args.format == "json":
        emit_json([{"messageType": h.message_type, "source": h.source, "kind": h.kind, "reason": h.reason,
                    "owner": h.owner, "until": h.until.isoformat() if h.until else None} for h in rows])  # fmt: skip
        return 0
    table(
        ["messageType", "source", "kind", "until", "owner", "reason"],
        [[h.message_type, h.source, h.kind, h.until.isoformat() if h.until else "released by hand", h.owner or "-",
          h.reason] for h in rows],  # fmt: skip
    )
    return 0


def _purge(args: argparse.Namespace) -> int:
    from contract_platform.amqp import open_connection
    from contract_platform.amqp.connection import close_quietly
    from contract_platform.amqp.http import management_client_for_url
    from contract_platform.amqp.urls import vhost_of, with_vhost
    from contract_platform.retention.dead_letters import purge_dead_letters
    from contract_platform.store import SqlRegistry

    contract = load(args.catalog).require(args.type)
    url = settings.rabbitmq_url()
    if args.vhost:
        url = with_vhost(url, args.vhost)
    now, vhost = datetime.now(UTC), vhost_of(url)
    connection = open_connection(url, name="contractctl retention purge-dead-letters")
    try:
        management = management_client_for_url(url)
        if args.dry_run:
            result = purge_dead_letters(
                connection, contract, now=now, vhost=vhost, registry=None, management=management, dry_run=True
            )
        else:
            with SqlRegistry.open(args.registry) as registry:
                result = purge_dead_letters(
                    connection, contract, now=now, vhost=vhost, registry=registry, management=management
                )
    finally:
        close_quietly(connection)
    if args.format == "json":
        emit_json(result.to_dict())
        return 0
    table(
        ["queue", "role", "depth", "removed" if not result.dry_run else "would remove", "kept", "age unknown",
         "not read"],
        [[q.queue, q.role, q.depth, q.removed, q.kept, q.age_unknown,
          q.skipped or ("absent" if q.absent else (f"{q.unread} past this run's bound" if q.unread else "-"))]
         for q in result.queues],
    )  # fmt: skip
    removed = sum(q.removed for q in result.queues)
    window = result.to_dict()["window"]
    if result.dry_run:
        out(f"dry run: {removed} dead letters older than {window} would be removed; every message was given back")
    else:
        out(f"removed {removed} dead letters older than {window} from {contract.message_type}'s queues in {vhost}")
    return 0

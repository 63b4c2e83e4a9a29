"""``contractctl audit TYPE``: the retirement audit of one version, on demand, with the DAG's collectors.

The retention check needs the last archived message of the type: by default the archive is scanned
here, with the Spark job's own transform in a local session (its ``last_seen`` entry point,
``contract_platform.cli.on_spark``); ``--last-seen FILE`` uses a file the
``archive_last_seen`` job wrote instead. Nothing is recorded unless ``--record`` is given (then the
queue observations, the evidence bundle and the ``retirement_audit`` evidence, as the DAG records).
The audit needs the broker's management API (it lists the queues, bindings, policies and consumers
that services declared themselves): it is checked first, and when it does not answer the command stops
with exit 3 and the one command that enables it. ``--vhost`` adds virtual hosts to search (default
``$CONTRACT_RABBITMQ_VHOSTS``); ``--dead-letter-suffix`` replaces the DLQ naming conventions.
Exit 0: every check passed; 1: blockers; 2: bad input; 3: broker, its management API or registry store unreachable.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from contract_platform import settings
from contract_platform.cli import on_spark
from contract_platform.cli.common import add_catalog_argument, add_format_argument, load
from contract_platform.cli.output import emit_json, out, table
from contract_platform.errors import printable

if TYPE_CHECKING:
    from contract_platform.retirement import AuditResult, LastSeen

HELP = "run the retirement audit of one version now and print what blocks its retirement"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("type", help="messageType, e.g. billing.invoice-issued.v1")
    add_catalog_argument(parser, positional=False)
    parser.add_argument(
        "--registry", default=None, help="registry store URL (default $CONTRACT_REGISTRY_URL or SQLite)"
    )
    parser.add_argument(
        "--archive",
        type=Path,
        default=None,
        help="archive root to scan (default $CONTRACT_ARCHIVE_DIR or <data>/archive)",
    )
    parser.add_argument(
        "--last-seen",
        type=Path,
        default=None,
        help="read this archive_last_seen output instead of scanning the archive",
    )
    parser.add_argument(
        "--dead-letter-prefix",
        default="",
        metavar="PREFIX",
        help="scan only DLQs and parking lots whose names start with PREFIX (default: every one on the broker)",
    )
    parser.add_argument(
        "--vhost",
        action="append",
        default=None,
        metavar="VHOST",
        help="also search this virtual host (repeatable; default $CONTRACT_RABBITMQ_VHOSTS, else only the broker URL's)",
    )
    parser.add_argument(
        "--dead-letter-suffix",
        action="append",
        default=None,
        metavar="SUFFIX",
        help="a queue whose name ends in SUFFIX is a DLQ (repeatable; replaces the defaults .dlq, .dead, _error, ...)",
    )
    parser.add_argument("--record", action="store_true", help="record observations and evidence, as the DAG does")
    add_format_argument(parser)
    parser.add_argument(
        "--verbose", action="store_true", help="print the path of the Spark and JVM log (kept under <data>/logs/cli)"
    )


def run(args: argparse.Namespace) -> int:
    return on_spark.run_quietly("audit", args.verbose, lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    from contract_platform.amqp.connection import close_quietly, open_connection
    from contract_platform.retirement import LastSeen, audit_version, keep_audit
    from contract_platform.retirement.audit import audit_snapshot
    from contract_platform.retirement.snapshot import while_alive
    from contract_platform.store import SqlRegistry

    catalog = load(args.catalog)
    contract = catalog.require(args.type)
    connection = open_connection()
    try:  # closed on every path: the management probe, the registry, the scan and the audit may each raise
        # the management API is required, probed once, before anything slow; its read serves every check
        snapshot = audit_snapshot(connection, vhosts=args.vhost, dead_letter_suffixes=args.dead_letter_suffix)
        with SqlRegistry.open(args.registry) as registry:
            try:
                # the scan starts Spark and reads the whole archive: the connection's heartbeats go on meanwhile, or
                # the broker would drop it after two missed beats (a minute) and the audit would fail on it
                last_seen = (
                    LastSeen.read(args.last_seen)
                    if args.last_seen
                    else while_alive(lambda: _scan(args.archive or settings.archive_dir()), connection)
                )
                result = audit_version(
                    contract,
                    catalog,
                    registry,
                    connection,
                    last_seen,
                    now=datetime.now(UTC),
                    run_id=None,
                    snapshot=snapshot,
                    dead_letter_scope=args.dead_letter_prefix,
                    record=args.record,
                )
            finally:
                close_quietly(connection)  # the broker is done with before the report is written
            report = keep_audit(result, registry, settings.docs_dir()).paths.markdown if args.record else None
    finally:
        close_quietly(connection)
    if args.format == "json":
        emit_json(result.to_dict() | {"report": str(report) if report else None})
    else:
        _print(result, report)
    return 0 if result.passed else 1


def _scan(root: Path) -> LastSeen:
    """The archive scanned in-process with the Spark job's transform (a local session unless one is active)."""
    from contract_platform.retirement import LastSeen

    if "://" not in str(root) and not root.exists():
        return LastSeen(source=f"{root} (the archive root does not exist: nothing scanned)")
    document = on_spark.last_seen()(str(root))
    if document is None:
        return LastSeen(source=f"{root} (the archive root does not exist: nothing scanned)")
    return LastSeen.from_document(document, source=f"in-process scan of {root}", scanned_at=datetime.now(UTC))


def _print(result: AuditResult, report: Path | None) -> None:
    from contract_platform.retirement.model import iso

    out(f"{result.message_type} {result.contract_version}: retirement audit {str(result.verdict).upper()}")
    out("")
    table(
        ["CHECK", "VERDICT", "MIGHT CLEAR AT"],
        [[c.name, c.verdict, iso(c.clears_at) or ""] for c in result.checks],
    )
    considered = _considered(result)
    if considered:
        out("")
        out("Queues considered (how each was found, what it held):")
        table(["QUEUE", "VHOST", "FOUND BY", "CHECK", "MESSAGES", "OF THE TYPE", "CONSUMERS", "READ BY"], considered)
    if result.blocking:
        out("")
        out("Blockers:")
        for check in result.blocking:
            out(f"  - {check.name}: {printable(check.blocker or '')}")  # names other clients chose, escaped
    if report is not None:
        out("")
        out(f"report: {report}")


def _considered(result: AuditResult) -> list[list[object]]:
    """One row per queue the audit looked at: receivers (queues check) and dead-letter queues."""
    from contract_platform.retirement.report import considered_queues

    return [
        [
            row["queue"],
            row["vhost"] or "",
            row["foundBy"],
            row["check"],
            "(absent)" if row["held"] is None else row["held"],
            "" if row["ofType"] is None else row["ofType"],
            "" if row["consumers"] is None else row["consumers"],
            row["readBy"],
        ]
        for row in considered_queues(result.figures())
    ]

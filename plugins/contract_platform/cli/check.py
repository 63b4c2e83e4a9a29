"""``contractctl check [CATALOG]``: lint + fixtures + compatibility with predecessors; the pull-request gate."""

from __future__ import annotations

import argparse
import contextlib
import os
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contract_platform import settings
from contract_platform.cli.common import add_catalog_argument, add_dialect_argument, add_format_argument, load
from contract_platform.cli.output import emit_json, err, out

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from contract_platform.catalog.model import Catalog, Contract
    from contract_platform.catalog.selection import Selection
    from contract_platform.checks import CheckReport, History
    from contract_platform.cli.on_spark import SparkLog
    from contract_platform.replay.run import ReplayResult
    from contract_platform.replay.statement import Statement
    from contract_platform.retirement.readers_seen import ReadersSource

HELP = "lint, fixtures and compatibility of each version with its predecessors"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_catalog_argument(parser)
    add_format_argument(parser, ci=True)
    add_dialect_argument(parser)
    parser.add_argument(
        "--against",
        metavar="GITREF",
        help="compare each contract with the same major at this git ref (e.g. origin/main)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="with --against: check every version, not only those the change reaches (catalog.selection)",
    )
    parser.add_argument("--strict", action="store_true", help="warnings fail the run too")
    parser.add_argument(
        "--replay",
        nargs="?",
        const="",
        default=None,
        metavar="ARCHIVE",
        help="replay archived and in-flight traffic against each changed version (docs/replay.md); "
        "ARCHIVE defaults to the platform's archive",
    )
    parser.add_argument(
        "--registry-url",
        default=None,
        help="earlier versions from this registry when --against is not given (default $CONTRACT_REGISTRY_URL)",
    )
    parser.add_argument("--no-in-flight", action="store_true", help="with --replay: do not read the broker's queues")
    parser.add_argument(
        "--engine",
        choices=("auto", "local", "spark"),
        default="auto",
        help="with --replay: where archived messages are judged; auto (default): in this process when every "
        "window is on the local file system and small (replay.local.LOCAL_MAX_BYTES), else on Spark",
    )
    parser.add_argument("--verbose", action="store_true", help="with --replay: print the path of the Spark and JVM log")


def run(args: argparse.Namespace) -> int:
    from contract_platform.checks import check_catalog
    from contract_platform.replay.statement import statements_of

    catalog, selection = _selected(args)
    history_of: Callable[[Contract], History] | None = None
    if args.against:
        from contract_platform.catalog.git_ref import schemas_at_git_ref

        earlier = schemas_at_git_ref(
            [c for c in catalog if selection is None or c.message_type in selection], args.against
        )

        def at_git_ref(contract: Contract) -> History:
            found = earlier.get(contract.message_type)  # an unselected version: nothing to compare or replay
            return [found] if found else []

        history_of = at_git_ref
    with contextlib.ExitStack() as history:  # the registry the replay's history comes from, closed on every path
        if not args.against and args.replay is not None:
            from contract_platform.evidence.registry import earlier_schemas

            history_of = partial(earlier_schemas, history.enter_context(_open_registry(args.registry_url)))
        only_types = None if selection is None else set(selection.selected)
        with contextlib.ExitStack() as opened:  # the readers perspective's registry and broker connection
            readers = _readers_source(args, catalog, only_types, opened)
            report = check_catalog(catalog, history_of, only=only_types, readers=readers)
        if selection is not None and args.format == "text":
            out(selection.describe())
        only = None if selection is None else selection.selected  # replay too: the versions the change reaches
        replayed, spark_log = (
            _replay(args, catalog, history_of, report, only)
            if args.replay is not None and history_of is not None
            else (None, None)
        )
    statements = statements_of(report.compatibility, replayed)  # what each version's evidence decided
    ok = _passes(report, statements, replayed, strict=args.strict)
    if spark_log is not None:  # --replay ran Spark: its log's path on failure or --verbose
        spark_log.announce(failed=not ok)
    summary = (
        f"{report.contracts} contracts checked: {len(report.findings)} lint findings, "
        f"{sum(1 for s in statements if not s.ok)} compatibility failures — {'OK' if ok else 'FAILED'}"
    )
    if args.format in ("github", "junit"):  # cli/ci_formats.py: same verdict and exit code as text
        from contract_platform.cli.ci_formats import check_output

        checked = None if selection is None else set(selection.selected)
        return check_output(
            args.format,
            catalog,
            report,
            replayed,
            statements,
            ok=ok,
            strict=args.strict,
            summary=summary,
            checked=checked,
        )
    if args.format == "json":
        document = report.to_dict(strict=args.strict)
        document["ok"] = ok
        for entry, statement in zip(document["compatibility"], statements, strict=True):
            entry["decidedBy"] = str(statement.decided_by)
            entry["statement"] = statement.to_dict()
        if selection is not None:
            document["selection"] = selection.to_dict()
        if replayed is not None:
            document["replay"] = [r.to_dict() for r in replayed]
        emit_json(document)
        return 0 if ok else 1
    for finding in report.findings:
        out(str(finding))
    for result, statement in zip(report.compatibility, statements, strict=True):
        state = "ok" if statement.ok else "FAIL"
        out(f"{state} {result.message_type}: {result.mode} against {', '.join(result.against)}")
        for change in result.changes:
            if not change["compatible"]:
                out(f"     breaking [{change['rule']}] {change['path'] or '/'}: {change['message']}")
        for problem in result.semver_problems:
            out(f"     version: {problem}")
        for line in statement.lines():
            out(f"     {line}")
    for replay_result in replayed or []:
        figures = replay_result.figures()
        out(
            f"replay {replay_result.message_type} {replay_result.target.contract.version}: {figures['decision']} "
            f"({figures['rejected']} of {figures['replayed']} archived messages rejected, "
            f"{figures['since']} to {figures['until']})"
        )
        for pointer in figures["top_pointers"]:
            out(f"     {pointer['pointer'] or '/'} ({pointer['keyword']}): {pointer['count']} messages")
        for reason in figures["reasons"]:
            out(f"     {reason}")
        for consumer in figures["consumers"]:
            in_flight = consumer["in_flight_rejected"]
            out(
                f"     consumer {consumer['service']}: {consumer['archived_rejected']} archived"
                f"{'' if in_flight is None else f' and {in_flight} in-flight'} messages rejected within "
                + ("its reads" if consumer["reads"] == "declared" else "everything it reads (no reads declared)")
            )
        for consumer in figures["source_consumers"]:
            in_flight = consumer["in_flight_changed"]
            out(
                f"     consumer {consumer['service']} of {figures['source_type']}: {consumer['archived_changed']} "
                f"archived{'' if in_flight is None else f' and {in_flight} in-flight'} messages change in what it "
                "reads (the migration renames, transforms or drops it)"
            )
    out(summary)
    return 0 if ok else 1


def _readers_source(
    args: argparse.Namespace, catalog: Catalog, only: set[str] | None, opened: contextlib.ExitStack
) -> ReadersSource | None:
    """What the readers perspective sees of each version's readers: the broker's topology and the reader
    sessions of the registry store (``--registry-url``, ``$CONTRACT_REGISTRY_URL`` or the data folder's when it
    exists); only built when a checked contract asks for the readers perspective. What is missing is named."""
    if not any(c.compatibility_perspective == "readers" for c in catalog if only is None or c.message_type in only):
        return None
    from contract_platform.amqp.connection import open_connection
    from contract_platform.errors import StoreError
    from contract_platform.retirement.readers_seen import ReadersSource
    from contract_platform.store import SqlRegistry

    url = args.registry_url or os.environ.get("CONTRACT_REGISTRY_URL")
    default = settings.registry_file()
    registry = None
    if url or default.is_file():
        try:
            registry = SqlRegistry.open(url or settings.registry_url())
            opened.callback(registry.close)
        except StoreError as exc:
            err(f"readers perspective: the registry store could not be read ({exc}); reader sessions unknown")
    return opened.enter_context(ReadersSource(registry, open_connection))


def _selected(args: argparse.Namespace) -> tuple[Catalog, Selection | None]:
    """The catalogue, and with ``--against`` (without ``--all``) the versions the change reaches
    (``catalog.selection``): only their payload schemas are verified while loading."""
    from contract_platform.catalog import load_catalog
    from contract_platform.catalog.selection import changed_since, select, unverified_problems
    from contract_platform.errors import CatalogError

    root = args.catalog or settings.catalog_dir()
    if not args.against or not Path(root).is_dir():  # no ref, or no catalogue: the loader says what is wrong
        return load(args.catalog, args.default_dialect), None
    if args.all:
        catalog = load(args.catalog, args.default_dialect)
        return catalog, select(catalog, None)
    changes = changed_since(Path(root), args.against)
    catalog = load_catalog(root, default_dialect=args.default_dialect, verify=changes.loads)
    selection = select(catalog, changes)
    problems = unverified_problems(catalog, selection)
    if problems:
        raise CatalogError(problems)
    return catalog, selection


def _open_registry(url: str | None) -> Any:
    from contract_platform.store import SqlRegistry

    return SqlRegistry.open(url or settings.registry_url())


def _replay(
    args: argparse.Namespace,
    catalog: Catalog,
    history_of: Any,
    report: CheckReport,
    only: list[str] | None = None,
) -> tuple[list[ReplayResult], SparkLog | None]:
    """The replay of what ``report`` compared (its verdicts reused, not reached again), in this process for a small
    local window, else on one local SparkSession (docs/replay.md#engines); with the Spark log when Spark ran."""
    from contract_platform import settings
    from contract_platform.cli.output import err
    from contract_platform.replay.local import Engine, choose_engine, replay_locally
    from contract_platform.replay.run import replay_targets

    archive = args.replay or str(settings.archive_dir())
    targets = replay_targets(catalog, history_of, only, compatibility=report.compatibility)
    choice = choose_engine(args.engine, archive, targets)
    if args.verbose:
        err(f"contractctl: replay engine: {choice.engine} ({choice.why})")
    if args.format == "text":
        out(choice.describe(len(targets)))
    if choice.engine is Engine.LOCAL:
        return replay_locally(targets, archive, str(catalog.root), in_flight=not args.no_in_flight), None
    from contract_platform.cli import on_spark

    replay_on_spark = on_spark.replay()  # found before the log starts: without the Spark jobs, exit 2 says so
    # Spark's own output goes to a log; its path is printed once the verdict is known (run's output part)
    with on_spark.quiet_spark()("check", verbose=args.verbose, defer=True) as spark_log:
        return replay_on_spark(archive, catalog, targets, in_flight=not args.no_in_flight), spark_log


def _passes(
    report: CheckReport, statements: Sequence[Statement], replayed: Sequence[ReplayResult] | None, *, strict: bool
) -> bool:
    """The check's verdict: lint, each version's statement (replay's decision taken into account), and no
    replay refusal of a version the compatibility step did not compare (a new major's migrated traffic)."""
    return (
        report.lint_ok(strict=strict)
        and all(statement.ok for statement in statements)
        and not any(r.decision.refuses for r in replayed or ())
    )

"""``contractctl diff OLD NEW``: the compatibility of two schemas, as typed changes and a verdict."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from contract_platform.cli.common import add_format_argument
from contract_platform.cli.output import emit_json, out
from contract_platform.errors import UsageError

HELP = "compare two payload schemas (files or messageTypes of the catalogue)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", help="schema file or messageType (e.g. billing.invoice-issued.v1)")
    parser.add_argument("new", help="schema file or messageType")
    parser.add_argument("--mode", choices=["backward", "forward", "full", "none"], default="backward")
    parser.add_argument("--policy", choices=["strict", "lenient"], default="strict")
    parser.add_argument("--catalog", type=Path, default=None, help="catalogue for messageType arguments")
    add_format_argument(parser)


def _resolve(argument: str, catalog_dir: Path | None) -> tuple[str, Any]:
    """(label, schema) for a file path or a messageType; the catalogue is loaded only when needed."""
    path = Path(argument)
    if path.is_file():
        from contract_platform.catalog.documents import DocumentProblem, read_json
        from contract_platform.catalog.schemas import check_schema
        from contract_platform.errors import SchemaError

        try:
            schema = read_json(path)
        except DocumentProblem as exc:
            raise SchemaError(exc.problem.file, exc.problem.pointer, exc.problem.message) from exc
        check_schema(str(path), schema)
        return str(path), schema
    if "/" in argument or argument.endswith(".json"):
        raise UsageError(
            f"{argument}: file is missing; pass a schema file or a messageType such as billing.invoice-issued.v1"
        )
    # A messageType names its folder (<domain>/<name>/v<MAJOR>): read just that schema rather than
    # loading and checking the whole catalogue for two files.
    from contract_platform import settings

    parts = argument.split(".")
    schema_file = Path(catalog_dir or settings.catalog_dir()).joinpath(*parts, "payload.schema.json")
    if len(parts) != 3 or not schema_file.is_file():
        raise UsageError(f"{argument!r} is neither a schema file nor a messageType of the catalogue")
    return argument, _resolve(str(schema_file), catalog_dir)[1]


def run(args: argparse.Namespace) -> int:
    from contract_platform.compat import Mode, Policy, check_compatibility

    old_label, old = _resolve(args.old, args.catalog)
    new_label, new = _resolve(args.new, args.catalog)
    verdict = check_compatibility(old, new, mode=Mode(args.mode.upper()), policy=Policy(args.policy))
    if args.format == "json":
        emit_json(verdict.to_dict())
    else:
        for change in verdict.changes:
            mark = "ok  " if change.compatible else "FAIL"
            out(f"{mark} {change.rule:<28} {change.path or '/'}  {change.message}")
        word = "compatible" if verdict.compatible else "NOT compatible"
        out(f"{new_label} is {word} with {old_label} ({args.mode}, {args.policy}); {len(verdict.changes)} changes")
    return 0 if verdict.compatible else 1

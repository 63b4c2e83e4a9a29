"""``contractctl diff OLD NEW``: the compatibility of two schemas, as typed changes and a verdict."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from contract_platform.cli.common import add_dialect_argument, add_format_argument
from contract_platform.cli.output import emit_json, out
from contract_platform.errors import UsageError

HELP = "compare two payload schemas (files or messageTypes of the catalogue)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", help="schema file or messageType (e.g. billing.invoice-issued.v1)")
    parser.add_argument("new", help="schema file or messageType")
    parser.add_argument("--mode", choices=["backward", "forward", "full", "none"], default="backward")
    parser.add_argument("--policy", choices=["strict", "lenient"], default="strict")
    parser.add_argument("--catalog", type=Path, default=None, help="catalogue for messageType arguments")
    parser.add_argument(
        "--verify-samples",
        type=_positive,
        default=0,
        metavar="N",
        help="also validate up to N instances generated from one schema against the other, in each direction "
        "the verdict calls compatible; a failure is reported with a minimal instance (exit 1)",
    )
    add_format_argument(parser)
    add_dialect_argument(parser)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 100_000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of samples between 1 and 100000")
    return value


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long for the file system, a loop of links: not a schema file
        return False


def _default_dialect(args: argparse.Namespace) -> str:
    """``--default-dialect``, else the catalogue's ``defaultDialect`` (catalog.yaml), else 2020-12."""
    if args.default_dialect:
        return str(args.default_dialect)
    from contract_platform import settings
    from contract_platform.catalog.loading import catalog_default_dialect

    return catalog_default_dialect(args.catalog or settings.catalog_dir())


def _resolve(argument: str, catalog_dir: Path | None, dialect: str) -> tuple[str, Any]:
    """(label, schema) for a file path or a messageType; the catalogue is loaded only when needed."""
    path = Path(argument)
    if _is_file(path):
        from contract_platform.catalog.documents import DocumentProblem, read_json
        from contract_platform.catalog.schemas import check_schema
        from contract_platform.errors import SchemaError

        try:
            schema = read_json(path)
        except DocumentProblem as exc:
            raise SchemaError(exc.problem.file, exc.problem.pointer, exc.problem.message) from exc
        except ValueError as exc:  # e.g. an integer of more than 4300 digits
            raise SchemaError(str(path), "", f"not usable JSON: {exc}") from exc
        check_schema(str(path), schema, default=dialect)
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
    if len(parts) != 3 or not _is_file(schema_file):
        raise UsageError(f"{argument!r} is neither a schema file nor a messageType of the catalogue")
    return argument, _resolve(str(schema_file), catalog_dir, dialect)[1]


def run(args: argparse.Namespace) -> int:
    from contract_platform.catalog.schemas import read_dialect
    from contract_platform.compat import Mode, Policy, check_compatibility

    dialect = _default_dialect(args)
    old_label, old = _resolve(args.old, args.catalog, dialect)
    new_label, new = _resolve(args.new, args.catalog, dialect)
    readings = {"old": read_dialect(old, dialect), "new": read_dialect(new, dialect)}
    verdict = check_compatibility(
        old, new, mode=Mode(args.mode.upper()), policy=Policy(args.policy), default_dialect=dialect
    )
    checks = _sample(old, new, verdict.compatible, args, dialect) if args.verify_samples else []
    refuted = [c for c in checks if not c.holds]
    compatible = verdict.compatible and not refuted
    if args.format == "json":
        document = {**verdict.to_dict(), "compatible": compatible}
        document["dialects"] = {side: r.to_dict() for side, r in readings.items() if r is not None}
        if args.verify_samples:
            document["samples"] = [check.to_dict() for check in checks]
        emit_json(document)
    else:
        for side, label in (("old", old_label), ("new", new_label)):
            reading = readings[side]
            if reading is not None:
                out(f"{side:<4} {label}: read as {reading.describe()}")
        for change in verdict.changes:
            mark = "ok  " if change.compatible else "FAIL"
            out(f"{mark} {change.rule:<28} {change.path or '/'}  {change.message}")
        for check in checks:
            out(_describe_check(check))
        word = "compatible" if compatible else "NOT compatible"
        out(f"{new_label} is {word} with {old_label} ({args.mode}, {args.policy}); {len(verdict.changes)} changes")
    return 0 if compatible else 1


def _sample(old: Any, new: Any, compatible: bool, args: argparse.Namespace, dialect: str) -> list[Any]:
    """The sampling check of a compatible verdict, in the directions its mode claims (none for NONE)."""
    try:
        import hypothesis_jsonschema  # noqa: F401 - an optional extra: say so instead of an internal error

        from contract_platform.compat.soundness import verify_samples
    except ImportError as exc:
        raise UsageError(
            f"--verify-samples needs {exc.name}: pip install 'contract-lifecycle-platform[verify]'"
        ) from exc

    claimed = {"backward": ["backward"], "forward": ["forward"], "full": ["backward", "forward"]}.get(args.mode, [])
    if not compatible or not claimed:
        return []
    return verify_samples(old, new, samples=args.verify_samples, directions=claimed, default=dialect)


def _describe_check(check: Any) -> str:
    import json

    if check.counterexample is not None:
        example = check.counterexample
        return (
            f"FAIL samples {check.direction}: {json.dumps(example.instance)[:200]} is accepted by the "
            f"{'old' if check.direction == 'backward' else 'new'} schema but rejected at "
            f"{example.pointer or '/'}: {example.reason}"
        )
    if check.skipped:
        return f"ok   samples {check.direction}: not sampled ({check.skipped})"
    return f"ok   samples {check.direction}: up to {check.samples} generated instances all accepted"

"""``contractctl diff OLD NEW``: the compatibility of two schemas, as typed changes and a verdict, and per change
the consumers it breaks or leaves untouched, with their owners (docs/consumer-impact.md)."""

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
    parser.add_argument(
        "--consumers-of",
        default=None,
        metavar="TYPE",
        help="judge the impact on this messageType's consumers (default: OLD's, else NEW's, when either is a "
        "messageType or the payload schema file of a catalogue version)",
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
    impact, impact_note = _impact(args, old, new, verdict.changes, dialect)
    refuted = [c for c in checks if not c.holds]
    compatible = verdict.compatible and not refuted
    if args.format == "json":
        document = {**verdict.to_dict(), "compatible": compatible}
        if impact is not None:  # per change under impact.changes: "changes" keeps its documented shape
            document["impact"] = impact.to_dict()
        if impact_note:
            document["impactNote"] = impact_note
        document["dialects"] = {side: r.to_dict() for side, r in readings.items() if r is not None}
        if args.verify_samples:
            document["samples"] = [check.to_dict() for check in checks]
        emit_json(document)
    else:
        for side, label in (("old", old_label), ("new", new_label)):
            reading = readings[side]
            if reading is not None:
                out(f"{side:<4} {label}: read as {reading.describe()}")
        for index, change in enumerate(verdict.changes):
            mark = "ok  " if change.compatible else "FAIL"
            out(f"{mark} {change.rule:<28} {change.path or '/'}  {change.message}")
            if impact is not None:
                out(_describe_change_impact(impact, index))
        for check in checks:
            out(_describe_check(check))
        if impact is not None:
            for line in _describe_consumers(impact):
                out(line)
        elif impact_note:
            out(impact_note)
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


def _in_catalogue(argument: str, root: Path) -> bool:
    """A messageType, or a file under the catalogue folder: an argument that may name a version with consumers."""
    path = Path(argument)
    if not _is_file(path):
        return True  # _resolve accepted it as a messageType
    try:
        return path.resolve().is_relative_to(root.resolve())
    except OSError:
        return False


def _contract_of(argument: str, catalog: Any) -> Any:
    """The catalogue version a diff argument names: a messageType, or the path of its payload schema file."""
    if argument in catalog:
        return catalog.get(argument)
    path = Path(argument)
    if _is_file(path):
        resolved = path.resolve()
        return next((c for c in catalog if c.schema_file.resolve() == resolved), None)
    return None


def _impact(args: argparse.Namespace, old: Any, new: Any, changes: Any, dialect: str) -> tuple[Any, str | None]:
    """(the per-consumer impact or None, a note saying why it is missing when it is asked for and cannot be had)."""
    from contract_platform import settings
    from contract_platform.catalog.loading import load_catalog
    from contract_platform.errors import CatalogError
    from contract_platform.impact import contacts_of, impact_of

    root = Path(args.catalog or settings.catalog_dir())
    if not args.consumers_of and not any(_in_catalogue(argument, root) for argument in (args.old, args.new)):
        return None, None  # two files outside the catalogue: no consumers to judge
    try:
        catalog = load_catalog(root, default_dialect=dialect)
    except CatalogError as exc:
        if args.consumers_of:
            raise UsageError(f"--consumers-of needs the catalogue {root}, which does not load: {exc}") from exc
        return None, f"consumer impact not shown: the catalogue {root} does not load (contractctl lint says why)"
    if args.consumers_of:
        contract = catalog.get(args.consumers_of)
        if contract is None:
            raise UsageError(f"--consumers-of {args.consumers_of!r} is not a messageType of the catalogue {root}")
    else:
        contract = _contract_of(args.old, catalog) or _contract_of(args.new, catalog)
        if contract is None:
            return None, None  # two files outside the catalogue: no consumers to judge
    impact = impact_of(
        changes,
        contract.consumers,
        old_schema=old,
        new_schema=new,
        services=contacts_of(catalog),
        fallback_owner=contract.owner,
        policy=args.policy,
        default_dialect=dialect,
        message_type=contract.message_type,
    )
    return impact, None


def _describe_change_impact(impact: Any, index: int) -> str:
    change = impact.changes[index]
    where = ", ".join(change.pointers)
    broken = ", ".join(change.broken) or "none"
    untouched = ", ".join(change.untouched) or "none"
    reading = f"; read by {', '.join(change.reading)} (the mode allows it)" if change.reading else ""
    return f"     at {where}: breaks {broken}{reading}; untouched {untouched}"


def _describe_consumers(impact: Any) -> list[str]:
    lines = [
        f"consumers of {impact.message_type}: {len(impact.broken)} of {len(impact.consumers)} broken"
        + (f" ({', '.join(c.service for c in impact.broken)})" if impact.broken else "")
    ]
    for consumer in impact.consumers:
        mark = "BROKEN   " if consumer.broken else "reads    " if consumer.reading else "untouched"
        reads = "reads everything" if consumer.declares == "everything" else f"declares {consumer.declares}"
        line = f"  {mark} {consumer.service} ({consumer.queue}; {reads}) owner {consumer.who}"
        if consumer.breaking:
            shown = [impact.changes[i].change for i in consumer.breaking[:3]]
            more = f" and {len(consumer.breaking) - 3} more" if len(consumer.breaking) > 3 else ""
            line += " broken by " + "; ".join(f"{c.rule} at {c.path or '/'}" for c in shown) + more
        elif consumer.reading:
            shown = [impact.changes[i] for i in consumer.reading[:3]]
            line += " reads what changes (the mode allows it): " + ", ".join(
                dict.fromkeys(p for c in shown for p in c.pointers)
            )
        lines.append(line)
        for refusal in consumer.refusals[:3]:
            lines.append(f"      its reader schema refuses {', '.join(refusal.pointers)}: {refusal.message}")
        if consumer.note:
            lines.append(f"      {consumer.note}")
    return lines

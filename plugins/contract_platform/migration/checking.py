"""Checking a migration before anything runs: does the spec fit the two contracts, and do the fixtures migrate?

``check_spec`` answers, with a ``Problem`` (file + JSON pointer) per finding:

- names: ``from``/``to`` are the two contracts given;
- fields: every pointer names a field of its schema;
- produced: every required target field (nested ones too) is produced by some op;
- used: every source field (nested ones where an op reads inside an object) is read or dropped;
- types: each op's source and target line up; constants, defaults, mapped values and exponents
  validate against the target subschema (with the one ``EnvelopeValidator``);
- overwrites: no field is written twice, and nothing dropped is also read;
- fixtures: every valid source fixture, migrated, validates against the target, and equals the
  target fixture of the same file name where there is one.

The fixtures are migrated only once the spec itself checks clean: a spec with problems would
only repeat them once per fixture (``fixtures_checked`` is 0 then).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from contract_platform.catalog.documents import pointer_from_path, resolve_pointer
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.catalog.pointers import schema_for_pointer, split_pointer
from contract_platform.envelope.validation import EnvelopeValidator
from contract_platform.errors import MessageNotMigratable, MigrationSpecError, Problem
from contract_platform.evidence import EvidenceKind, Verdict
from contract_platform.evidence.figures import MigrationSpecFigures
from contract_platform.migration.engine import migrate_envelope
from contract_platform.migration.spec import (
    Constant,
    Copy,
    DecimalToMinorUnits,
    Default,
    Drop,
    MapEnum,
    MigrationSpec,
    MinorUnitsToDecimal,
    Op,
    ToString,
    describe_value,
    parse_spec,
)

__all__ = ["MigrationCheck", "check_migration", "check_spec", "unread_fields"]

_MAX_DEPTH = 8  # nested fields followed this deep (recursive $refs stop here)
_EVIDENCE_PROBLEMS = 50


@dataclass(frozen=True)
class MigrationCheck:
    """The verdict on one contract's ``migration.yaml``: recorded as ``migration_spec`` evidence."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.MIGRATION_SPEC

    message_type: str  # the contract that holds the migration (the target)
    source: str  # the messageType it migrates from
    ok: bool
    problems: list[Problem] = field(default_factory=list)
    fixtures_checked: int = 0

    @property
    def verdict(self) -> Verdict:
        return Verdict.PASS if self.ok else Verdict.FAIL

    def evidence_figures(self) -> MigrationSpecFigures:
        return MigrationSpecFigures(
            source=self.source,
            target=self.message_type,
            ok=self.ok,
            fixtures_checked=self.fixtures_checked,
            problem_count=len(self.problems),
            problems=tuple(str(problem) for problem in self.problems[:_EVIDENCE_PROBLEMS]),
        )

    def to_evidence(self) -> dict[str, Any]:
        """The stored ``migration_spec`` figures (snake_case JSON)."""
        return self.evidence_figures().to_json()


# -- schema facts ---------------------------------------------------------------------------------


def _deref(root: Mapping[str, Any], node: Any) -> Any:
    for _ in range(32):
        if not (isinstance(node, Mapping) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#")):
            break
        try:
            node = resolve_pointer(root, node["$ref"][1:])
        except KeyError:
            return None
    return node


def _field(root: Mapping[str, Any], pointer: str | list[str]) -> Any:
    """The subschema describing ``pointer`` (a JSON pointer or its tokens), or None."""
    tokens = split_pointer(pointer) if isinstance(pointer, str) else pointer
    return schema_for_pointer(root, tokens)


_JSON_TYPE = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    return next((name for cls, name in _JSON_TYPE if isinstance(value, cls)), "object")


def _types(root: Mapping[str, Any], node: Any, depth: int = 0) -> frozenset[str] | None:
    """The JSON types a subschema accepts, or None when it does not say."""
    node = _deref(root, node)
    if not isinstance(node, Mapping) or depth > _MAX_DEPTH:
        return None
    declared = node.get("type")
    if isinstance(declared, str):
        return frozenset([declared])
    if isinstance(declared, list):
        return frozenset(str(t) for t in declared)
    if "const" in node:
        return frozenset([_type_of(node["const"])])
    if isinstance(node.get("enum"), list):
        return frozenset(_type_of(value) for value in node["enum"])
    for keyword in ("anyOf", "oneOf"):
        branches = node.get(keyword)
        if isinstance(branches, list) and branches:
            found = [_types(root, branch, depth + 1) for branch in branches]
            return None if any(t is None for t in found) else frozenset().union(*(t for t in found if t))
    return None


def _fits(values: frozenset[str], accepted: frozenset[str]) -> bool:
    """Every type in ``values`` is accepted (an integer is a number)."""
    return all(t in accepted or (t == "integer" and "number" in accepted) for t in values)


def _shown(types: frozenset[str]) -> str:
    return "/".join(sorted(types))


def _enum(root: Mapping[str, Any], node: Any) -> list[Any] | None:
    node = _deref(root, node)
    if isinstance(node, Mapping) and isinstance(node.get("enum"), list):
        return list(node["enum"])
    return None


def _required_names(root: Mapping[str, Any], node: Any) -> list[str]:
    node = _deref(root, node)
    if not isinstance(node, Mapping):
        return []
    names = [n for n in node.get("required") or [] if isinstance(n, str)]
    for branch in node.get("allOf") or []:
        names.extend(_required_names(root, branch))
    return names


def _property_names(root: Mapping[str, Any], node: Any) -> list[str]:
    node = _deref(root, node)
    properties = node.get("properties") if isinstance(node, Mapping) else None
    return list(properties) if isinstance(properties, Mapping) else []


def _always_present(root: Mapping[str, Any], pointer: str) -> bool:
    """Every step of ``pointer`` is a required property, so every valid message has the field."""
    tokens = split_pointer(pointer)
    return all(token in _required_names(root, _field(root, tokens[:i])) for i, token in enumerate(tokens))


def _within(inner: str, outer: str) -> bool:
    return inner == outer or inner.startswith(outer + "/")


# -- what each op reads and writes ----------------------------------------------------------------


def _reads(op: Op) -> list[tuple[str, str]]:
    """(pointer into the source payload, key in the op) for every field the op reads."""
    reads: list[tuple[str, str]] = []
    if not isinstance(op, Default | Constant):
        reads.append((op.source, "from"))
    if isinstance(op, DecimalToMinorUnits | MinorUnitsToDecimal) and op.currency_source is not None:
        reads.append((op.currency_source, "currencyFrom"))
    if isinstance(op, MinorUnitsToDecimal) and op.exponent_source is not None:
        reads.append((op.exponent_source, "exponentFrom"))
    return reads


def _writes(op: Op) -> list[tuple[str, str]]:
    """(pointer into the target payload, key in the op) for every field the op writes."""
    writes: list[tuple[str, str]] = []
    if not isinstance(op, Drop):
        writes.append((op.target, "to"))
    if isinstance(op, DecimalToMinorUnits) and op.exponent_target is not None:
        writes.append((op.exponent_target, "exponentTo"))
    return writes


# -- the checks, one per concern ------------------------------------------------------------------


@dataclass(frozen=True)
class _Context:
    spec: MigrationSpec
    source: Contract
    target: Contract
    validator: EnvelopeValidator

    def problem(self, pointer: str, message: str) -> Problem:
        return Problem(self.spec.file, pointer, message)

    def invalid_for_target(self, pointer: str, value: Any) -> str | None:
        """Why ``value`` is not valid at ``pointer`` of the target payload, or None if it is."""
        node = _field(self.target.payload_schema, pointer)
        if node is None:
            return None
        compiled = self.validator.payload_validator(self.target).evolve(schema=node)  # keeps the root's $refs
        errors = list(compiled.iter_errors(value))
        return errors[0].message if errors else None


def _check_names(ctx: _Context) -> Iterator[Problem]:
    if ctx.spec.source != ctx.source.message_type:
        yield ctx.problem(
            "/from", f"names {ctx.spec.source}, but the messages to migrate are {ctx.source.message_type}"
        )
    if ctx.spec.target != ctx.target.message_type:
        yield ctx.problem(
            "/to", f"names {ctx.spec.target}, but this migration.yaml belongs to {ctx.target.message_type}"
        )


def _check_fields_exist(ctx: _Context) -> Iterator[Problem]:
    for op in ctx.spec.ops:
        for pointer, key in _reads(op):
            if _field(ctx.source.payload_schema, pointer) is None:
                yield ctx.problem(f"{op.at}/{key}", f"{ctx.source.message_type} has no payload field {pointer}")
        for pointer, key in _writes(op):
            if _field(ctx.target.payload_schema, pointer) is None:
                yield ctx.problem(f"{op.at}/{key}", f"{ctx.target.message_type} has no payload field {pointer}")


def _required_targets(ctx: _Context) -> list[str]:
    """Required target fields: top level, nested under required objects and under objects ops create."""
    root = ctx.target.payload_schema
    required: list[str] = []

    def collect(tokens: list[str]) -> None:
        for name in _required_names(root, _field(root, tokens)):
            child = [*tokens, name]
            if pointer_from_path(child) not in required:
                required.append(pointer_from_path(child))
                if len(child) < _MAX_DEPTH:
                    collect(child)

    collect([])
    for op in ctx.spec.ops:
        for pointer, _ in _writes(op):
            tokens = split_pointer(pointer)
            for end in range(1, len(tokens)):
                collect(tokens[:end])
    return required


def _check_required_produced(ctx: _Context) -> Iterator[Problem]:
    writers = [(pointer, op) for op in ctx.spec.ops for pointer, _ in _writes(op)]
    for required in _required_targets(ctx):
        producing = [op for pointer, op in writers if _within(required, pointer) or _within(pointer, required)]
        if not producing:
            yield ctx.problem(
                "/payload",
                f"{ctx.target.message_type} requires {required} but no op produces it; "
                "add a copy, a conversion, a default or a constant",
            )
        elif not any(isinstance(op, Default | Constant) for op in producing):
            root = ctx.source.payload_schema
            sometimes = [op for op in producing if not all(_always_present(root, p) for p, _ in _reads(op))]
            if len(sometimes) == len(producing):
                yield ctx.problem(
                    f"{sometimes[0].at}/from",
                    f"{ctx.target.message_type} requires {required}, but it comes only from optional "
                    f"{ctx.source.message_type} fields; add a default for messages without them",
                )


def unread_fields(spec: MigrationSpec, source: Contract) -> list[str]:
    """The ``source`` payload fields no op of ``spec`` reads (nested ones where an op reads inside an object)."""
    root = source.payload_schema
    reads = [pointer for op in spec.ops for pointer, _ in _reads(op)]

    def unused(tokens: list[str]) -> list[str]:
        pointer = pointer_from_path(tokens)
        if any(_within(pointer, read) for read in reads):
            return []
        children = _property_names(root, _field(root, tokens))
        if children and len(tokens) < _MAX_DEPTH and any(_within(read, pointer) for read in reads):
            return [found for name in children for found in unused([*tokens, name])]
        return [pointer]

    return [pointer for name in _property_names(root, root) for pointer in unused([name])]


def _check_sources_used(ctx: _Context) -> Iterator[Problem]:
    for pointer in unread_fields(ctx.spec, ctx.source):
        yield ctx.problem(
            "/payload",
            f"{ctx.source.message_type} field {pointer} is neither used by an op nor dropped; "
            "copy or convert it, or drop it with a reason",
        )


def _check_copy(ctx: _Context, op: Copy) -> Iterator[Problem]:
    source_root, target_root = ctx.source.payload_schema, ctx.target.payload_schema
    old, new = _field(source_root, op.source), _field(target_root, op.target)
    old_types, new_types = _types(source_root, old), _types(target_root, new)
    if old_types and new_types and not _fits(old_types, new_types):
        yield ctx.problem(
            f"{op.at}/to",
            f"copies {op.source} ({_shown(old_types)}) into {op.target} ({_shown(new_types)}); "
            "use a conversion op (toString, decimalToMinorUnits, mapEnum) instead",
        )
    old_enum, new_enum = _enum(source_root, old), _enum(target_root, new)
    if old_enum is not None and new_enum is not None:
        missing = [value for value in old_enum if value not in new_enum]
        if missing:
            yield ctx.problem(
                f"{op.at}/to",
                f"{ctx.source.message_type} values {missing} of {op.source} are not in the enum of {op.target}; "
                "use mapEnum",
            )


def _check_decimal(ctx: _Context, op: DecimalToMinorUnits) -> Iterator[Problem]:
    source_root, target_root = ctx.source.payload_schema, ctx.target.payload_schema
    old_types = _types(source_root, _field(source_root, op.source))
    if old_types and old_types != {"string"}:
        yield ctx.problem(f"{op.at}/from", f"reads a decimal string, but {op.source} is {_shown(old_types)}")
    outputs = [(op.target, "to")] + ([(op.exponent_target, "exponentTo")] if op.exponent_target else [])
    for pointer, key in outputs:
        new_types = _types(target_root, _field(target_root, pointer))
        if new_types and not _fits(frozenset(["integer"]), new_types):
            yield ctx.problem(f"{op.at}/{key}", f"writes an integer, but {pointer} is {_shown(new_types)}")
    if op.currency_source is not None:
        currency = _field(source_root, op.currency_source)
        currency_types = _types(source_root, currency)
        if currency_types and currency_types != {"string"}:
            yield ctx.problem(f"{op.at}/currencyFrom", f"{op.currency_source} is {_shown(currency_types)}, not a code")
        if op.default_exponent is None:
            unknown = [code for code in _enum(source_root, currency) or [] if code not in op.exponents]
            if unknown:
                yield ctx.problem(f"{op.at}/exponents", f"currencies {unknown} have no exponent and no defaultExponent")
    if op.exponent_target is not None:
        exponents = [(f"{op.at}/exponents{pointer_from_path([c])}", e) for c, e in op.exponents.items()]
        exponents += [
            (f"{op.at}/{key}", e)
            for key, e in (("defaultExponent", op.default_exponent), ("exponent", op.exponent))
            if e is not None
        ]
        for where, exponent in exponents:
            why = ctx.invalid_for_target(op.exponent_target, exponent)
            if why:
                yield ctx.problem(where, f"exponent {exponent} is not valid for {op.exponent_target}: {why}")


def _check_minor_units(ctx: _Context, op: MinorUnitsToDecimal) -> Iterator[Problem]:
    source_root, target_root = ctx.source.payload_schema, ctx.target.payload_schema
    inputs = [(op.source, "from")] + ([(op.exponent_source, "exponentFrom")] if op.exponent_source else [])
    for pointer, key in inputs:
        old_types = _types(source_root, _field(source_root, pointer))
        if old_types and old_types != {"integer"}:
            yield ctx.problem(f"{op.at}/{key}", f"reads an integer, but {pointer} is {_shown(old_types)}")
    new_types = _types(target_root, _field(target_root, op.target))
    if new_types and "string" not in new_types:
        yield ctx.problem(f"{op.at}/to", f"writes a decimal string, but {op.target} is {_shown(new_types)}")
    if op.currency_source is not None:
        currency_types = _types(source_root, _field(source_root, op.currency_source))
        if currency_types and currency_types != {"string"}:
            yield ctx.problem(f"{op.at}/currencyFrom", f"{op.currency_source} is {_shown(currency_types)}, not a code")


def _check_map_enum(ctx: _Context, op: MapEnum) -> Iterator[Problem]:
    source_root = ctx.source.payload_schema
    old = _field(source_root, op.source)
    old_types = _types(source_root, old)
    if old_types and old_types != {"string"}:
        yield ctx.problem(f"{op.at}/from", f"mapEnum maps strings, but {op.source} is {_shown(old_types)}")
    old_enum = _enum(source_root, old)
    if old_enum is not None:
        for key in op.mapping:
            if key not in old_enum:
                yield ctx.problem(
                    f"{op.at}/mapping{pointer_from_path([key])}", f"{key!r} is not a value of {op.source}"
                )
        unmapped = [value for value in old_enum if value not in op.mapping]
        if unmapped and not op.has_default:
            yield ctx.problem(
                f"{op.at}/mapping", f"values {unmapped} of {op.source} have no mapping and there is no default"
            )
    values = [(f"{op.at}/mapping{pointer_from_path([k])}", v) for k, v in op.mapping.items()]
    for where, value in values + ([(f"{op.at}/default", op.default)] if op.has_default else []):
        why = ctx.invalid_for_target(op.target, value)
        if why:
            yield ctx.problem(where, f"{describe_value(value)} is not valid for {op.target}: {why}")


def _check_to_string(ctx: _Context, op: ToString) -> Iterator[Problem]:
    source_root, target_root = ctx.source.payload_schema, ctx.target.payload_schema
    old_types = _types(source_root, _field(source_root, op.source))
    if old_types and not _fits(old_types, frozenset(["number"])):
        yield ctx.problem(f"{op.at}/from", f"toString turns numbers into text, but {op.source} is {_shown(old_types)}")
    new_types = _types(target_root, _field(target_root, op.target))
    if new_types and "string" not in new_types:
        yield ctx.problem(f"{op.at}/to", f"toString writes a string, but {op.target} is {_shown(new_types)}")


def _check_value(ctx: _Context, op: Default | Constant) -> Iterator[Problem]:
    why = ctx.invalid_for_target(op.target, op.value)
    if why:
        yield ctx.problem(f"{op.at}/value", f"{describe_value(op.value)} is not valid for {op.target}: {why}")


_TYPE_CHECKS: Mapping[type[Any], Callable[[_Context, Any], Iterator[Problem]]] = {
    Copy: _check_copy,
    DecimalToMinorUnits: _check_decimal,
    MinorUnitsToDecimal: _check_minor_units,
    MapEnum: _check_map_enum,
    ToString: _check_to_string,
    Default: _check_value,
    Constant: _check_value,
    Drop: lambda ctx, op: iter(()),
}


def _check_types(ctx: _Context) -> Iterator[Problem]:
    for op in ctx.spec.ops:
        yield from _TYPE_CHECKS[type(op)](ctx, op)


def _check_overwrites(ctx: _Context) -> Iterator[Problem]:
    written: dict[tuple[str, bool], str] = {}  # (target, is a default) -> op that wrote it first
    for op in ctx.spec.ops:
        for pointer, key in _writes(op):
            first = written.setdefault((pointer, isinstance(op, Default)), op.at)
            if first != op.at:
                yield ctx.problem(f"{op.at}/{key}", f"{pointer} is already written by the op at {first}")
    dropped = [(op.source, op.at) for op in ctx.spec.ops if isinstance(op, Drop)]
    for op in ctx.spec.ops:
        if isinstance(op, Drop):
            continue
        for pointer, _ in _reads(op):
            for drop, at in dropped:
                if _within(pointer, drop) or _within(drop, pointer):
                    yield ctx.problem(f"{at}/from", f"{drop} is dropped, yet the op at {op.at} reads {pointer}")


def _differences(old: Any, new: Any, pointer: str = "") -> Iterator[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            if key not in old or key not in new:
                yield pointer + pointer_from_path([key])
            else:
                yield from _differences(old[key], new[key], pointer + pointer_from_path([key]))
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            yield from _differences(a, b, f"{pointer}/{index}")
    elif old != new or _type_of(old) != _type_of(new):
        yield pointer


def _check_fixtures(ctx: _Context, counter: list[int]) -> Iterator[Problem]:
    twins = {fixture.name: fixture for fixture in ctx.target.fixtures if fixture.valid}
    for fixture in (f for f in ctx.source.fixtures if f.valid):
        counter[0] += 1
        try:
            migrated = migrate_envelope(ctx.spec, fixture.document, ctx.target)
        except MessageNotMigratable as exc:
            yield Problem(str(fixture.path), exc.pointer, f"cannot be migrated: {exc.described}")
            continue
        _, issues = ctx.validator.issues(migrated)
        for issue in issues:
            yield Problem(
                str(fixture.path),
                issue.pointer,
                f"migrated, it is not a valid {ctx.target.message_type}: {issue.message}",
            )
        twin = twins.get(fixture.name)
        if twin is not None and not issues:
            for pointer in [p for p in _differences(migrated, twin.document) if not _same_major(ctx, twin, p)][:5]:
                yield Problem(
                    str(twin.path),
                    pointer,
                    f"migrating {ctx.source.message_type} fixture {fixture.name} gives "
                    f"{_describe_at(migrated, pointer)} here, this fixture has {_describe_at(twin.document, pointer)}",
                )


def _same_major(ctx: _Context, twin: Any, pointer: str) -> bool:
    """A twin fixture may be of any minor version of the target's major: the migrated message carries the
    target contract's version, as parity compares it (``parity._metadata_differences``)."""
    if pointer != "/metadata/messageVersion":
        return False
    version = twin.document.get("metadata", {}).get("messageVersion")
    return isinstance(version, str) and version.split(".", 1)[0] == str(ctx.target.major)


def _describe_at(document: Any, pointer: str) -> str:
    try:
        return describe_value(resolve_pointer(document, pointer))
    except KeyError:
        return "nothing"


# -- entry points ---------------------------------------------------------------------------------

_CHECKS: tuple[Callable[[_Context], Iterator[Problem]], ...] = (
    _check_names,
    _check_fields_exist,
    _check_required_produced,
    _check_sources_used,
    _check_types,
    _check_overwrites,
)


def _run(spec: MigrationSpec, source: Contract, target: Contract, validator: EnvelopeValidator) -> MigrationCheck:
    ctx = _Context(spec, source, target, validator)
    problems = [problem for check in _CHECKS for problem in check(ctx)]
    counter = [0]
    if not problems:
        problems.extend(_check_fixtures(ctx, counter))
    return MigrationCheck(target.message_type, spec.source, not problems, problems, counter[0])


def check_spec(spec: MigrationSpec, source: Contract, target: Contract, validator: EnvelopeValidator) -> list[Problem]:
    """Every reason ``spec`` does not migrate ``source`` messages into valid ``target`` ones; [] = fit to run."""
    return _run(spec, source, target, validator).problems


def check_migration(catalog: Catalog, contract: Contract) -> MigrationCheck:
    """Parse and check ``contract``'s migration.yaml in its catalogue; MigrationSpecError if it does not parse."""
    file = str(contract.migration_file)
    if contract.migration is None:
        raise MigrationSpecError(Problem(file, "", f"{contract.message_type} has no migration.yaml to check"))
    spec = parse_spec(contract.migration, file)
    source = catalog.get(spec.source)
    previous = catalog.predecessor(contract)
    problems: list[Problem] = []
    if previous is not None and previous.message_type != spec.source:
        problems.append(
            Problem(
                file,
                "/from",
                f"names {spec.source}, but the major before {contract.message_type} is {previous.message_type}",
            )
        )
    if source is None:
        problems.append(Problem(file, "/from", f"{spec.source} is not in the catalogue"))
        return MigrationCheck(contract.message_type, spec.source, False, problems, 0)
    result = _run(spec, source, contract, EnvelopeValidator(catalog))
    problems.extend(result.problems)
    return MigrationCheck(contract.message_type, spec.source, not problems, problems, result.fixtures_checked)

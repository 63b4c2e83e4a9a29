"""JSON Schema handling shared by the loader, the validators, the linter and the diff.

Which draft a schema is written in (draft-04, -06, -07, 2019-09, 2020-12: ``$schema``, else the
keywords only one family of drafts defines, else the catalogue default; :func:`read_dialect`),
checking a schema against its own draft's metaschema, walking its references, and building
validators that never leave the catalogue.

References: ``$ref``, ``$dynamicRef`` and ``$recursiveRef`` are looked for at *schema positions*
only (the value of ``not``, each value under ``properties``, each item of ``allOf``...), never inside
data (``const``, ``enum``, ``default``, ``examples``), so a property that happens to be called
``const`` is a property. A reference may name the schema's own resources (its root, an embedded
``$id``, an anchor); anything else (``http://...``, ``file:///...``, another file) is a forbidden
reference. Validators get a ``referencing`` registry whose retrieval refuses every URI, so nothing
is ever fetched from the network or the file system, whatever a schema says.

Regular expressions (``pattern``, ``patternProperties`` and the names ``additionalProperties`` and
``unevaluatedProperties`` weigh against them, ``format: regex``) are evaluated by ``contract_platform.patterns``
in linear time, never by Python's backtracking ``re``: every validator class here is the library's
draft class with those keywords and that format replaced. A pattern the platform will not evaluate
raises ``PatternNotEvaluable`` from validation; ``pattern_problems`` finds such patterns up front.

jsonschema's errors are mapped to ``Problem`` here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final
from urllib.parse import unquote, urldefrag, urljoin

import referencing
import referencing.jsonschema
from jsonschema import (
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
    FormatChecker,
)
from jsonschema.exceptions import SchemaError as JsonSchemaSchemaError
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend
from referencing.exceptions import NoSuchResource

from contract_platform.catalog.documents import pointer_from_path, resolve_pointer
from contract_platform.errors import Problem
from contract_platform.patterns import is_regex, pattern_problem, search

__all__ = [
    "DEFAULT_DIALECT",
    "DRAFTS",
    "Draft",
    "Marker",
    "Reading",
    "Reference",
    "catalogue_registry",
    "check_schema",
    "dialect_of",
    "dialect_markers",
    "iter_refs",
    "pattern_problems",
    "pin_dialect",
    "read_dialect",
    "refuse_retrieval",
    "schema_problems",
    "subschemas",
    "validator_class",
    "validator_for",
]

REF_KEYWORDS: Final = ("$ref", "$dynamicRef", "$recursiveRef")
_BASE: Final = "https://schema.contract-platform.invalid/root.json"  # base URI of a schema without $id


# -- regular expressions in linear time (contract_platform.patterns) --------------------------------


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and isinstance(pattern, str) and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object") or not isinstance(patterns, Mapping):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if search(pattern, name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> set[str]:
    """The names neither ``properties`` nor a ``patternProperties`` pattern of ``schema`` governs."""
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    return {
        name for name in instance if name not in properties and not any(search(pattern, name) for pattern in patterns)
    }


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    extras = _additional(instance, schema)
    if validator.is_type(additional, "object"):
        for extra in sorted(extras):
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        names = ", ".join(repr(each) for each in sorted(extras))
        if "patternProperties" in schema:
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            verb = "does" if len(extras) == 1 else "do"
            yield ValidationError(f"{names} {verb} not match any of the regexes: {patterns}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({names} {verb} unexpected)")


def _valid(errors: Iterator[ValidationError]) -> bool:
    return next(errors, None) is None


def _evaluated_names(validator: Any, instance: Mapping[str, Any], schema: Any) -> set[str]:
    """The names of ``instance`` that ``schema`` evaluates, for ``unevaluatedProperties`` (2019-09, 2020-12):
    the library's walk, with ``patternProperties`` matched in linear time."""
    if not isinstance(schema, Mapping):
        return set()
    found: set[str] = set()
    resolver: Any = validator._resolver  # the library's own walk of unevaluatedProperties uses it too
    for keyword in ("$ref", "$dynamicRef", "$recursiveRef"):
        target = schema.get(keyword)
        if not isinstance(target, str):
            continue
        resolved = resolver.lookup(target)
        inner = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
        found |= _evaluated_names(inner, instance, resolved.contents)
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        found |= properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        if (subschema := schema.get(keyword)) is not None:
            found |= {name for name, value in instance.items() if _valid(validator.descend(value, subschema))}
    patterns = schema.get("patternProperties")
    if isinstance(patterns, Mapping):
        found |= {name for name in instance if any(search(pattern, name) for pattern in patterns)}
    dependent = schema.get("dependentSchemas")
    if isinstance(dependent, Mapping):
        for name, subschema in dependent.items():
            if name in instance:
                found |= _evaluated_names(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []) or []:
            if _valid(validator.descend(instance, subschema)):
                found |= _evaluated_names(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            found |= _evaluated_names(validator, instance, schema["if"])
            if "then" in schema:
                found |= _evaluated_names(validator, instance, schema["then"])
        elif "else" in schema:
            found |= _evaluated_names(validator, instance, schema["else"])
    return found


def _unevaluated_properties(
    validator: Any, unevaluated: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_names(validator, instance, schema)
    rejected = [
        name
        for name in instance
        if name not in evaluated
        and not _valid(validator.descend(instance[name], unevaluated, path=name, schema_path=name))
    ]
    if rejected:
        names = ", ".join(repr(each) for each in sorted(rejected))
        verb = "was" if len(rejected) == 1 else "were"
        if unevaluated is False:
            yield ValidationError(f"Unevaluated properties are not allowed ({names} {verb} unexpected)")
        else:
            yield ValidationError(
                f"Unevaluated properties are not valid under the given schema ({names} {verb} unevaluated and invalid)"
            )


def _regex_format(value: object) -> bool:
    return not isinstance(value, str) or is_regex(value)


def _bounded_formats(library: FormatChecker) -> FormatChecker:
    checker = FormatChecker(formats=())
    checker.checkers = dict(library.checkers)
    checker.checks("regex")(_regex_format)
    return checker


def _bounded(library: type[Validator]) -> type[Validator]:
    """The library's draft class with every regular expression evaluated in linear time."""
    keywords: dict[str, Any] = {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    }
    if "unevaluatedProperties" in library.VALIDATORS:
        keywords["unevaluatedProperties"] = _unevaluated_properties
    # jsonschema's stubs leave validators.extend untyped; it returns a class of the library's kind
    cls: type[Validator] = extend(library, keywords, format_checker=_bounded_formats(library.FORMAT_CHECKER))  # type: ignore[no-untyped-call]
    cls.__name__ = cls.__qualname__ = library.__name__  # the same draft: jsonschema-rs is looked up by this name
    return cls


@dataclass(frozen=True)
class Draft:
    """One supported JSON Schema dialect: its name, canonical ``$schema`` URI and jsonschema class
    (``validator``: the library's, regular expressions in linear time; ``library``: the library's own)."""

    name: str
    uri: str
    library: type[Validator]
    order: int  # 4, 6, 7, 2019, 2020: lets callers ask "is this draft-07 or older?"

    @property
    def validator(self) -> type[Validator]:
        return _BOUNDED[self.library]

    def check_schema(self, schema: Any) -> None:
        """The draft's metaschema check (jsonschema's ``SchemaError``), ``format: regex`` judged in linear time.

        A schema the fast path accepts (``_metaschema_accepts``) is valid; anything else is judged by jsonschema,
        whose error says what and where."""
        cls: Any = self.validator
        if _metaschema_accepts(self, schema, cls.FORMAT_CHECKER):
            return
        cls.check_schema(schema, format_checker=cls.FORMAT_CHECKER)

    @property
    def legacy(self) -> bool:
        """draft-04/06/07: ``$ref`` siblings are ignored, ``items`` arrays and ``dependencies`` apply."""
        return self.order <= 7

    @property
    def specification(self) -> referencing.Specification[Any]:
        return referencing.jsonschema.specification_with(self.uri)


# The fast path of the metaschema check (a 2020-12 metaschema pass costs jsonschema about 3 ms, so a
# catalogue of 2,000 contracts spent most of its loading there). jsonschema-rs answers "valid?" with
# formats off; the formats the metaschemas assert (regex on ``pattern`` and ``patternProperties`` names,
# uri on ``$schema`` and ``$vocabulary`` names, uri-reference on ``$id`` and the reference keywords) are
# then judged by the same format checker jsonschema is given, at every mapping of the schema (data
# positions too: more places than the metaschema looks at, never fewer). Only a schema both accept is
# taken as valid; jsonschema judges every other one, draft-04 (whose integers differ) and booleans.
_FORMAT_VALUES: Final = {
    "pattern": "regex",
    "$schema": "uri",
    "$id": "uri-reference",
    **dict.fromkeys(REF_KEYWORDS, "uri-reference"),
}
_FORMAT_NAMES: Final = {"patternProperties": "regex", "$vocabulary": "uri"}


@lru_cache(maxsize=8)
def _rs_metaschema(library: type[Validator]) -> Any:
    try:
        import jsonschema_rs
    except ImportError:  # pragma: no cover - a declared dependency; jsonschema alone stays correct
        return None
    cls = getattr(jsonschema_rs, library.__name__, None)
    return None if cls is None else cls(library.META_SCHEMA, validate_formats=False)


def _metaschema_accepts(draft: Draft, schema: Any, checker: FormatChecker) -> bool:
    if draft.order < 6 or not isinstance(schema, Mapping):
        return False
    try:
        metaschema = _rs_metaschema(draft.library)
        if metaschema is None or not metaschema.is_valid(schema):
            return False
        stack: list[Any] = [schema]
        while stack:
            node = stack.pop()
            if isinstance(node, Mapping):
                for key, value in node.items():
                    if (
                        key in _FORMAT_VALUES
                        and isinstance(value, str)
                        and not checker.conforms(value, _FORMAT_VALUES[key])
                    ):
                        return False
                    names = value if key in _FORMAT_NAMES and isinstance(value, Mapping) else ()
                    if not all(checker.conforms(name, _FORMAT_NAMES[key]) for name in names):
                        return False
                    stack.append(value)
            elif isinstance(node, list):
                stack.extend(node)
    except Exception:  # anything jsonschema-rs cannot take is judged by jsonschema
        return False
    return True


DRAFTS: Final[Mapping[str, Draft]] = {
    d.name: d
    for d in (
        Draft("draft-04", "http://json-schema.org/draft-04/schema#", Draft4Validator, 4),
        Draft("draft-06", "http://json-schema.org/draft-06/schema#", Draft6Validator, 6),
        Draft("draft-07", "http://json-schema.org/draft-07/schema#", Draft7Validator, 7),
        Draft("2019-09", "https://json-schema.org/draft/2019-09/schema", Draft201909Validator, 2019),
        Draft("2020-12", "https://json-schema.org/draft/2020-12/schema", Draft202012Validator, 2020),
    )
}
DEFAULT_DIALECT: Final = "2020-12"
_BOUNDED: Final[Mapping[type[Validator], type[Validator]]] = {d.library: _bounded(d.library) for d in DRAFTS.values()}


def _key(uri: str) -> str:
    """``$schema`` spellings that name the same draft: scheme and a trailing empty fragment don't matter."""
    return uri.strip().rstrip("#").removeprefix("https://").removeprefix("http://")


_BY_URI: Final = {_key(d.uri): d for d in DRAFTS.values()}


LEGACY: Final = "draft-04..07"
MODERN: Final = "2019-09/2020-12"
# Keywords that belong to one family of drafts only (``items`` counts when it is an array).
_FAMILY_KEYWORDS: Final[Mapping[str, str]] = {
    "additionalItems": LEGACY, "dependencies": LEGACY,
    "prefixItems": MODERN, "$defs": MODERN, "dependentSchemas": MODERN, "dependentRequired": MODERN,
    "unevaluatedItems": MODERN, "unevaluatedProperties": MODERN, "$dynamicRef": MODERN, "$dynamicAnchor": MODERN,
    "$recursiveRef": MODERN, "$recursiveAnchor": MODERN,
}  # fmt: skip
# The drafts a family's keywords point to, the first preferred; the rest follow when it refuses the schema.
_PREFERENCE: Final[Mapping[str, tuple[str, ...]]] = {
    LEGACY: ("draft-07", "draft-06", "draft-04"),
    MODERN: ("2020-12", "2019-09"),
}


@dataclass(frozen=True)
class Marker:
    """A keyword that only one family of drafts defines, where the schema uses it."""

    pointer: str
    keyword: str
    family: str  # LEGACY or MODERN

    def __str__(self) -> str:
        form = "array-form items" if self.keyword == "items" else self.keyword
        return f"{form} at {self.pointer or '/'}"


@dataclass(frozen=True)
class Reading:
    """The draft a schema is read in, and why: ``declared`` ($schema), ``keywords`` (a family's own keywords),
    ``default`` (neither), ``fallback`` (the draft those gave refuses the schema; the first that takes it)."""

    draft: Draft
    source: str
    markers: tuple[Marker, ...] = ()

    @property
    def mixed(self) -> bool:
        """The schema uses keywords of both families: one family's keywords mean nothing in its draft."""
        return len({m.family for m in self.markers}) > 1

    def describe(self) -> str:
        """``draft-07 (no $schema; array-form items at /items)``: the draft and the reason, for people."""
        if self.source == "declared":
            return f"{self.draft.name} ($schema)"
        evidence = "; ".join(str(m) for m in self.markers[:3])
        reason = {
            "keywords": f"no $schema; {evidence}",
            "default": "no $schema, no draft-specific keyword: the default dialect",
            "fallback": "no $schema; the newest draft that accepts the schema as written",
        }[self.source]
        return f"{self.draft.name} ({reason})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.draft.name,
            "uri": self.draft.uri,
            "source": self.source,
            "markers": [{"pointer": m.pointer, "keyword": m.keyword, "family": m.family} for m in self.markers],
        }


def dialect_markers(schema: Any) -> tuple[Marker, ...]:
    """Every keyword of ``schema`` (at schema positions) that only one family of drafts defines."""
    found: list[Marker] = []
    stack: list[tuple[Any, str]] = [(schema, "")]
    while stack:
        node, pointer = stack.pop()
        if not isinstance(node, Mapping):
            continue
        for keyword in node:
            family = _FAMILY_KEYWORDS.get(keyword)
            if keyword == "items" and isinstance(node[keyword], list):
                family = LEGACY
            if family is not None:
                found.append(Marker(pointer + pointer_from_path([keyword]), keyword, family))
        stack.extend(reversed([(sub, at) for _, _, sub, at in subschemas(node, pointer)]))
    return tuple(sorted(found, key=lambda m: m.pointer))


def _refused_by(draft: Draft, schema: Any) -> bool:
    try:
        draft.check_schema(schema)
    except (JsonSchemaSchemaError, RecursionError, ValueError):
        return True
    return False


def read_dialect(schema: Any, default: str = DEFAULT_DIALECT) -> Reading | None:
    """How ``schema`` is read; None when its ``$schema`` names no supported draft.

    ``$schema`` decides when present. Without it, the keywords that only one family of drafts defines
    decide: array-form ``items``, ``additionalItems`` or ``dependencies`` mean draft-04..07 (draft-07 first),
    ``prefixItems``, ``$defs``, ``dependentSchemas``, ``dependentRequired``, ``unevaluated*`` or
    ``$dynamicRef`` mean 2019-09/2020-12 (2020-12 first; 2019-09 first for ``$recursiveRef``). A schema with
    none of them, or with both families' (a lint finding), takes ``default``. When that draft's metaschema
    refuses the schema and another draft's accepts it (a draft-04 boolean ``exclusiveMinimum``), the first
    such draft reads it: only a schema that every draft refuses is refused."""
    declared = schema.get("$schema") if isinstance(schema, Mapping) else None
    if declared is not None:
        draft = _BY_URI.get(_key(declared)) if isinstance(declared, str) else None
        return Reading(draft, "declared") if draft is not None else None
    if not isinstance(schema, Mapping):
        return Reading(DRAFTS[default], "default")
    try:
        text = json.dumps(schema, sort_keys=True, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = None
    if text is None or len(text) > 20_000:
        return _read_undeclared(schema, default)
    return _remembered_reading(text, default)


@lru_cache(maxsize=2048)
def _remembered_reading(text: str, default: str) -> Reading:
    return _read_undeclared(json.loads(text), default)


def _read_undeclared(schema: Mapping[str, Any], default: str) -> Reading:
    try:
        markers = dialect_markers(schema)
    except RecursionError:
        markers = ()
    families = {m.family for m in markers}
    if len(families) == 1:
        (family,) = families
        preferred = _PREFERENCE[family]
        if any(m.keyword in ("$recursiveRef", "$recursiveAnchor") for m in markers):
            preferred = ("2019-09", "2020-12")
        source = "keywords"
    else:
        preferred, source = (default,), "default"
    order = list(dict.fromkeys([*preferred, *sorted(DRAFTS, key=lambda n: -DRAFTS[n].order)]))
    for position, name in enumerate(order):
        if not _refused_by(DRAFTS[name], schema):
            fell_back = position >= len(preferred)
            return Reading(DRAFTS[name], "fallback" if fell_back else source, markers)
    return Reading(DRAFTS[preferred[0]], source, markers)  # refused by every draft: reported under this one


def dialect_of(schema: Any, default: str = DEFAULT_DIALECT) -> Draft | None:
    """The draft ``schema`` is read in (:func:`read_dialect`); None when its ``$schema`` is unsupported."""
    reading = read_dialect(schema, default)
    return reading.draft if reading is not None else None


def pin_dialect(schema: Any, default: str = DEFAULT_DIALECT) -> Any:
    """``schema`` with the ``$schema`` of the draft it is read in, so every later reader (validators in
    jobs, the diff, the docs) reads it the same way whatever default it is given."""
    if not isinstance(schema, Mapping) or "$schema" in schema:
        return schema
    reading = read_dialect(schema, default)
    return {"$schema": reading.draft.uri, **schema} if reading is not None else schema


def validator_class(schema: Any, default: str = DEFAULT_DIALECT) -> type[Validator]:
    """The jsonschema class of the schema's draft (the default's for an unsupported one: lint reports it)."""
    draft = dialect_of(schema, default) or DRAFTS[default]
    return draft.validator


def pattern_problems(file: str, schema: Any, *, default: str = DEFAULT_DIALECT) -> list[Problem]:
    """Every ``pattern`` and ``patternProperties`` name of ``schema`` (at schema positions) the platform will
    not evaluate, each with its pointer and the reason (``contract_platform.patterns``)."""
    problems: list[Problem] = []
    stack: list[tuple[Any, str]] = [(schema, "")]
    while stack:
        node, pointer = stack.pop()
        if not isinstance(node, Mapping):
            continue
        pattern = node.get("pattern")
        if isinstance(pattern, str) and (reason := pattern_problem(pattern)) is not None:
            problems.append(Problem(file, pointer + "/pattern", _pattern_message(pattern, reason)))
        named = node.get("patternProperties")
        if isinstance(named, Mapping):
            for name in named:
                if isinstance(name, str) and (reason := pattern_problem(name)) is not None:
                    at = pointer + pointer_from_path(["patternProperties", name])
                    problems.append(Problem(file, at, _pattern_message(name, reason)))
        stack.extend(reversed(list(_subschemas(node, pointer))))
    return sorted(problems)


def _pattern_message(pattern: str, reason: str) -> str:
    shown = pattern if len(pattern) <= 60 else pattern[:57] + "..."
    return (
        f"the regular expression {shown!r} cannot be evaluated safely: {reason}; write it without lookaround and "
        "backreferences, with repetition counts up to 1000 (contracts/README.md, Regular expressions)"
    )


# -- retrieval that never leaves the catalogue -------------------------------------------------------


def refuse_retrieval(uri: str) -> referencing.Resource[Any]:
    """The retrieve function of every registry: no network, no file system, ever (``NoSuchResource``)."""
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # an attrs class mypy cannot see into


def _resource(schema: Any, default: str) -> referencing.Resource[Any]:
    draft = dialect_of(schema, default) or DRAFTS[default]
    return draft.specification.create_resource(schema)


def catalogue_registry(
    documents: Iterable[tuple[str, Any]] = (), *, default: str = DEFAULT_DIALECT
) -> referencing.Registry[Any]:
    """A registry holding the catalogue's documents ((uri, schema) pairs) whose retrieval refuses all else."""
    registry: referencing.Registry[Any] = referencing.Registry(retrieve=refuse_retrieval)  # type: ignore[call-arg]
    resources = [(uri, _resource(schema, default)) for uri, schema in documents]
    return registry.with_resources(resources) if resources else registry


_EMPTY_REGISTRY: Final = catalogue_registry()


def validator_for(
    schema: Mapping[str, Any] | bool,
    *,
    formats: bool = True,
    registry: referencing.Registry[Any] | None = None,
    default: str = DEFAULT_DIALECT,
) -> Validator:
    """A validator of the schema's own draft, format assertions on, that resolves within the catalogue only."""
    cls = validator_class(schema, default)
    return cls(
        schema,
        format_checker=cls.FORMAT_CHECKER if formats else None,
        registry=_EMPTY_REGISTRY if registry is None else registry,
    )


# -- walking references at schema positions ---------------------------------------------------------

# keyword -> how its value holds subschemas: "schema", "map" (values are schemas), "list", "items"
_SUBSCHEMAS: Final[Mapping[str, str]] = {
    "additionalItems": "schema", "additionalProperties": "schema", "not": "schema", "contains": "schema",
    "propertyNames": "schema", "if": "schema", "then": "schema", "else": "schema",
    "unevaluatedItems": "schema", "unevaluatedProperties": "schema", "contentSchema": "schema",
    "properties": "map", "patternProperties": "map", "definitions": "map", "$defs": "map",
    "dependentSchemas": "map", "dependencies": "map",
    "allOf": "list", "anyOf": "list", "oneOf": "list", "prefixItems": "list",
    "items": "items",
}  # fmt: skip


@dataclass(frozen=True)
class Reference:
    """One reference keyword at a schema position: where it is, which keyword, its value, its absolute URI."""

    pointer: str
    keyword: str
    target: str
    uri: str  # the target resolved against the base URI in force there


def subschemas(node: Mapping[str, Any], pointer: str = "") -> Iterator[tuple[str, str | int | None, Any, str]]:
    """(keyword, property name / index / None, subschema, its pointer) for each subschema directly in
    ``node``, in every draft's keywords (``items`` arrays and ``additionalItems``, ``dependencies``...)."""
    for keyword, value in node.items():
        shape = _SUBSCHEMAS.get(keyword)
        here = pointer + pointer_from_path([keyword])
        if shape == "schema" or (shape == "items" and not isinstance(value, list)):
            yield keyword, None, value, here
        elif shape == "map" and isinstance(value, Mapping):
            for name, sub in value.items():
                if not isinstance(sub, list):  # draft-07 dependencies: a list of names is no schema
                    yield keyword, name, sub, here + pointer_from_path([name])
        elif shape in ("list", "items") and isinstance(value, list):
            for index, sub in enumerate(value):
                yield keyword, index, sub, f"{here}/{index}"


def _subschemas(node: Mapping[str, Any], pointer: str) -> Iterator[tuple[Any, str]]:
    for _, _, sub, here in subschemas(node, pointer):
        yield sub, here


def _join(base: str, ref: str) -> str:
    """RFC 3986 resolution, also for bases urllib will not join against (``urn:``): a fragment stays in ``base``."""
    if ref.startswith("#"):
        return urldefrag(base)[0] + ref
    return urljoin(base, ref)


def _base_after(node: Mapping[str, Any], base: str, draft: Draft) -> str:
    """The base URI inside ``node``: changed by ``$id`` (``id`` in draft-04), not by a plain ``#anchor`` id."""
    ident = node.get("id" if draft.order == 4 else "$id")
    if isinstance(ident, str) and ident and not ident.startswith("#"):
        return urldefrag(_join(base, ident))[0]
    return base


def iter_refs(schema: Any, *, default: str = DEFAULT_DIALECT) -> Iterator[Reference]:
    """Every reference keyword at a schema position, depth first, with its target resolved to a URI."""
    draft = dialect_of(schema, default) or DRAFTS[default]
    stack: list[tuple[Any, str, str]] = [(schema, "", _BASE)]
    while stack:
        node, pointer, base = stack.pop()
        if not isinstance(node, Mapping):
            continue
        base = _base_after(node, base, draft)
        for keyword in REF_KEYWORDS:
            target = node.get(keyword)
            if isinstance(target, str):
                yield Reference(pointer + pointer_from_path([keyword]), keyword, target, _join(base, target))
        stack.extend(reversed(list((sub, at, base) for sub, at in _subschemas(node, pointer))))


def _resources(schema: Any, draft: Draft) -> dict[str, tuple[Any, dict[str, Any]]]:
    """URI -> (resource node, its anchors) for the root and every embedded ``$id`` of ``schema``."""
    found: dict[str, tuple[Any, dict[str, Any]]] = {}
    stack: list[tuple[Any, str, str]] = [(schema, _BASE, _BASE)]
    while stack:
        node, base, resource = stack.pop()
        if not isinstance(node, Mapping):
            continue
        inner = _base_after(node, base, draft)
        if inner != base or not found:
            found.setdefault(inner, (node, {}))
            resource = inner
        anchors = found[resource][1]
        for key in ("$anchor", "$dynamicAnchor"):
            if isinstance(node.get(key), str):
                anchors.setdefault(node[key], node)
        ident = node.get("id" if draft.order == 4 else "$id")
        if isinstance(ident, str) and "#" in ident and draft.legacy:
            anchors.setdefault(ident.split("#", 1)[1], node)
        stack.extend((sub, inner, resource) for sub, _ in _subschemas(node, ""))
    return found


def _reference_problem(file: str, ref: Reference, resources: Mapping[str, tuple[Any, dict[str, Any]]]) -> str | None:
    uri, fragment = urldefrag(ref.uri)
    if uri not in resources:
        return (
            f"forbidden reference: {ref.keyword} {ref.target!r} leaves the catalogue (schemas are never fetched "
            "from the network or the file system); bundle the definition into $defs and use '#/$defs/...'"
        )
    node, anchors = resources[uri]
    if ref.keyword == "$recursiveRef" and ref.target != "#":
        return f"$recursiveRef must be '#', not {ref.target!r}"
    fragment = unquote(fragment)
    if fragment == "" or fragment.startswith("/"):
        try:
            resolve_pointer(node, fragment)
        except KeyError:
            return f"{ref.keyword} {ref.target!r} does not resolve to anything in this schema"
        return None
    if fragment not in anchors:
        return f"{ref.keyword} {ref.target!r} names no anchor of this schema"
    return None


def schema_problems(file: str, schema: Any, *, default: str = DEFAULT_DIALECT) -> list[Problem]:
    """Every reason ``schema`` is not a usable schema: unsupported draft, invalid under its own draft's
    metaschema, forbidden or unresolvable references (each with file and JSON pointer).

    The answer for a small schema is remembered by its JSON text (a history check or a soundness run
    asks about the same schemas again and again)."""
    try:
        text = json.dumps(schema, sort_keys=True, allow_nan=True) if isinstance(schema, Mapping) else None
    except (TypeError, ValueError, RecursionError):
        text = None
    if text is None or len(text) > 20_000:
        return _schema_problems(file, schema, default)
    return list(_remembered_problems(file, text, default))


@lru_cache(maxsize=2048)
def _remembered_problems(file: str, text: str, default: str) -> tuple[Problem, ...]:
    return tuple(_schema_problems(file, json.loads(text), default))


def _schema_problems(file: str, schema: Any, default: str) -> list[Problem]:
    if not isinstance(schema, Mapping | bool):
        return [Problem(file, "", "a schema must be a JSON object or a boolean (true, false)")]
    draft = dialect_of(schema, default)
    if draft is None:
        declared = schema.get("$schema") if isinstance(schema, Mapping) else None
        supported = ", ".join(d.uri for d in DRAFTS.values())
        return [Problem(file, "/$schema", f"unsupported draft {declared!r}; use one of {supported}")]
    problems: list[Problem] = []
    undeclared = not (isinstance(schema, Mapping) and "$schema" in schema)
    try:
        draft.check_schema(schema)
    except JsonSchemaSchemaError as exc:
        # without $schema every draft was tried (read_dialect): none accepts the schema
        others = "; no other supported draft accepts it either" if undeclared else ""
        problems.append(
            Problem(
                file,
                pointer_from_path(exc.absolute_path),
                f"not a valid JSON Schema ({draft.name}): {exc.message}{others}",
            )
        )
    except RecursionError:
        problems.append(Problem(file, "", "not a usable JSON Schema: nested too deeply"))
    except (ValueError, OverflowError) as exc:  # e.g. a number too large to convert
        problems.append(Problem(file, "", f"not a usable JSON Schema: {exc}"))
    try:
        resources = _resources(schema, draft)
        for ref in iter_refs(schema, default=default):
            message = _reference_problem(file, ref, resources)
            if message is not None:
                problems.append(Problem(file, ref.pointer, message))
    except RecursionError:
        problems.append(Problem(file, "", "not a usable JSON Schema: nested too deeply"))
    return problems


def check_schema(file: str, schema: Any, *, default: str = DEFAULT_DIALECT) -> None:
    """Raise ``SchemaError`` for the first problem (for callers that hold one schema, like ``diff``)."""
    from contract_platform.errors import SchemaError

    problems = schema_problems(file, schema, default=default)
    if problems:
        first = problems[0]
        raise SchemaError(first.file, first.pointer, first.message)

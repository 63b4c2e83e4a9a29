"""JSON Schema handling shared by the loader, the validators, the linter and the diff.

Which draft a schema is written in (draft-04, -06, -07, 2019-09, 2020-12, from ``$schema``; the
catalogue default when absent), checking a schema against its own draft's metaschema, walking its
references, and building validators that never leave the catalogue.

References: ``$ref``, ``$dynamicRef`` and ``$recursiveRef`` are looked for at *schema positions*
only (the value of ``not``, each value under ``properties``, each item of ``allOf``...), never inside
data (``const``, ``enum``, ``default``, ``examples``), so a property that happens to be called
``const`` is a property. A reference may name the schema's own resources (its root, an embedded
``$id``, an anchor); anything else (``http://...``, ``file:///...``, another file) is a forbidden
reference. Validators get a ``referencing`` registry whose retrieval refuses every URI, so nothing
is ever fetched from the network or the file system, whatever a schema says.

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
)
from jsonschema.exceptions import SchemaError as JsonSchemaSchemaError
from jsonschema.protocols import Validator
from referencing.exceptions import NoSuchResource

from contract_platform.catalog.documents import pointer_from_path, resolve_pointer
from contract_platform.errors import Problem

__all__ = [
    "DEFAULT_DIALECT",
    "DRAFTS",
    "Draft",
    "Reference",
    "catalogue_registry",
    "check_schema",
    "dialect_of",
    "iter_refs",
    "refuse_retrieval",
    "schema_problems",
    "subschemas",
    "validator_class",
    "validator_for",
]

REF_KEYWORDS: Final = ("$ref", "$dynamicRef", "$recursiveRef")
_BASE: Final = "https://schema.contract-platform.invalid/root.json"  # base URI of a schema without $id


@dataclass(frozen=True)
class Draft:
    """One supported JSON Schema dialect: its name, canonical ``$schema`` URI and jsonschema class."""

    name: str
    uri: str
    validator: type[Validator]
    order: int  # 4, 6, 7, 2019, 2020: lets callers ask "is this draft-07 or older?"

    @property
    def legacy(self) -> bool:
        """draft-04/06/07: ``$ref`` siblings are ignored, ``items`` arrays and ``dependencies`` apply."""
        return self.order <= 7

    @property
    def specification(self) -> referencing.Specification[Any]:
        return referencing.jsonschema.specification_with(self.uri)


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


def _key(uri: str) -> str:
    """``$schema`` spellings that name the same draft: scheme and a trailing empty fragment don't matter."""
    return uri.strip().rstrip("#").removeprefix("https://").removeprefix("http://")


_BY_URI: Final = {_key(d.uri): d for d in DRAFTS.values()}


def dialect_of(schema: Any, default: str = DEFAULT_DIALECT) -> Draft | None:
    """The draft ``schema`` declares with ``$schema`` (``default`` when it declares none); None if unsupported."""
    declared = schema.get("$schema") if isinstance(schema, Mapping) else None
    if declared is None:
        return DRAFTS[default]
    return _BY_URI.get(_key(declared)) if isinstance(declared, str) else None


def validator_class(schema: Any, default: str = DEFAULT_DIALECT) -> type[Validator]:
    """The jsonschema class of the schema's draft (the default's for an unsupported one: lint reports it)."""
    draft = dialect_of(schema, default) or DRAFTS[default]
    return draft.validator


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
    try:
        draft.validator.check_schema(schema)  # type: ignore[arg-type]  # booleans are schemas too
    except JsonSchemaSchemaError as exc:
        problems.append(
            Problem(
                file, pointer_from_path(exc.absolute_path), f"not a valid JSON Schema ({draft.name}): {exc.message}"
            )
        )
    except RecursionError:
        problems.append(Problem(file, "", "not a usable JSON Schema: nested too deeply"))
    except ValueError as exc:  # e.g. a number too large to convert
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

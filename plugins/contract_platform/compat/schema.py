"""Reading schemas for the diff: documents, ``$ref`` resolution, views, and checked keyword access.

A :class:`View` is one subschema as the walker sees it: the schema value, the JSON pointer of where
it lives in its document (so recursion through ``$ref`` can be memoised on pointer pairs), and the
context the enclosing schemas give it (JSON types already known, sibling schemas that apply to the
same instance). Every malformed keyword the diff meets is reported as :class:`SchemaError` with
its pointer; nothing else escapes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Final
from urllib.parse import unquote

from contract_platform.catalog.schemas import DRAFTS, subschemas, validator_for
from contract_platform.errors import ContractPlatformError, PatternNotEvaluable, SchemaError
from contract_platform.patterns import compile_pattern

__all__ = [
    "ALL_TYPES",
    "CONJUNCTION",
    "NUMBER_TYPES",
    "Document",
    "View",
    "declared_types",
    "deref",
    "describe",
    "escape",
    "freeze",
    "is_annotation",
    "is_documentation",
    "merge",
    "name_matches",
    "type_names",
    "value_types",
]

ALL_TYPES: Final = frozenset({"null", "boolean", "object", "array", "string", "integer", "fraction"})
NUMBER_TYPES: Final = frozenset({"integer", "fraction"})
_TYPE_ATOMS: Final[Mapping[str, frozenset[str]]] = {
    "null": frozenset({"null"}),
    "boolean": frozenset({"boolean"}),
    "object": frozenset({"object"}),
    "array": frozenset({"array"}),
    "string": frozenset({"string"}),
    "integer": frozenset({"integer"}),
    "number": NUMBER_TYPES,
}
REF_KEYWORDS: Final = ("$ref", "$dynamicRef", "$recursiveRef")
CONTAINERS: Final = frozenset({"$defs", "definitions"})
CONSTRAINTS: Final = frozenset(
    {
        "type", "enum", "const",
        "minLength", "maxLength", "pattern", "format", "contentEncoding", "contentMediaType",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "items", "prefixItems", "additionalItems", "contains", "minContains", "maxContains",
        "minItems", "maxItems", "uniqueItems", "unevaluatedItems",
        "properties", "patternProperties", "additionalProperties", "propertyNames", "required",
        "minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "dependencies",
        "unevaluatedProperties",
        "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
    }
)  # fmt: skip
# Keywords that only document a schema (JSON Schema's annotation vocabularies, identifiers, vendor x-...).
DOCUMENTATION: Final = frozenset(
    {
        "$schema", "$id", "id", "$anchor", "$comment", "$vocabulary", "title", "description", "default",
        "examples", "deprecated", "readOnly", "writeOnly", "contentSchema",
    }
)  # fmt: skip
# Keywords with an effect the engine does not model: a change to them is judged conservatively.
UNMODELLED: Final = frozenset({"$dynamicAnchor", "$recursiveAnchor"})


_INDEX: Final = re.compile(r"0|[1-9][0-9]*")


def _finite(value: float) -> bool:
    """``math.isfinite`` that also takes integers too large for a float (always finite)."""
    return isinstance(value, int) or math.isfinite(value)


def _whole(value: float) -> bool:
    return isinstance(value, int) or (math.isfinite(value) and value == int(value))


def is_annotation(keyword: str) -> bool:
    """Everything that is not a constraint, a reference or a definitions container documents only."""
    return keyword not in CONSTRAINTS and keyword not in CONTAINERS and keyword not in REF_KEYWORDS


def is_documentation(keyword: str) -> bool:
    """An annotation that cannot change what a schema accepts; anything else unknown is unmodelled."""
    return keyword in DOCUMENTATION or keyword.startswith("x-") or keyword in CONTAINERS


def escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


class Document:
    """One whole schema document: the root, a label for error messages, and its local references."""

    def __init__(self, root: Any, label: str) -> None:
        self.root = root
        self.label = label
        self._anchors: dict[str, tuple[Any, str]] | None = None
        self._validator: Any = None
        self._reads_evaluation: bool | None = None
        base = root.get("$id", root.get("id")) if isinstance(root, Mapping) else None
        self._base = base.split("#", 1)[0] if isinstance(base, str) else ""

    def accepts(self, schema: Any, instance: Any) -> bool | None:
        """Whether the platform's validator (formats asserted) accepts ``instance`` under ``schema``, a
        subschema of this document read in the 2020-12 form the diff reads (``dialects``), its references
        resolved in the document; None when the validator cannot say (a pattern it will not evaluate)."""
        if self._validator is None:
            root = {**self.root, "$schema": DRAFTS["2020-12"].uri} if isinstance(self.root, Mapping) else self.root
            self._validator = validator_for(root)
        try:
            return bool(self._validator.evolve(schema=schema).is_valid(instance))
        except (ContractPlatformError, RecursionError):
            return None
        except BaseException as exc:  # a recursion that ended inside the Rust validator comes out as its panic
            if type(exc).__name__ == "PanicException":
                return None
            raise

    @property
    def reads_evaluation(self) -> bool:
        """Whether a schema of this document uses ``unevaluatedProperties`` or ``unevaluatedItems``, which
        read what other subschemas evaluated: there a subschema's values alone do not decide its effect."""
        if self._reads_evaluation is None:
            found = False
            stack: list[Any] = [self.root]
            while stack and not found:
                node = stack.pop()
                if isinstance(node, Mapping):
                    found = "unevaluatedProperties" in node or "unevaluatedItems" in node
                    stack.extend(sub for _, _, sub, _ in subschemas(node))
            self._reads_evaluation = found
        return self._reads_evaluation

    def error(self, pointer: str, message: str) -> SchemaError:
        return SchemaError(self.label, pointer, message)

    def resolve(self, ref: str, at: str) -> tuple[Any, str]:
        """The schema a local ``$ref`` names and its pointer; SchemaError for anything else."""
        local = ref[len(self._base) :] if self._base and ref.startswith(self._base) else ref
        if not local.startswith("#"):
            raise self.error(at, f"$ref {ref!r} points outside this schema; bundle it into $defs and use '#/$defs/...'")
        fragment = unquote(local[1:])
        if fragment == "" or fragment.startswith("/"):
            return self._follow(fragment, ref, at), fragment
        anchors = self._anchor_index()
        if fragment not in anchors:
            raise self.error(at, f"$ref {ref!r} names no $anchor or '#{fragment}' $id in this schema")
        return anchors[fragment]

    def _follow(self, pointer: str, ref: str, at: str) -> Any:
        node = self.root
        for raw in pointer.split("/")[1:]:
            token = _unescape(raw)
            if isinstance(node, Mapping) and token in node:
                node = node[token]
            elif isinstance(node, list) and _INDEX.fullmatch(token) and int(token) < len(node):
                node = node[int(token)]
            else:
                raise self.error(at, f"$ref {ref!r} does not resolve: nothing at {pointer!r}")
        return node

    def _anchor_index(self) -> dict[str, tuple[Any, str]]:
        if self._anchors is None:
            self._anchors = {}
            stack: list[tuple[Any, str]] = [(self.root, "")]
            while stack:  # schema positions only: a property named const is a schema, const's value is data
                node, pointer = stack.pop()
                if isinstance(node, Mapping):
                    self._index_anchors(node, pointer)
                    stack.extend((sub, at) for _, _, sub, at in subschemas(node, pointer))
        return self._anchors

    def _index_anchors(self, node: Mapping[str, Any], pointer: str) -> None:
        assert self._anchors is not None
        for key in ("$anchor", "$dynamicAnchor"):
            if isinstance(node.get(key), str):
                self._anchors.setdefault(node[key], (node, pointer))
        for key in ("$id", "id"):
            value = node.get(key)
            if isinstance(value, str) and value.startswith("#") and len(value) > 1:
                self._anchors.setdefault(value[1:], (node, pointer))


@dataclass(frozen=True)
class View:
    """One subschema in its document, with the context the enclosing schemas give it."""

    doc: Document
    schema: Any
    ptr: str
    tag: str = ""
    bases: Mapping[str, str] | None = None  # keyword -> pointer of the object holding it (merged views)
    known: frozenset[str] = ALL_TYPES  # JSON types the enclosing schemas still allow here
    peers: tuple[View, ...] = ()  # other (dereferenced) schemas that apply to the same instance

    def at(self, keyword: str) -> str:
        base = self.bases.get(keyword, self.ptr) if self.bases else self.ptr
        return f"{base}/{escape(keyword)}"

    def error(self, keyword: str, message: str) -> SchemaError:
        return self.doc.error(self.at(keyword), message)

    def child(self, keyword: str, schema: Any, *tokens: str | int, **context: Any) -> View:
        pointer = self.at(keyword) + "".join(f"/{escape(str(t))}" for t in tokens)
        return View(self.doc, schema, pointer, **context)

    # -- checked keyword access ------------------------------------------------------------------

    def schema_at(self, keyword: str) -> Any:
        value = self.schema.get(keyword)
        if value is not None and not isinstance(value, Mapping | bool):
            raise self.error(keyword, f"{keyword} must be a schema (an object or a boolean)")
        return value

    def schema_list(self, keyword: str, *, allow_empty: bool = False) -> list[Any] | None:
        value = self.schema.get(keyword)
        if value is None:
            return None
        if not isinstance(value, list) or not (value or allow_empty):
            raise self.error(keyword, f"{keyword} must be a non-empty array of schemas")
        return value

    def schema_map(self, keyword: str) -> Mapping[str, Any]:
        value = self.schema.get(keyword, {})
        if not isinstance(value, Mapping):
            raise self.error(keyword, f"{keyword} must be an object whose values are schemas")
        return value

    def count(self, keyword: str) -> int | None:
        value = self.schema.get(keyword)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not _whole(value) or value < 0:
            raise self.error(keyword, f"{keyword} must be a non-negative integer, not {value!r}")
        return int(value)

    def number(self, keyword: str) -> int | float | None:
        value = self.schema.get(keyword)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not _finite(value):
            raise self.error(keyword, f"{keyword} must be a finite number, not {value!r}")
        return value

    def text(self, keyword: str) -> str | None:
        value = self.schema.get(keyword)
        if value is not None and not isinstance(value, str):
            raise self.error(keyword, f"{keyword} must be a string, not {value!r}")
        return value

    def flag(self, keyword: str) -> bool:
        value = self.schema.get(keyword, False)
        if not isinstance(value, bool):
            raise self.error(keyword, f"{keyword} must be true or false, not {value!r}")
        return value

    def names(self, keyword: str, value: Any = None) -> list[str]:
        value = self.schema.get(keyword, []) if value is None else value
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.error(keyword, f"{keyword} must be an array of property names")
        return value


def declared_types(view: View, schema: Any = None) -> frozenset[str]:
    """The JSON types the ``type`` keyword allows (all when absent), as atoms (number = integer|fraction)."""
    schema = view.schema if schema is None else schema
    value = schema.get("type") if isinstance(schema, Mapping) else None
    if value is None:
        return ALL_TYPES
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) and n in _TYPE_ATOMS for n in names):
        raise view.doc.error(f"{view.ptr}/type", f"type must be one of {sorted(_TYPE_ATOMS)} or an array of them")
    return frozenset().union(*(_TYPE_ATOMS[n] for n in names))


def value_types(value: Any) -> frozenset[str]:
    if value is None:
        return frozenset({"null"})
    if isinstance(value, bool):
        return frozenset({"boolean"})
    if isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer()):
        return frozenset({"integer"})
    if isinstance(value, float):
        return frozenset({"fraction"})
    if isinstance(value, str):
        return frozenset({"string"})
    if isinstance(value, list):
        return frozenset({"array"})
    return frozenset({"object"})


def type_names(atoms: frozenset[str]) -> str:
    """``integer``/``fraction`` atoms back to JSON Schema type names, for messages."""
    names = sorted(atoms - NUMBER_TYPES)
    if atoms >= NUMBER_TYPES:
        names.append("number")
    elif "integer" in atoms:
        names.append("integer")
    elif "fraction" in atoms:
        names.append("non-integer number")
    return ", ".join(sorted(names)) if names else "nothing"


def freeze(value: Any) -> Any:
    """A hashable form of a JSON value, equal exactly when JSON Schema calls the values equal."""
    if value is None or isinstance(value, bool | str):
        return (type(value).__name__, value)
    if isinstance(value, int | float):
        return ("number", Fraction(value) if _finite(value) else repr(value))
    if isinstance(value, Mapping):
        return ("object", frozenset((str(k), freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("array", tuple(freeze(v) for v in value))
    return ("other", repr(value))


def name_matches(pattern: str, name: str) -> bool:
    """Does the ``patternProperties`` name ``pattern`` match ``name``? In linear time (``contract_platform.patterns``);
    a pattern the platform will not evaluate matches no name (the linter reports it)."""
    try:
        return compile_pattern(pattern).search(name)
    except PatternNotEvaluable:
        return False


def deref(view: View, seen: frozenset[str] = frozenset()) -> View:
    """Follow ``$ref`` (merging sibling keywords into the target) until a plain schema is reached."""
    schema = view.schema
    if isinstance(schema, bool):
        return view
    if not isinstance(schema, Mapping):
        raise view.doc.error(view.ptr, f"a schema must be an object or a boolean, not {type(schema).__name__}")
    keyword = next((k for k in REF_KEYWORDS if k in schema), None)
    if keyword is None:
        return view
    ref = schema[keyword]
    if not isinstance(ref, str):
        raise view.error(keyword, f"{keyword} must be a string")
    target, pointer = view.doc.resolve(ref, view.at(keyword))
    if pointer in seen or pointer == view.ptr:
        raise view.error(keyword, f"{keyword} {ref!r} is circular: it leads back to itself without a schema between")
    resolved = deref(View(view.doc, target, pointer, known=view.known, peers=view.peers), seen | {view.ptr})
    siblings = {k: v for k, v in schema.items() if k in CONSTRAINTS}
    if not siblings or resolved.schema is False:
        return resolved
    return merge(resolved, replace(view, schema=siblings), tag="$ref", ptr=view.ptr)


_LOWER_BOUNDS: Final = frozenset(
    {"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains"}
)
_UPPER_BOUNDS: Final = frozenset(
    {"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains"}
)
_SCHEMA_MAPS: Final = frozenset({"properties", "patternProperties", "dependentSchemas"})


def _conjoin(keyword: str, before: Any, after: Any) -> Any:
    """One value for a keyword both schemas of a conjunction carry, or ``_APART`` when none says both."""
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (before, after))
    if keyword in _LOWER_BOUNDS and numbers:
        return max(before, after)
    if keyword in _UPPER_BOUNDS and numbers:
        return min(before, after)
    if keyword == "uniqueItems" and isinstance(before, bool) and isinstance(after, bool):
        return before or after
    if keyword == "enum" and isinstance(before, list) and isinstance(after, list):
        kept = {freeze(v) for v in after}
        return [v for v in before if freeze(v) in kept]
    if keyword in _SCHEMA_MAPS and isinstance(before, Mapping) and isinstance(after, Mapping):
        joined = dict(before)
        for name, sub in after.items():
            joined[name] = {"allOf": [before[name], sub]} if name in before and before[name] != sub else sub
        return joined
    if keyword == "dependentRequired" and isinstance(before, Mapping) and isinstance(after, Mapping):
        return {k: list(dict.fromkeys([*before.get(k, []), *after.get(k, [])])) for k in {**before, **after}}
    if keyword == "allOf" and isinstance(before, list) and isinstance(after, list):
        return [*before, *after]
    return _APART


_APART: Final = object()
CONJUNCTION: Final = "$conjunction"  # not a JSON Schema keyword: what ``merge`` could not combine


def merge(base: View, extra: View, *, tag: str, ptr: str, skip: tuple[str, ...] = ()) -> View:
    """``base`` and ``extra`` applied together (a conjunction), as one view at ``ptr``. A keyword in both
    keeps both constraints: types intersect, required lists unite, bounds take the tighter, enums
    intersect, properties join per name. Any other keyword in both keeps ``base``'s value, and ``extra``'s
    goes under ``CONJUNCTION``, a key the diff does not model: where it differs, the verdict is conservative."""
    schema: dict[str, Any] = dict(base.schema) if isinstance(base.schema, Mapping) else {}
    bases = {k: (base.bases or {}).get(k, base.ptr) for k in schema}
    apart: dict[str, Any] = {}
    for keyword, value in extra.schema.items():
        if keyword in skip or (keyword in schema and schema[keyword] == value):
            continue
        if keyword == "type" and "type" in schema:
            atoms = declared_types(base) & declared_types(extra)
            value = [n for n, a in _TYPE_ATOMS.items() if a <= atoms and not (n == "integer" and atoms >= NUMBER_TYPES)]
        elif keyword == "required" and "required" in schema:
            value = list(dict.fromkeys(base.names("required") + extra.names("required")))
        elif keyword in schema and keyword in CONSTRAINTS:
            value = _conjoin(keyword, schema[keyword], value)
            if value is _APART:
                apart[keyword] = extra.schema[keyword]
                continue
        schema[keyword] = value
        bases[keyword] = (extra.bases or {}).get(keyword, extra.ptr)
    if apart:  # kept as a marker: a difference in it is judged conservatively (keyword-unmodelled)
        schema[CONJUNCTION] = {**schema.get(CONJUNCTION, {}), **apart}
    return replace(base, schema=schema, ptr=ptr, tag=tag, bases=bases)


def describe(pointer: str) -> str:
    """A field name a contract author recognises, from a schema pointer: ``'lines[].sku'``."""
    tokens = [_unescape(t) for t in pointer.split("/")[1:]]
    parts: list[str] = []
    definition = ""
    i = 0
    while i < len(tokens):
        token, nxt = tokens[i], tokens[i + 1] if i + 1 < len(tokens) else None
        step = 2
        if token == "properties" and nxt is not None:
            parts.append(f".{nxt}")
        elif token in CONTAINERS and nxt is not None:
            parts, definition = [], nxt
        elif token in ("items", "prefixItems") and nxt is not None and nxt.isdigit():
            parts.append(f"[{nxt}]")
        elif token == "patternProperties" and nxt is not None:
            parts.append(f".<{nxt}>")
        else:
            parts.append({"items": "[]", "additionalItems": "[+]", "additionalProperties": ".*"}.get(token, ""))
            step = 1
        i += step
    name = "".join(parts).lstrip(".")
    if name.startswith("["):
        name = "$" + name
    if definition:
        return f"'{name}' in definition '{definition}'" if name else f"definition '{definition}'"
    return f"'{name}'" if name else "the payload root"

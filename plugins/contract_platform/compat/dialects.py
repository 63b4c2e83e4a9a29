"""Every draft read into one form before the diff: each keyword with its own draft's meaning.

The diff reads 2020-12. A schema written in draft-04, -06, -07 or 2019-09 is first rewritten into
that form, so a diff across drafts (old draft-07, new 2020-12) compares meaning, not spelling:

============================== ========================================= ============================
draft spelling                 2020-12 form                               drafts
============================== ========================================= ============================
``items: [...]``               ``prefixItems: [...]``                     04, 06, 07, 2019-09
``additionalItems: S``         ``items: S`` (ignored without tuple items)  04, 06, 07, 2019-09
``minimum: 3,                  ``exclusiveMinimum: 3`` (``false``: plain)  04
exclusiveMinimum: true``
``dependencies: {a: [...]}``   ``dependentRequired: {a: [...]}``          04, 06, 07
``dependencies: {a: {...}}``   ``dependentSchemas: {a: {...}}``           04, 06, 07
``id``                         ``$id``                                     04
``$ref`` with siblings         ``$ref`` alone (siblings are ignored)       04, 06, 07
``$recursiveRef: "#"``         read like ``$ref: "#"``                     2019-09
============================== ========================================= ============================

A keyword that its draft does not define (``const`` in draft-04, ``prefixItems`` in draft-07,
``additionalItems`` in 2020-12...) asserts nothing there, so it is renamed into an annotation
(``x-not-in-<draft>:<keyword>``). Every renamed place is remembered, and :func:`original_path`
turns a pointer into the rewritten schema back into one into the schema as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from contract_platform.catalog.schemas import DEFAULT_DIALECT, DRAFTS, Draft, read_dialect, subschemas

from .schema import CONSTRAINTS, REF_KEYWORDS, escape

__all__ = ["Normalised", "normalise", "original_path", "same_dialect_spelling"]

IGNORED_PREFIX: Final = "x-not-in-"

# Keywords each draft defines with an assertion (or a reference) meaning; the rest of CONSTRAINTS is
# unknown there. Drafts only ever add to this list, except 2020-12 which drops three.
_ADDED: Final[Mapping[int, frozenset[str]]] = {
    4: frozenset(
        {
            "type", "enum", "minLength", "maxLength", "pattern", "format", "minimum", "maximum",
            "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "items", "additionalItems", "minItems",
            "maxItems", "uniqueItems", "properties", "patternProperties", "additionalProperties", "required",
            "minProperties", "maxProperties", "dependencies", "allOf", "anyOf", "oneOf", "not", "$ref",
        }
    ),
    6: frozenset({"const", "contains", "propertyNames"}),
    7: frozenset({"if", "then", "else", "contentEncoding", "contentMediaType"}),
    2019: frozenset(
        {
            "dependentRequired", "dependentSchemas", "minContains", "maxContains", "unevaluatedItems",
            "unevaluatedProperties", "$recursiveRef",
        }
    ),
    2020: frozenset({"prefixItems", "$dynamicRef"}),
}  # fmt: skip
_DROPPED_IN_2020: Final = frozenset({"additionalItems", "dependencies", "$recursiveRef"})


def _vocabulary(draft: Draft) -> frozenset[str]:
    words = frozenset().union(*(kws for order, kws in _ADDED.items() if order <= draft.order))
    return words - _DROPPED_IN_2020 if draft.order >= 2020 else words


_SCHEMA: Final = ("additionalProperties", "not", "contains", "propertyNames", "if", "then", "else",
                  "unevaluatedItems", "unevaluatedProperties", "items")  # fmt: skip
_MAPS: Final = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_LISTS: Final = ("allOf", "anyOf", "oneOf", "prefixItems")


class Normalised:
    """A schema rewritten into the 2020-12 form, and where its renamed keywords came from."""

    def __init__(self, schema: Any, draft: Draft) -> None:
        self.draft = draft
        self.renamed: dict[str, str] = {}  # pointer in the rewritten schema -> pointer as written
        self._vocabulary = _vocabulary(draft)
        self.schema = self._rewrite(schema, "", "")
        if self.renamed:
            inverse = {old: new for new, old in self.renamed.items()}
            self.schema = _retarget(self.schema, inverse)

    def _rewrite(self, node: Any, new_ptr: str, old_ptr: str) -> Any:
        if not isinstance(node, Mapping):
            return node
        out: dict[str, Any] = {}
        moves: dict[str, str] = {}  # new keyword -> old keyword
        legacy_ref = self.draft.legacy and isinstance(node.get("$ref"), str)
        for keyword, value in node.items():
            target = self._rename(node, keyword, legacy_ref)
            if target is None:
                continue
            out[target] = value
            if target != keyword:
                moves[target] = keyword
        self._fold_exclusive(node, out, moves)
        self._split_dependencies(node, out, moves)
        for new_kw, old_kw in moves.items():
            self.renamed[f"{new_ptr}/{escape(new_kw)}"] = f"{old_ptr}/{escape(old_kw)}"
        for keyword in list(out):
            old_kw = moves.get(keyword, keyword)
            here_new, here_old = f"{new_ptr}/{escape(keyword)}", f"{old_ptr}/{escape(old_kw)}"
            out[keyword] = self._children(keyword, out[keyword], here_new, here_old)
        return out

    def _rename(self, node: Mapping[str, Any], keyword: str, legacy_ref: bool) -> str | None:
        """The keyword's 2020-12 name, an ``x-not-in-...`` annotation name, or None to drop it."""
        draft = self.draft
        if keyword in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(node.get(keyword), bool):
            return None  # draft-04 flag: folded into the bound by _fold_exclusive
        if keyword == "dependencies" and draft.order <= 7:
            return None  # split by _split_dependencies
        if keyword == "id" and draft.order == 4:
            return "$id"
        tuple_items = isinstance(node.get("items"), list) and draft.order <= 2019
        if tuple_items and keyword == "items":
            return "prefixItems"
        if keyword == "additionalItems" and draft.order <= 2019:
            return "items" if tuple_items else None  # without tuple items, additionalItems does nothing
        if keyword == "$recursiveRef" and draft.order == 2019:
            return keyword
        if keyword not in CONSTRAINTS and keyword not in REF_KEYWORDS:
            return keyword  # annotations and containers keep their names
        if legacy_ref and keyword != "$ref":
            return f"{IGNORED_PREFIX}{draft.name}:{keyword}"  # draft-07 and older ignore $ref's siblings
        if keyword not in self._vocabulary:
            return f"{IGNORED_PREFIX}{draft.name}:{keyword}"
        return keyword

    def _fold_exclusive(self, node: Mapping[str, Any], out: dict[str, Any], moves: dict[str, str]) -> None:
        if self.draft.order != 4 or (self.draft.legacy and isinstance(node.get("$ref"), str)):
            return
        for exclusive, inclusive in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if node.get(exclusive) is True and inclusive in out:
                out[exclusive] = out.pop(inclusive)
                moves[exclusive] = inclusive

    def _split_dependencies(self, node: Mapping[str, Any], out: dict[str, Any], moves: dict[str, str]) -> None:
        deps = node.get("dependencies")
        if self.draft.order > 7 or not isinstance(deps, Mapping):
            return
        if isinstance(node.get("$ref"), str):
            out[f"{IGNORED_PREFIX}{self.draft.name}:dependencies"] = deps
            return
        names = {k: v for k, v in deps.items() if isinstance(v, list)}
        schemas = {k: v for k, v in deps.items() if not isinstance(v, list)}
        for keyword, part in (("dependentRequired", names), ("dependentSchemas", schemas)):
            if part:
                out[keyword] = part
                moves[keyword] = "dependencies"

    def _children(self, keyword: str, value: Any, new_ptr: str, old_ptr: str) -> Any:
        if keyword in _SCHEMA:
            return self._rewrite(value, new_ptr, old_ptr)
        if keyword in _MAPS and isinstance(value, Mapping):
            return {
                name: self._rewrite(sub, f"{new_ptr}/{escape(str(name))}", f"{old_ptr}/{escape(str(name))}")
                for name, sub in value.items()
            }
        if keyword in _LISTS and isinstance(value, list):
            return [self._rewrite(sub, f"{new_ptr}/{i}", f"{old_ptr}/{i}") for i, sub in enumerate(value)]
        return value


def _retarget(schema: Any, inverse: Mapping[str, str]) -> Any:
    """References into renamed places (``#/items/0`` of a draft-07 tuple) pointed at their new names.

    Walks schema positions only (never ``const``/``enum`` data), over nodes ``_rewrite`` built afresh."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        for key in REF_KEYWORDS:
            value = node.get(key)
            if isinstance(value, str) and value.startswith("#/"):
                node[key] = "#" + original_path(value[1:], inverse)
        stack.extend(sub for _, _, sub, _ in subschemas(node))
    return schema


def normalise(schema: Any, default: str = DEFAULT_DIALECT) -> Normalised:
    """``schema`` in the 2020-12 form, read in the draft ``read_dialect`` gives it (``$schema``, else its
    draft-specific keywords, else ``default``; an unsupported ``$schema`` is read as the default draft)."""
    reading = read_dialect(schema, default)
    return Normalised(schema, reading.draft if reading is not None else DRAFTS[default])


def same_dialect_spelling(before: Normalised, after: Normalised) -> None:
    """Each root's ``$schema`` as the draft it is read in (``read_dialect``): none where both are read in the
    same draft (one may declare it and the other not), the canonical URI of each where they differ."""
    same = before.draft is after.draft
    for side in (before, after):
        if isinstance(side.schema, dict):
            side.schema.pop("$schema", None)
            if not same:
                side.schema = {"$schema": side.draft.uri, **side.schema}


def original_path(pointer: str, renamed: Mapping[str, str]) -> str:
    """A pointer into the rewritten schema, as a pointer into the schema as written."""
    best = ""
    for prefix in renamed:
        if (pointer == prefix or pointer.startswith(prefix + "/")) and len(prefix) > len(best):
            best = prefix
    return renamed[best] + pointer[len(best) :] if best else pointer

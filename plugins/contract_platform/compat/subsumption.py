"""Subsumption: every value one schema accepts is also accepted by another, shown by cutting the first into parts.

The walker compares two schemas keyword by keyword. Some changes only the values decide, and a keyword-by-
keyword reading takes them for narrowings (docs/compatibility.md#combinators):

- ``anyOf: [{type: integer, minimum: 1}, {type: integer, minimum: 2}]`` -> ``{type: [integer, string],
  minimum: 1}``: no old value is below 1, though the old root had no ``minimum``;
- ``anyOf: [{required: [id]}, {type: string}]`` -> ``anyOf: [{type: object, required: [id]}, {type:
  string}]`` where the first old branch accepted strings: the second branch still takes them;
- ``const: {key: value}`` -> ``properties: {key: {const: value}}``: the one old value is a new value.

``contained(w, inner, outer, backward=...)`` answers "is every instance of INNER one of OUTER?" by cutting
INNER into parts whose instances together are all of INNER's (or more), then showing each part within OUTER:

======================  ====================================================================================
INNER                   its parts
======================  ====================================================================================
``anyOf``, ``oneOf``    each branch with the rest of INNER (a oneOf's values are at most its branches' union)
``allOf``               its branches merged into one schema (``schema.merge``: never narrower than allOf)
``enum``, ``const``     each listed value (even one the rest of INNER refuses); a value lies within OUTER
                        when the platform's own validator accepts it there (formats asserted, as
                        ``--verify-samples`` validates)
two or more JSON types  INNER restricted to each of its types, when OUTER is a union (``anyOf``/``oneOf``)
======================  ====================================================================================

A part lies within OUTER when a probe (the walker's quiet diff, which may cut the part again) says so. A
schema that cannot be cut is never probed against OUTER from here: that is the question the walker itself
asked, and answering it by itself would assume what is to be shown. Whatever is not shown counts as not
so: a direction the keywords call broken stays broken unless every part is shown to fit, so this only ever
removes false alarms (``compat.soundness`` samples instances to check that).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .context import allowed_values, as_object, effective_types, same_instance
from .schema import CONJUNCTION, View, declared_types, deref, is_documentation, merge

if TYPE_CHECKING:
    from .walker import Walker

__all__ = ["branches", "contained", "with_branch"]

_UNIONS = ("anyOf", "oneOf")


@dataclass(frozen=True)
class _Value:
    """One listed value of INNER, a part of its own."""

    value: Any


def branches(view: View, kind: str) -> list[View]:
    """The branches of ``view``'s ``kind`` (allOf, anyOf, oneOf), each knowing what ``view`` says of the instance."""
    return [same_instance(view, kind, schema, i) for i, schema in enumerate(view.schema_list(kind) or [])]


def with_branch(view: View, kind: str, branch: View) -> View:
    """``view`` without ``kind``, merged with one of its branches: what that branch admits."""
    resolved = deref(branch)
    if resolved.schema is False:
        return resolved
    rest = replace(view, schema={k: v for k, v in view.schema.items() if k != kind})
    return merge(rest, as_object(resolved), tag=f"{kind}-branch", ptr=branch.ptr)


def contained(w: Walker, inner: View, outer: View, *, backward: bool) -> bool:
    """Every instance of ``inner`` is one of ``outer``: True when shown part by part, False otherwise.

    ``backward``: ``inner`` is on the old side and ``outer`` on the new one (a probe's backward direction);
    otherwise ``inner`` is new and ``outer`` old (a probe from ``outer`` to the part, read forward)."""
    parts = _parts(inner, outer)
    if parts is None:
        return False
    for part in parts:
        if isinstance(part, _Value):
            if accepts(outer, part.value) is not True:
                return False
            continue
        probe = w.probe(part, outer) if backward else w.probe(outer, part)
        if not (probe.backward if backward else probe.forward):
            return False
    return True


def accepts(view: View, value: Any) -> bool | None:
    """Whether the schema of ``view``, as written in its document, accepts ``value``; None when that cannot be
    told from here: a merged view (``with_branch``, a ``$ref`` with siblings) is not a schema as written."""
    if view.bases is not None or (isinstance(view.schema, Mapping) and CONJUNCTION in view.schema):
        return None
    return view.doc.accepts(view.schema, value)


def _parts(inner: View, outer: View) -> list[View | _Value] | None:
    """Schemas (or values) whose instances together hold every instance of ``inner``; None when ``inner``
    cannot be cut into anything smaller here."""
    inner = deref(inner)
    if inner.schema is False:
        return []  # accepts nothing: within anything
    inner = as_object(inner)
    for kind in _UNIONS:
        if inner.schema_list(kind) is not None:
            return [with_branch(inner, kind, branch) for branch in branches(inner, kind)]
    if inner.schema_list("allOf") is not None:
        return _merged_all_of(inner)
    values = allowed_values(inner)
    if values is not None:
        return [_Value(v) for v in values.values()]
    names = _type_names(effective_types(inner) - _excluded(inner))
    if len(names) > 1 and _is_union(outer):
        return [_typed(inner, name) for name in names]
    return None


def _merged_all_of(view: View) -> list[View | _Value]:
    merged = replace(view, schema={k: v for k, v in view.schema.items() if k != "allOf"})
    for branch in branches(view, "allOf"):
        resolved = deref(branch)
        if resolved.schema is False:
            return []
        merged = merge(merged, as_object(resolved), tag="allOf-merged", ptr=view.at("allOf"))
    return [merged]


def _is_union(view: View) -> bool:
    resolved = deref(view)
    return isinstance(resolved.schema, Mapping) and any(resolved.schema_list(kind) is not None for kind in _UNIONS)


def _excluded(view: View) -> frozenset[str]:
    """The JSON types ``not: {type: ...}`` rules out (a value of such a type matches the ``not`` schema)."""
    negated = view.schema_at("not")
    if negated is None:
        return frozenset()
    resolved = deref(view.child("not", negated))
    if not isinstance(resolved.schema, Mapping) or any(
        k != "type" and not is_documentation(k) for k in resolved.schema
    ):
        return frozenset()
    return declared_types(resolved) if "type" in resolved.schema else frozenset()


def _type_names(atoms: frozenset[str]) -> list[str]:
    """One JSON Schema type name per kind of value in ``atoms`` (integers and other numbers: one number)."""
    names: list[str] = [name for name in ("null", "boolean", "object", "array", "string") if name in atoms]
    if "fraction" in atoms:
        names.append("number")
    elif "integer" in atoms:
        names.append("integer")
    return names


def _typed(view: View, name: str) -> View:
    """``view`` restricted to the values of one JSON type (tagged with ``view``'s own tag: probes tell parts
    apart by pointer and tag, and a part of one type is never cut again)."""
    only = View(view.doc, {"type": name}, view.ptr)
    return merge(view, only, tag=f"{view.tag}/type-{name}", ptr=view.ptr)

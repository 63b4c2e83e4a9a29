"""What the enclosing schemas tell the diff about a subschema: its JSON types and sibling schemas.

``{"properties": {"data": {"type": "string"}}, "then": {"properties": {"data": {"pattern": "..."}}}}``:
inside ``then`` the value of ``data`` is already known to be a string, so a ``then`` that adds
``"type": "string"`` changes nothing. Views carry that knowledge (``known``) and the schemas that
apply to the same instance (``peers``) down the walk.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .schema import ALL_TYPES, View, declared_types, deref, freeze, is_annotation, value_types

__all__ = [
    "additional",
    "allowed_values",
    "as_object",
    "effective_types",
    "own_types",
    "property_view",
    "same_instance",
    "unconstrained",
]

_COMBINATORS = ("allOf", "anyOf", "oneOf")


def as_object(view: View) -> View:
    """``true`` read as ``{}`` (both accept everything)."""
    return (
        view
        if isinstance(view.schema, Mapping)
        else View(view.doc, {}, view.ptr, view.tag, None, view.known, view.peers)
    )


def unconstrained(view: View) -> bool:
    """True for ``true``, ``{}`` and schemas holding annotations only."""
    return view.schema is True or (isinstance(view.schema, Mapping) and all(is_annotation(k) for k in view.schema))


def allowed_values(view: View) -> dict[Any, Any] | None:
    """``enum``/``const`` as {frozen value: value}; None when the schema does not list its values."""
    values: dict[Any, Any] | None = None
    if "enum" in view.schema:
        listed = view.schema["enum"]
        if not isinstance(listed, list):
            raise view.error("enum", "enum must be an array of values")
        values = {freeze(v): v for v in listed}
    if "const" in view.schema:
        const = {freeze(view.schema["const"]): view.schema["const"]}
        values = const if values is None else {k: v for k, v in values.items() if k in const}
    return values


def own_types(view: View) -> frozenset[str]:
    """Types from ``type`` and listed values, without looking into subschemas."""
    if view.schema is False:
        return frozenset()
    if view.schema is True:
        return ALL_TYPES
    types = declared_types(view)
    values = allowed_values(view)
    if values is not None:
        types &= frozenset().union(*(value_types(v) for v in values.values()))
    return types


def effective_types(view: View) -> frozenset[str]:
    """The JSON types ``view`` can accept here: its own, its context's, and those its compositions imply."""
    types = own_types(view) & view.known
    if not isinstance(view.schema, Mapping):
        return types
    for keyword in _COMBINATORS:
        branches = view.schema_list(keyword)
        if branches is None:
            continue
        kinds = [own_types(deref(view.child(keyword, b, i))) for i, b in enumerate(branches)]
        types &= frozenset.intersection(*kinds) if keyword == "allOf" else frozenset().union(*kinds)
    return types


def same_instance(parent: View, keyword: str, schema: Any, *tokens: str | int) -> View:
    """A subschema applied to the parent's own instance (allOf branch, then, not, dependentSchemas...)."""
    return parent.child(keyword, schema, *tokens, known=effective_types(parent), peers=(*parent.peers, parent))


def property_view(parent: View, name: str) -> View:
    """``properties[name]`` of ``parent``, knowing what the parent's peers say about the same property."""
    known = ALL_TYPES
    peers: list[View] = []
    for peer in parent.peers:
        props = peer.schema.get("properties") if isinstance(peer.schema, Mapping) else None
        if isinstance(props, Mapping) and name in props:
            resolved = deref(peer.child("properties", props[name], name))
            known &= own_types(resolved)
            if isinstance(resolved.schema, Mapping):
                peers.append(resolved)
    return parent.child("properties", parent.schema_map("properties")[name], name, known=known, peers=tuple(peers))


def additional(view: View) -> View:
    """The schema for names neither declared nor matched by a pattern: ``additionalProperties``, else
    ``unevaluatedProperties`` (which then governs exactly those names, unless a subschema applied in place
    evaluates them: an approximation only there), else ``true``. With ``additionalProperties`` present,
    ``unevaluatedProperties`` never applies: every name is already evaluated."""
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        schema = view.schema_at(keyword)
        if schema is not None:
            return view.child(keyword, schema)
    return view.child("additionalProperties", True)

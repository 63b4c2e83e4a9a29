"""A payload schema flattened into rows a person reads: path, type, required, constraints, description."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contract_platform.catalog.documents import resolve_pointer

__all__ = ["FieldRow", "field_rows"]

_CONSTRAINTS = (
    "format",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "const",
    "enum",
    "x-unknownValuePolicy",
)


@dataclass(frozen=True)
class FieldRow:
    path: str
    type: str
    required: bool
    constraints: str
    description: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "type": self.type,
            "required": self.required,
            "constraints": self.constraints,
            "description": self.description,
        }


def _deref(root: Mapping[str, Any], node: Any, seen: frozenset[str] = frozenset()) -> tuple[Any, frozenset[str]]:
    while isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
        ref = node["$ref"]
        if ref in seen:
            return {"description": f"(recursive: see {ref})"}, seen
        seen = seen | {ref}
        try:
            node = {**resolve_pointer(root, ref[1:]), **{k: v for k, v in node.items() if k != "$ref"}}
        except KeyError:
            return {"description": f"(unresolved {ref})"}, seen
    return node, seen


def _type_of(node: Mapping[str, Any]) -> str:
    declared = node.get("type")
    if isinstance(declared, list):
        return " | ".join(declared)
    if declared:
        return str(declared)
    for keyword in ("oneOf", "anyOf"):
        if keyword in node:
            return keyword
    return "any"


def _constraints(node: Mapping[str, Any]) -> str:
    parts = []
    for key in _CONSTRAINTS:
        if key in node:
            value = node[key]
            shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
            parts.append(f"{key}: {shown}")
    if node.get("x-money"):
        parts.append("money")
    return "; ".join(parts)


def field_rows(schema: Mapping[str, Any], *, prefix: str = "", max_depth: int = 8) -> list[FieldRow]:
    """Rows for every property, nested objects and array items included (``lines[].price``)."""
    rows: list[FieldRow] = []

    def visit(node: Any, path: str, required: bool, depth: int, seen: frozenset[str]) -> None:
        node, seen = _deref(schema, node, seen)
        if not isinstance(node, Mapping):
            return
        if path:
            rows.append(FieldRow(path, _type_of(node), required, _constraints(node), str(node.get("description", ""))))
        if depth >= max_depth:
            return
        needed = set(node.get("required", []))
        for name, child in (node.get("properties") or {}).items():
            visit(child, f"{path}.{name}" if path else str(name), name in needed, depth + 1, seen)
        items = node.get("items")
        if isinstance(items, Mapping):
            item_node, item_seen = _deref(schema, items, seen)
            for name, child in (item_node.get("properties") or {}).items() if isinstance(item_node, Mapping) else []:
                visit(child, f"{path}[].{name}", name in set(item_node.get("required", [])), depth + 1, item_seen)

    visit(schema, prefix, True, 0, frozenset())
    return rows

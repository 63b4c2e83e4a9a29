"""Following an envelope JSON pointer (``/payload/lines/0/price``) through the schemas that describe it.

Used to check that PII, ordering and idempotency pointers name fields the schemas really have.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contract_platform.catalog.documents import resolve_pointer

__all__ = ["schema_for_pointer", "split_pointer"]

_COMBINATORS = ("allOf", "anyOf", "oneOf")


def split_pointer(pointer: str) -> list[str]:
    if not pointer.startswith("/"):
        raise ValueError(f"{pointer!r} is not a JSON pointer; it must start with '/'")
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")]


def _deref(root: Mapping[str, Any], node: Any, depth: int = 0) -> Any:
    while isinstance(node, Mapping) and isinstance(node.get("$ref"), str) and depth < 32:
        try:
            node = resolve_pointer(root, node["$ref"][1:])
        except KeyError:
            return None
        depth += 1
    return node


def _child(root: Mapping[str, Any], node: Any, token: str) -> Any:
    node = _deref(root, node)
    if not isinstance(node, Mapping):
        return None
    properties = node.get("properties")
    if isinstance(properties, Mapping) and token in properties:
        return properties[token]
    if (token.isdigit() or token == "-") and "items" in node:
        return node["items"]
    for keyword in _COMBINATORS:
        for branch in node.get(keyword, []) or []:
            found = _child(root, branch, token)
            if found is not None:
                return found
    return None


def schema_for_pointer(root: Mapping[str, Any], tokens: list[str]) -> Any:
    """The subschema of ``root`` that describes the value at ``tokens``, or None if the schema has no such field."""
    node: Any = root
    for token in tokens:
        node = _child(root, node, token)
        if node is None:
            return None
    return _deref(root, node)

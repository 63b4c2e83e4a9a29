"""Schema positions: where a keyword's value is itself a schema (``not``, each value under ``properties``, each
item of ``allOf``...), never data (``const``, ``enum``, ``default``, ``examples``), so a property that happens
to be called ``const`` is a property.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from contract_platform.catalog.documents import pointer_from_path

__all__ = ["REF_KEYWORDS", "child_schemas", "subschemas"]

REF_KEYWORDS: Final = ("$ref", "$dynamicRef", "$recursiveRef")


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


def child_schemas(node: Mapping[str, Any], pointer: str) -> Iterator[tuple[Any, str]]:
    for _, _, sub, here in subschemas(node, pointer):
        yield sub, here

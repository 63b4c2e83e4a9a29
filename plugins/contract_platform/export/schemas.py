"""JSON Schemas of the catalogue -> AsyncAPI Schema Objects that live under ``components.schemas``.

AsyncAPI 3.0's default schema format is a superset of JSON Schema draft-07, and a ``$ref`` in an
AsyncAPI document resolves against the whole document. So ``hoist_schema`` takes one schema file
(draft 2020-12 or draft-07) and returns it as components:

- the root becomes ``<name>``; each top-level ``$defs`` / ``definitions`` entry becomes ``<name>.<Def>``;
- every ``$ref`` is rewritten to ``#/components/schemas/...`` (``#/$defs/Line/properties/sku`` ->
  ``#/components/schemas/<name>.Line/properties/sku``; ``#`` -> ``#/components/schemas/<name>``);
- ``$schema`` and ``$id`` are dropped (an ``$id`` would change the base every ``$ref`` below it resolves against);
- draft 2020-12 keywords with a draft-07 spelling are translated, with ``$ref`` pointers into them:
  ``prefixItems``/``items`` -> ``items``/``additionalItems``, ``dependentRequired``/``dependentSchemas``
  -> ``dependencies``; a ``$ref`` with constraining siblings becomes ``allOf: [{$ref}]`` plus the
  siblings (draft-07 ignores siblings of ``$ref``). Keywords draft-07 has no word for
  (``unevaluatedProperties``...) are kept: draft-07 readers ignore them.

Data keywords (``const``, ``enum``, ``default``, ``examples``) and extensions (``x-pii``...) are copied
as they are; a property *named* ``$id`` is a property, not a keyword.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from contract_platform.errors import SchemaError

__all__ = ["COMPONENT_KEY", "component_key", "component_ref", "hoist_schema"]

# Keys of components.schemas (and of every other AsyncAPI component map) must match this.
COMPONENT_KEY = re.compile(r"^[\w.\-]+$", re.ASCII)
_COMPONENTS = "#/components/schemas/"
_DEF_KEYWORDS = ("$defs", "definitions")
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "dependentSchemas", "$defs", "definitions", "dependencies"}
)
_SCHEMA_VALUES = frozenset(
    {
        "items",
        "additionalItems",
        "additionalProperties",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "unevaluatedItems",
        "unevaluatedProperties",
        "contentSchema",
    }
)
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_DROPPED = frozenset({"$schema", "$id"})
# Siblings of $ref that only annotate: draft-07 ignoring them loses nothing a validator checks.
_ANNOTATIONS = frozenset(
    {"title", "description", "$comment", "examples", "default", "deprecated", "readOnly", "writeOnly"}
)


def component_key(text: str) -> str:
    """``text`` made a valid component key (letters, digits, ``.``, ``-``, ``_``)."""
    return re.sub(r"[^\w.\-]", "_", text, flags=re.ASCII) or "_"


def component_ref(key: str, *tokens: str) -> str:
    return _COMPONENTS + key + "".join("/" + _encode(token) for token in tokens)


def _encode(token: str) -> str:
    """A JSON pointer token inside a URI fragment (RFC 6901 sections 4 and 6)."""
    return quote(token.replace("~", "~0").replace("/", "~1"), safe="$~")


def _decode(fragment: str) -> list[str]:
    if fragment == "":
        return []
    return [raw.replace("~1", "/").replace("~0", "~") for raw in fragment[1:].split("/")]


def hoist_schema(schema: Mapping[str, Any], *, name: str, file: str) -> dict[str, dict[str, Any]]:
    """``{component key: AsyncAPI schema}``: the root under ``name``, its definitions under ``name.<Def>``.

    ``file`` only names the schema in errors. Raises ``SchemaError`` for a ``$ref`` that is not local
    (the catalogue loader refuses those, so this is a guard, not a path users meet).
    """
    root = {key: value for key, value in schema.items() if key not in _DEF_KEYWORDS}
    definitions: dict[tuple[str, str], str] = {}
    bodies: dict[str, Any] = {}
    taken = {name}
    for keyword in _DEF_KEYWORDS:
        for def_name, body in dict(schema.get(keyword) or {}).items():
            key = _unique(f"{name}.{component_key(def_name)}", taken)
            definitions[(keyword, def_name)] = key
            bodies[key] = body

    def rewrite(ref: Any, where: str) -> str:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise SchemaError(file, where, f"$ref {ref!r} is not local; keep definitions in $defs")
        tokens = _decode(ref[1:])
        if len(tokens) >= 2 and (tokens[0], tokens[1]) in definitions:
            key, base, rest = definitions[(tokens[0], tokens[1])], schema[tokens[0]][tokens[1]], tokens[2:]
        else:
            key, base, rest = name, schema, tokens
        return component_ref(key, *_translate_pointer(base, rest))

    hoisted = {name: _convert(root, rewrite, "")}
    for (keyword, def_name), key in definitions.items():
        hoisted[key] = _convert(bodies[key], rewrite, f"/{keyword}/{def_name}")
    return hoisted


def _unique(key: str, taken: set[str]) -> str:
    candidate, n = key, 1
    while candidate in taken:
        n += 1
        candidate = f"{key}-{n}"
    taken.add(candidate)
    return candidate


def _convert(node: Any, rewrite: Callable[[Any, str], str], where: str) -> Any:
    """One schema node in draft-07 spelling, with its ``$ref`` s rewritten (recursively)."""
    if not isinstance(node, Mapping):
        return copy.deepcopy(node)  # true / false schemas
    out: dict[str, Any] = {}
    for key, value in node.items():
        here = f"{where}/{key}"
        if key in _DROPPED:
            continue
        if key == "$ref":
            out[key] = rewrite(value, here)
        elif key in _SCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {
                k: _convert(v, rewrite, f"{here}/{k}") if _is_schema(key, v) else copy.deepcopy(v)
                for k, v in value.items()
            }
        elif key in _SCHEMA_LISTS and isinstance(value, Sequence) and not isinstance(value, str):
            out[key] = [_convert(v, rewrite, f"{here}/{i}") for i, v in enumerate(value)]
        elif key in _SCHEMA_VALUES:
            out[key] = _convert(value, rewrite, here)
        else:
            out[key] = copy.deepcopy(value)
    return _wrap_ref(_to_draft7(out))


def _is_schema(keyword: str, value: Any) -> bool:
    # draft-07 ``dependencies`` maps to either a schema or a list of property names.
    return not (keyword == "dependencies" and isinstance(value, list))


def _to_draft7(node: dict[str, Any]) -> dict[str, Any]:
    if "prefixItems" in node:
        tuple_items = node.pop("prefixItems")
        if "items" in node:
            node["additionalItems"] = node.pop("items")
        node["items"] = tuple_items
    if "dependentRequired" in node or "dependentSchemas" in node:
        dependencies = dict(node.pop("dependentRequired", {}))
        dependencies.update(node.pop("dependentSchemas", {}))
        node["dependencies"] = {**node.get("dependencies", {}), **dependencies}
    return node


def _wrap_ref(node: dict[str, Any]) -> dict[str, Any]:
    """``{$ref, required: [...]}`` -> ``{allOf: [{$ref}], required: [...]}``: draft-07 ignores siblings of $ref."""
    if "$ref" not in node or all(key in _ANNOTATIONS or key.startswith("x-") for key in node if key != "$ref"):
        return node
    ref = node.pop("$ref")
    node["allOf"] = [{"$ref": ref}, *node.get("allOf", [])]
    return node


def _translate_pointer(base: Any, tokens: list[str]) -> list[str]:
    """A pointer into the original schema, as a pointer into its converted form.

    Follows the original along ``tokens`` so that ``prefixItems/0`` becomes ``items/0``, ``items``
    next to ``prefixItems`` becomes ``additionalItems``, and ``dependentSchemas/x`` becomes
    ``dependencies/x``. Tokens that do not resolve are kept; ``hoist_schema``'s callers check refs.
    """
    translated: list[str] = []
    node = base
    for token in tokens:
        out = token
        if isinstance(node, Mapping):
            if token == "prefixItems":
                out = "items"
            elif token == "items" and "prefixItems" in node:
                out = "additionalItems"
            elif token in ("dependentSchemas", "dependentRequired"):
                out = "dependencies"
            node = node.get(token)
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            node = None
        translated.append(out)
    return translated

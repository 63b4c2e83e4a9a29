"""Property tests: a schema is compatible with itself, and malformed input only ever raises SchemaError."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from contract_platform.catalog.schemas import schema_problems
from contract_platform.compat import Mode, check_compatibility, diff_schemas
from contract_platform.errors import SchemaError

NAMES = st.sampled_from(["a", "b", "c"])
TYPES = ["null", "boolean", "object", "array", "number", "integer", "string"]
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(-3, 3, allow_nan=False), st.text(max_size=3)
)
SMALL = st.integers(0, 4)

LEAF = st.one_of(
    st.booleans(),
    st.just({"$ref": "#/$defs/D"}),
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.one_of(
                st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True)
            ),
            "enum": st.lists(SCALARS, min_size=1, max_size=3),
            "const": SCALARS,
            "minLength": SMALL,
            "maxLength": SMALL,
            "pattern": st.sampled_from(["^a", "[0-9]+", "x$"]),
            "format": st.sampled_from(["date", "email"]),
            "minimum": st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False)),
            "exclusiveMaximum": st.integers(-5, 5),
            "multipleOf": st.sampled_from([1, 2, 0.5]),
            "minItems": SMALL,
            "uniqueItems": st.booleans(),
            "required": st.lists(NAMES, max_size=2, unique=True),
            "maxProperties": SMALL,
            "title": st.text(max_size=3),
            "x-unknownValuePolicy": st.sampled_from(["fail", "ignore"]),
        },
    ),
)


def _composite(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    branches = st.lists(children, min_size=1, max_size=3)
    return st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(TYPES),
            "properties": st.dictionaries(NAMES, children, max_size=3),
            "patternProperties": st.dictionaries(st.sampled_from(["^a", "c$"]), children, max_size=2),
            "additionalProperties": children,
            "propertyNames": children,
            "dependentSchemas": st.dictionaries(NAMES, children, max_size=1),
            "dependencies": st.dictionaries(NAMES, st.one_of(st.lists(NAMES, max_size=2), children), max_size=1),
            "items": st.one_of(children, st.lists(children, max_size=2)),
            "prefixItems": branches,
            "additionalItems": children,
            "contains": children,
            "allOf": branches,
            "anyOf": branches,
            "oneOf": branches,
            "not": children,
            "if": children,
            "then": children,
            "else": children,
        },
    )


def _one_tuple_spelling(schema: Any) -> Any:
    """prefixItems (2020-12) and array-form items (draft-07) do not mix in one schema."""
    if isinstance(schema, dict) and "prefixItems" in schema and isinstance(schema.get("items"), list):
        return {k: v for k, v in schema.items() if k != "prefixItems"}
    return schema


SCHEMAS = st.recursive(LEAF, lambda children: _composite(children).map(_one_tuple_spelling), max_leaves=10)
DEFINITIONS = SCHEMAS.filter(lambda d: not (isinstance(d, dict) and "$ref" in d))
DOCUMENTS = st.builds(
    lambda body, definition: {**(body if isinstance(body, dict) else {"allOf": [body]}), "$defs": {"D": definition}},
    SCHEMAS,
    DEFINITIONS,
)

JSON = st.recursive(
    SCALARS | st.floats(),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
    max_leaves=8,
)
KEYWORDS = st.sampled_from(
    ["type", "enum", "const", "properties", "required", "items", "prefixItems", "additionalItems", "additionalProperties",
     "patternProperties", "anyOf", "allOf", "oneOf", "not", "if", "then", "else", "minimum", "exclusiveMinimum",
     "maxLength", "multipleOf", "dependencies", "dependentRequired", "dependentSchemas", "contains", "minContains",
     "$ref", "$defs", "definitions", "$id", "$anchor", "propertyNames", "uniqueItems", "title"]
)  # fmt: skip
REFS = st.sampled_from(
    ["#", "#/$defs/a", "#/properties", "#/properties/a", "#x", "other.json", "#/items/0", "#/definitions"]
)
SCHEMAISH = st.recursive(
    st.booleans() | JSON,
    lambda c: st.dictionaries(KEYWORDS, c | JSON | REFS, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENTS)
def test_a_schema_is_compatible_with_itself(schema: dict[str, Any]) -> None:
    if schema_problems("generated", schema):  # e.g. array-form items: draft-2019-09 reads it
        schema = {**schema, "$schema": "https://json-schema.org/draft/2019-09/schema"}
    assume(not schema_problems("generated", schema))
    same = copy.deepcopy(schema)
    changes = diff_schemas(schema, same)
    assert [c for c in changes if not (c.backward and c.forward)] == []
    assert check_compatibility(schema, same, mode=Mode.FULL).compatible


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SCHEMAISH, SCHEMAISH)
def test_diff_raises_nothing_but_schema_error(old: Any, new: Any) -> None:
    try:
        diff_schemas(old, new)
        diff_schemas(new, old)
    except SchemaError:
        pass

"""hoist_schema: a draft 2020-12 schema, moved under components.schemas and spelled in draft-07, means the same.

Each case validates the same instances with the original (draft 2020-12, refs in the file) and with
the hoisted form (draft-07, refs through components.schemas) and expects the same verdicts.
"""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft7Validator, Draft202012Validator

from contract_platform.errors import SchemaError
from contract_platform.export.schemas import COMPONENT_KEY, component_key, hoist_schema

TUPLE_AND_DEPENDENCIES = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "urn:test:payload",
    "type": "object",
    "properties": {
        "$id": {"type": "string", "description": "a property that happens to be called $id"},
        "point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "items": False},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
        "card": {"type": "string"},
        "billingAddress": {"type": "string"},
        "line": {"$ref": "#/$defs/Line", "required": ["sku", "qty"]},
        "firstCoordinate": {"$ref": "#/properties/point/prefixItems/0"},
        "sku": {"$ref": "#/$defs/Line/properties/sku"},
        "child": {"$ref": "#"},
    },
    "dependentRequired": {"card": ["billingAddress"]},
    "$defs": {
        "Tag": {"type": "string", "pattern": "^[a-z]+$"},
        "Line": {
            "type": "object",
            "properties": {"sku": {"type": "string", "minLength": 3}, "qty": {"type": "integer"}},
        },
        "Bad Name/with~chars": {"type": "integer"},
    },
}

INSTANCES = [
    {},
    {"$id": "x", "point": [1, 2]},
    {"point": [1, 2, 3]},
    {"point": [1, "two"]},
    {"tags": ["ok", "Not-Ok"]},
    {"card": "4111"},
    {"card": "4111", "billingAddress": "Main St 1"},
    {"line": {"sku": "abc"}},
    {"line": {"sku": "abc", "qty": 2}},
    {"line": {"sku": "ab", "qty": 2}},
    {"firstCoordinate": "north"},
    {"firstCoordinate": 4.5},
    {"sku": "ab"},
    {"child": {"child": {"point": [1, 2]}}},
    {"child": {"child": {"point": [1]}, "tags": [1]}},
]


def in_document(hoisted: dict[str, Any], key: str) -> Draft7Validator:
    return Draft7Validator({"$ref": f"#/components/schemas/{key}", "components": {"schemas": hoisted}})


@pytest.mark.parametrize("index", range(len(INSTANCES)))
def test_hoisted_schema_gives_the_same_verdicts(index):
    instance = INSTANCES[index]
    hoisted = hoist_schema(TUPLE_AND_DEPENDENCIES, name="test.thing.v1.payload", file="payload.schema.json")
    original = Draft202012Validator(TUPLE_AND_DEPENDENCIES).is_valid(instance)
    assert in_document(hoisted, "test.thing.v1.payload").is_valid(instance) is original


def test_definitions_become_components_with_valid_keys():
    hoisted = hoist_schema(TUPLE_AND_DEPENDENCIES, name="test.thing.v1.payload", file="payload.schema.json")
    assert set(hoisted) == {
        "test.thing.v1.payload",
        "test.thing.v1.payload.Tag",
        "test.thing.v1.payload.Line",
        "test.thing.v1.payload.Bad_Name_with_chars",
    }
    assert all(COMPONENT_KEY.match(key) for key in hoisted)
    root = hoisted["test.thing.v1.payload"]
    assert "$defs" not in root and "$id" not in root and "$schema" not in root
    assert "$id" in root["properties"]  # a property is data, not the keyword
    assert root["properties"]["point"]["items"] == [{"type": "number"}, {"type": "number"}]
    assert root["properties"]["point"]["additionalItems"] is False
    assert root["dependencies"] == {"card": ["billingAddress"]}
    assert root["properties"]["line"]["allOf"] == [{"$ref": "#/components/schemas/test.thing.v1.payload.Line"}]
    assert root["properties"]["firstCoordinate"]["$ref"].endswith("/properties/point/items/0")


def test_annotation_only_siblings_keep_the_plain_ref():
    schema = {"$defs": {"A": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/A", "description": "why"}}}
    hoisted = hoist_schema(schema, name="s", file="f")
    assert hoisted["s"]["properties"]["a"] == {"$ref": "#/components/schemas/s.A", "description": "why"}


def test_data_keywords_are_copied_untouched():
    schema = {"properties": {"a": {"const": {"$ref": "#/not/a/ref"}, "examples": [{"$id": 1}]}}}
    hoisted = hoist_schema(schema, name="s", file="f")
    assert hoisted["s"]["properties"]["a"] == schema["properties"]["a"]


def test_a_remote_ref_is_refused_with_file_and_pointer():
    with pytest.raises(SchemaError) as caught:
        hoist_schema(
            {"properties": {"a": {"$ref": "https://example.com/a.json"}}}, name="s", file="x/payload.schema.json"
        )
    assert caught.value.problem.file == "x/payload.schema.json"
    assert caught.value.problem.pointer == "/properties/a/$ref"


@pytest.mark.parametrize(("text", "key"), [("OrderLine", "OrderLine"), ("a b/c", "a_b_c"), ("", "_"), ("ü", "_")])
def test_component_key(text, key):
    assert component_key(text) == key

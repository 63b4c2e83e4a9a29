"""The archive validation's fast path (jsonschema-rs) reads every draft with the same meaning as the
platform's validator (jsonschema), and resolves nothing outside the schema either."""

from __future__ import annotations

from typing import Any

import pytest

from contract_platform.catalog.schemas import validator_for
from contract_platform.validation.schemas import SchemaCheck

D04 = "http://json-schema.org/draft-04/schema#"
D06 = "http://json-schema.org/draft-06/schema#"
D07 = "http://json-schema.org/draft-07/schema#"
D2019 = "https://json-schema.org/draft/2019-09/schema"
D2020 = "https://json-schema.org/draft/2020-12/schema"

# (schema, instances): each schema leans on a keyword whose meaning differs between drafts
CASES: list[tuple[Any, list[Any]]] = [
    ({"$schema": D04, "type": "object", "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}}},
     [{"n": 0}, {"n": 0.5}, {"n": -1}]),
    ({"$schema": D06, "type": "object", "properties": {"n": {"type": "number", "exclusiveMinimum": 0}, "c": {"const": "x"}}},
     [{"n": 0}, {"n": 1}, {"c": "y"}, {"c": "x"}]),
    ({"$schema": D04, "type": "object", "properties": {"c": {"const": "x"}}}, [{"c": "y"}]),  # no const in draft-04
    ({"$schema": D07, "type": "object", "properties": {"t": {"type": "array", "items": [{"type": "string"}],
      "additionalItems": False}}}, [{"t": ["a"]}, {"t": ["a", "b"]}, {"t": [1]}]),
    ({"$schema": D07, "definitions": {"s": {"type": "string"}}, "type": "object",
      "properties": {"r": {"$ref": "#/definitions/s", "maxLength": 1}}}, [{"r": "long"}, {"r": 1}]),  # siblings ignored
    ({"$schema": D2019, "type": "object", "properties": {"a": {}}, "unevaluatedProperties": False,
      "dependentRequired": {"a": ["b"]}}, [{"a": 1}, {"a": 1, "b": 2}, {"z": 1}]),
    ({"$schema": D2020, "type": "object", "properties": {"t": {"type": "array", "prefixItems": [{"type": "string"}],
      "items": False}}}, [{"t": ["a"]}, {"t": ["a", "b"]}]),
    ({"$schema": D2020, "type": "object", "properties": {"t": {"type": "array", "items": {"type": "string"},
      "additionalItems": False}}}, [{"t": ["a", "b"]}]),  # additionalItems is no 2020-12 keyword
]  # fmt: skip


@pytest.mark.parametrize(("schema", "examples"), CASES)
def test_fast_path_and_validator_agree_in_every_draft(schema: Any, examples: list[Any]) -> None:
    check, reference = SchemaCheck(schema), validator_for(schema)
    assert check.validator is not None  # jsonschema-rs took the schema: the fast path is really compared
    for instance in examples:
        assert check.accepts(instance) == reference.is_valid(instance), instance


def test_the_fast_path_resolves_nothing_outside_the_schema() -> None:
    check = SchemaCheck({"properties": {"a": {"$ref": "http://127.0.0.1:9/never.json"}}})
    assert check.validator is None  # refused to compile: such a payload goes to the slow path, which refuses too


def test_a_property_named_const_is_a_property_for_the_fast_paths_format_search() -> None:
    schema = {"anyOf": [{"type": "object", "properties": {"const": {"type": "string", "format": "date-time"}}}]}
    check, reference = SchemaCheck(schema), validator_for(schema)
    for instance in ({"const": "not a time"}, {"const": "2026-07-01T10:15:30Z"}):
        assert check.accepts(instance) == reference.is_valid(instance), instance

"""Local $ref (both drafts), recursion, anchors, and the schemas the engine refuses."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.compat.diffs import directions_of

from contract_platform.compat import Change, RuleId, diff_schemas
from contract_platform.errors import SchemaError


def _diff(old: Any, new: Any) -> list[Change]:
    return diff_schemas(old, new)


def _address(min_length: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"street": {"type": "string", "minLength": min_length}},
        "required": ["street"],
    }


def test_ref_and_inline_schema_are_the_same() -> None:
    by_ref = {"properties": {"home": {"$ref": "#/$defs/Address"}}, "$defs": {"Address": _address(1)}}
    inline = {"properties": {"home": _address(1)}}
    assert _diff(by_ref, inline) == []
    assert _diff(inline, by_ref) == []


def test_draft07_definitions_change_is_reported_once_at_the_definition() -> None:
    def schema(min_length: int) -> dict[str, Any]:
        return {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "properties": {"home": {"$ref": "#/definitions/Address"}, "work": {"$ref": "#/definitions/Address"}},
            "definitions": {"Address": _address(min_length)},
        }

    [change] = _diff(schema(10), schema(5))
    assert (change.rule, change.path) == (
        RuleId.MIN_LENGTH_DECREASED,
        "/definitions/Address/properties/street/minLength",
    )
    assert "Address" in change.message and "street" in change.message


def test_recursive_ref_terminates_and_finds_deep_changes() -> None:
    def tree(max_length: int) -> dict[str, Any]:
        node = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": max_length},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
            },
        }
        return {"$ref": "#/$defs/Node", "$defs": {"Node": node}}

    assert _diff(tree(5), tree(5)) == []
    [change] = _diff(tree(5), tree(3))
    assert change.path == "/$defs/Node/properties/name/maxLength"
    assert directions_of(tree(5), {}) == (True, False)


def test_mutual_recursion_terminates() -> None:
    schema = {
        "$defs": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
            "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}, "n": {"type": "integer"}}},
        },
        "$ref": "#/$defs/A",
    }
    widened = {
        **schema,
        "$defs": {
            **schema["$defs"],
            "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}, "n": {"type": "number"}}},
        },
    }
    assert [c.rule for c in _diff(schema, widened)] == [RuleId.TYPE_WIDENED]


def test_anchor_refs_in_both_drafts() -> None:
    draft07 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "properties": {"home": {"$ref": "#Address"}},
        "definitions": {"Address": {"$id": "#Address", **_address(1)}},
    }
    draft2020 = {"properties": {"home": {"$ref": "#addr"}}, "$defs": {"Address": {"$anchor": "addr", **_address(1)}}}
    assert {c.rule for c in _diff(draft07, draft2020)} <= {
        RuleId.ANNOTATION_ADDED, RuleId.ANNOTATION_REMOVED, RuleId.DIALECT_CHANGED
    }  # fmt: skip
    stricter = {**draft2020, "$defs": {"Address": {"$anchor": "addr", **_address(5)}}}
    assert RuleId.MIN_LENGTH_INCREASED in {c.rule for c in _diff(draft07, stricter)}


def test_ref_with_sibling_keywords_applies_both() -> None:
    old = {"$defs": {"S": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/S", "maxLength": 5}}}
    new = {"$defs": {"S": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/S", "maxLength": 3}}}
    [change] = _diff(old, new)
    assert (change.rule, change.path) == (RuleId.MAX_LENGTH_DECREASED, "/properties/a/maxLength")


def test_draft07_ignores_ref_siblings_2020_applies_them() -> None:
    d07 = {"$schema": "http://json-schema.org/draft-07/schema#"}
    old = {**d07, "definitions": {"S": {"type": "string"}}, "properties": {"a": {"$ref": "#/definitions/S"}}}
    new = {
        **d07,
        "definitions": {"S": {"type": "string"}},
        "properties": {"a": {"$ref": "#/definitions/S", "maxLength": 3}},
    }
    assert directions_of(old, new) == (True, True)  # maxLength beside $ref asserts nothing in draft-07
    new2020 = {"$defs": {"S": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/S", "maxLength": 3}}}
    assert directions_of(old, new2020) == (False, True)


def test_refs_with_the_root_id_and_escaped_pointers_resolve() -> None:
    old = {
        "$id": "https://example.com/x.json",
        "properties": {"a": {"$ref": "https://example.com/x.json#/$defs/a~1b"}},
        "$defs": {"a/b": {"type": "integer"}},
    }
    new = {"properties": {"a": {"$ref": "#/$defs/c%20d"}}, "$defs": {"c d": {"type": "integer"}}}
    assert [c.rule for c in _diff(old, new)] == [RuleId.ANNOTATION_REMOVED]


@pytest.mark.parametrize(
    ("schema", "pointer", "phrase"),
    [
        ({"properties": {"a": {"$ref": "other.json#/x"}}}, "/properties/a/$ref", "leaves the catalogue"),
        ({"properties": {"a": {"$ref": "#/$defs/missing"}}}, "/properties/a/$ref", "does not resolve"),
        ({"properties": {"a": {"$ref": "#nowhere"}}}, "/properties/a/$ref", "names no anchor"),
        ({"type": "string", "maxLength": "ten"}, "/maxLength", "not a valid JSON Schema (2020-12)"),
        ({"type": "strin"}, "/type", "not a valid JSON Schema (2020-12)"),
        ({"properties": {"a": 5}}, "/properties/a", "not a valid JSON Schema (2020-12)"),
        ({"anyOf": []}, "/anyOf", "not a valid JSON Schema (2020-12)"),
        ({"multipleOf": 0}, "/multipleOf", "not a valid JSON Schema (2020-12)"),
        ({"properties": {"const": {"$dynamicRef": "http://127.0.0.1:9/x"}}}, "/properties/const/$dynamicRef", "leaves"),
        ({"items": {"$ref": "file:///etc/passwd"}}, "/items/$ref", "leaves the catalogue"),
    ],
)
def test_schemas_invalid_under_their_draft_raise_schema_error_with_the_pointer(
    schema: dict[str, Any], pointer: str, phrase: str
) -> None:
    with pytest.raises(SchemaError) as raised:
        _diff({}, schema)
    assert raised.value.problem.file == "new schema"
    assert raised.value.problem.pointer == pointer
    assert phrase in raised.value.problem.message


def test_a_circular_reference_in_a_valid_schema_gets_a_conservative_verdict_not_an_error() -> None:
    circular = {"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"}
    changes = _diff({}, circular)
    assert RuleId.KEYWORD_UNMODELLED in {c.rule for c in changes}
    assert directions_of({}, circular) == (False, False)


def test_a_draft07_reference_into_a_tuple_item_follows_it_after_the_rewrite() -> None:
    d07 = "http://json-schema.org/draft-07/schema#"

    def schema(max_length: int) -> dict[str, Any]:
        return {
            "$schema": d07,
            "type": "object",
            "properties": {
                "pair": {"type": "array", "items": [{"type": "string", "maxLength": max_length}]},
                "first": {"$ref": "#/properties/pair/items/0"},
                "data": {"const": {"$ref": "#/properties/pair/items/0"}},  # data: never rewritten
            },
        }

    old, new = schema(3), schema(5)
    assert [(c.rule, c.path) for c in _diff(old, new)] == [
        (RuleId.MAX_LENGTH_INCREASED, "/properties/pair/items/0/maxLength")
    ]
    assert old["properties"]["data"] == {"const": {"$ref": "#/properties/pair/items/0"}}


def test_an_anchor_under_a_property_named_const_is_found() -> None:
    def schema(kind: str) -> dict[str, Any]:
        return {"properties": {"const": {"$anchor": "c", "type": kind}, "copy": {"$ref": "#c"}}}

    changes = _diff(schema("string"), schema("integer"))
    assert [c.rule for c in changes] == [RuleId.TYPE_CHANGED]  # followed, not "names no anchor"

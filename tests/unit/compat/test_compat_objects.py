"""Object keywords, and the strict/lenient reading of open content models."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.compat.diffs import directions_of, rules_of

from contract_platform.compat import Change, Policy, RuleId, diff_schemas


def _diff(old: Any, new: Any, policy: Policy = Policy.STRICT) -> list[Change]:
    return diff_schemas(old, new, policy=policy)


def _obj(props: dict[str, Any], **keywords: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, **keywords}


STRING = {"type": "string"}
D07 = {"$schema": "http://json-schema.org/draft-07/schema#"}


def test_required_added_breaks_backward() -> None:
    old, new = _obj({"id": STRING}), _obj({"id": STRING}, required=["id"])
    [change] = _diff(old, new)
    assert (change.rule, change.path, change.backward, change.forward) == (
        RuleId.REQUIRED_ADDED,
        "/required",
        False,
        True,
    )
    assert "id" in change.message


def test_required_removed_breaks_forward_and_reorder_is_no_change() -> None:
    assert directions_of(_obj({}, required=["a", "b"]), _obj({}, required=["b"])) == (True, False)
    assert _diff(_obj({}, required=["a", "b"]), _obj({}, required=["b", "a"])) == []


def test_optional_property_added_to_open_model_strict_breaks_backward() -> None:
    old, new = _obj({"id": STRING}), _obj({"id": STRING, "note": STRING})
    [change] = _diff(old, new, Policy.STRICT)
    assert (change.rule, change.path) == (RuleId.PROPERTY_ADDED_OPEN_MODEL, "/properties/note")
    assert (change.backward, change.forward) == (False, True)


def test_optional_property_added_to_open_model_lenient_is_allowed() -> None:
    old, new = _obj({"id": STRING}), _obj({"id": STRING, "note": STRING})
    assert rules_of(old, new, Policy.LENIENT) == [RuleId.PROPERTY_ADDED_OPEN_MODEL]
    assert directions_of(old, new, Policy.LENIENT) == (True, True)


def test_optional_property_added_to_closed_model_is_backward_compatible_but_forward_breaking() -> None:
    old = _obj({"id": STRING}, additionalProperties=False)
    new = _obj({"id": STRING, "note": STRING}, additionalProperties=False)
    for policy in Policy:
        assert rules_of(old, new, policy) == [RuleId.PROPERTY_ADDED_CLOSED_MODEL]
        assert directions_of(old, new, policy) == (True, False)


def test_property_removed_from_open_model_depends_on_policy() -> None:
    old, new = _obj({"id": STRING, "legacy": STRING}), _obj({"id": STRING})
    assert rules_of(old, new) == [RuleId.PROPERTY_REMOVED_OPEN_MODEL]
    assert _diff(old, new)[0].path == "/properties/legacy"
    assert directions_of(old, new, Policy.STRICT) == (True, False)
    assert directions_of(old, new, Policy.LENIENT) == (True, True)


def test_property_removed_from_closed_model_breaks_backward() -> None:
    old = _obj({"id": STRING, "legacy": STRING}, additionalProperties=False)
    new = _obj({"id": STRING}, additionalProperties=False)
    assert rules_of(old, new) == [RuleId.PROPERTY_REMOVED_CLOSED_MODEL]
    assert directions_of(old, new, Policy.LENIENT) == (False, True)


def test_property_added_is_compared_with_the_additional_properties_schema_it_replaces() -> None:
    old = _obj({}, additionalProperties=STRING)
    assert directions_of(old, _obj({"a": STRING}, additionalProperties=STRING)) == (True, True)
    assert rules_of(old, _obj({"a": {"type": "integer"}}, additionalProperties=STRING)) == [
        RuleId.PROPERTY_ADDED, RuleId.TYPE_CHANGED,
    ]  # fmt: skip


def test_property_added_where_a_pattern_governed_the_name() -> None:
    old = _obj({}, patternProperties={"^x-": {"type": "integer"}}, additionalProperties=False)
    new = _obj(
        {"x-id": {"type": "integer", "minimum": 0}},
        patternProperties={"^x-": {"type": "integer"}},
        additionalProperties=False,
    )
    assert rules_of(old, new) == [RuleId.PROPERTY_ADDED, RuleId.MINIMUM_ADDED]


@pytest.mark.parametrize(
    ("old", "new", "rule", "directions"),
    [
        (True, False, RuleId.SCHEMA_MADE_FALSE, (False, True)),
        (False, True, RuleId.SCHEMA_FALSE_RELAXED, (True, False)),
        (False, STRING, RuleId.SCHEMA_FALSE_RELAXED, (True, False)),
        (STRING, {"type": "string", "maxLength": 3}, RuleId.MAX_LENGTH_ADDED, (False, True)),
    ],
)
def test_additional_properties(old: Any, new: Any, rule: RuleId, directions: tuple[bool, bool]) -> None:
    changes = _diff(_obj({}, additionalProperties=old), _obj({}, additionalProperties=new))
    assert [c.rule for c in changes] == [rule]
    assert changes[0].path.startswith("/additionalProperties")
    assert (all(c.backward for c in changes), all(c.forward for c in changes)) == directions


def test_pattern_properties() -> None:
    old = _obj({}, patternProperties={"^S_": STRING, "^I_": {"type": "integer"}})
    swapped = _obj({}, patternProperties={"^S_": {"type": "integer"}, "^I_": STRING})
    assert directions_of(old, swapped) == (False, False)
    assert rules_of(old, _obj({}, patternProperties={"^S_": STRING})) == [RuleId.PROPERTY_REMOVED_OPEN_MODEL]


def test_property_names() -> None:
    old = _obj({}, propertyNames={"maxLength": 5})
    assert rules_of(old, _obj({}, propertyNames={"maxLength": 8})) == [RuleId.MAX_LENGTH_INCREASED]
    assert directions_of(old, _obj({})) == (True, False)


def test_dependent_required_in_both_spellings() -> None:
    draft07 = _obj({}, dependencies={"street": ["city"]}, **D07)
    draft2020 = _obj({}, dependentRequired={"street": ["city"]})
    assert [c.rule for c in _diff(draft07, draft2020)] == [RuleId.DIALECT_CHANGED]  # $schema only
    assert rules_of(draft2020, _obj({}, dependentRequired={"street": ["city", "zip"]})) == [
        RuleId.DEPENDENT_REQUIRED_ADDED
    ]
    assert rules_of(draft07, _obj({}, **D07)) == [RuleId.DEPENDENT_REQUIRED_REMOVED]
    assert _diff(draft07, _obj({}, **D07))[0].path == "/dependencies/street"
    assert directions_of(draft07, _obj({})) == (True, False)
    # 2020-12 has no "dependencies" keyword: where $schema says 2020-12 it asserts nothing
    d2020 = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    assert directions_of(_obj({}, **d2020), _obj({}, dependencies={"street": ["city"]}, **d2020)) == (True, True)
    # without $schema, "dependencies" is draft-07's keyword and means what draft-07 says
    assert directions_of(_obj({}), _obj({}, dependencies={"street": ["city"]})) == (False, True)


def test_dependent_schemas_in_both_spellings() -> None:
    dependent = {"required": ["city"]}
    draft07 = _obj({}, dependencies={"street": dependent}, **D07)
    assert [c.rule for c in _diff(draft07, _obj({}, dependentSchemas={"street": dependent}))] == [
        RuleId.DIALECT_CHANGED
    ]
    assert rules_of(_obj({}, **D07), draft07) == [RuleId.DEPENDENT_SCHEMA_ADDED]
    assert directions_of(_obj({}), draft07) == (False, True)
    relaxed = _obj({}, dependentSchemas={"street": {}})
    assert rules_of(draft07, relaxed) == [RuleId.DIALECT_CHANGED, RuleId.REQUIRED_REMOVED]


@pytest.mark.parametrize(
    ("old", "new", "rule", "directions"),
    [
        ({"minProperties": 1}, {"minProperties": 2}, RuleId.MIN_PROPERTIES_INCREASED, (False, True)),
        ({"maxProperties": 5}, {}, RuleId.MAX_PROPERTIES_REMOVED, (True, False)),
        ({}, {"unevaluatedProperties": False}, RuleId.SCHEMA_MADE_FALSE, (False, True)),
    ],
)
def test_object_size_and_unevaluated(old: Any, new: Any, rule: RuleId, directions: tuple[bool, bool]) -> None:
    assert rules_of(_obj({}, **old), _obj({}, **new)) == [rule]
    assert directions_of(_obj({}, **old), _obj({}, **new)) == directions


def test_nested_change_points_into_the_new_schema_and_names_the_field() -> None:
    old = _obj({"address": _obj({"zip": {"type": "string", "maxLength": 10}})})
    new = _obj({"address": _obj({"zip": {"type": "string", "maxLength": 5}})})
    [change] = _diff(old, new)
    assert change.path == "/properties/address/properties/zip/maxLength"
    assert "address.zip" in change.message


def test_property_declaring_an_already_implied_type_in_a_conditional_is_no_change() -> None:
    base = {
        "type": "object",
        "properties": {"kind": {"enum": ["a", "b"]}, "data": STRING},
        "if": {"properties": {"kind": {"const": "a"}}},
    }
    old = {**base, "then": {"properties": {"data": {"pattern": "^[a-z]+$"}}}}
    new = {**base, "then": {"properties": {"data": {"type": "string"}}}}
    assert rules_of(old, new) == [RuleId.PATTERN_REMOVED]

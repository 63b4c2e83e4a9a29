"""Type, enum/const, string, number and annotation keywords."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.compat.diffs import directions_of, rules_of

from contract_platform.compat import Change, Policy, RuleId, diff_schemas


def _diff(old: Any, new: Any) -> list[Change]:
    return diff_schemas(old, new, policy=Policy.STRICT)


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


# -- types ---------------------------------------------------------------------------------------


def test_integer_to_number_is_a_widening_at_the_type_keyword() -> None:
    [change] = _diff(_obj(amount={"type": "integer"}), _obj(amount={"type": "number"}))
    assert (change.rule, change.path) == (RuleId.TYPE_WIDENED, "/properties/amount/type")
    assert (change.backward, change.forward) == (True, False)
    assert "amount" in change.message


def test_number_to_integer_is_a_narrowing() -> None:
    assert rules_of({"type": "number"}, {"type": "integer"}) == [RuleId.TYPE_NARROWED]
    assert directions_of({"type": "number"}, {"type": "integer"}) == (False, True)


def test_unrelated_types_break_bothdirections_of() -> None:
    assert rules_of({"type": "string"}, {"type": "number"}) == [RuleId.TYPE_CHANGED]
    assert directions_of({"type": "string"}, {"type": "number"}) == (False, False)


@pytest.mark.parametrize(
    ("old", "new", "rule", "directions"),
    [
        ({"type": "string"}, {"type": ["string", "null"]}, RuleId.NULL_ALLOWED, (True, False)),
        ({"type": ["null", "string"]}, {"type": "string"}, RuleId.NULL_DISALLOWED, (False, True)),
        ({"type": ["string", "integer"]}, {"type": ["string", "number"]}, RuleId.TYPE_WIDENED, (True, False)),
        ({"type": "string"}, {}, RuleId.TYPE_WIDENED, (True, False)),
        ({}, {"type": "object"}, RuleId.TYPE_NARROWED, (False, True)),
    ],
)
def test_type_lists_and_nullability(old: Any, new: Any, rule: RuleId, directions: tuple[bool, bool]) -> None:
    assert rules_of(old, new) == [rule]
    assert directions_of(old, new) == directions


def test_reordered_type_list_is_no_change() -> None:
    assert _diff({"type": ["string", "null"]}, {"type": ["null", "string"]}) == []


def test_type_implied_by_enum_is_not_a_change() -> None:
    assert _diff({"enum": ["a", "b"]}, {"type": "string", "enum": ["a", "b"]}) == []


# -- enum / const ----------------------------------------------------------------------------------


def test_enum_widening_is_backward_compatible_only() -> None:
    [change] = _diff({"enum": ["NEW", "PAID"]}, {"enum": ["NEW", "PAID", "VOID"]})
    assert (change.rule, change.path, change.backward, change.forward) == (
        RuleId.ENUM_VALUE_ADDED, "/enum", True, False,
    )  # fmt: skip
    assert "VOID" in change.message


def test_enum_value_removed_breaks_backward() -> None:
    assert rules_of({"enum": ["NEW", "PAID"]}, {"enum": ["NEW"]}) == [RuleId.ENUM_VALUE_REMOVED]
    assert directions_of({"enum": ["NEW", "PAID"]}, {"enum": ["NEW"]}) == (False, True)


def test_enum_reorder_and_const_as_single_value_enum_are_no_change() -> None:
    assert _diff({"enum": ["a", "b", 1]}, {"enum": [1, "b", "a"]}) == []
    assert _diff({"const": "x"}, {"enum": ["x"]}) == []
    assert _diff({"enum": [1]}, {"enum": [1.0]}) == []


def test_enum_and_const_appearing_or_disappearing() -> None:
    assert rules_of({"type": "string"}, {"type": "string", "enum": ["a"]}) == [RuleId.ENUM_ADDED]
    assert rules_of({"type": "string", "const": "a"}, {"type": "string"}) == [RuleId.ENUM_REMOVED]


def test_true_and_one_are_different_enum_values() -> None:
    assert rules_of({"enum": [True]}, {"enum": [1]}) == [
        RuleId.TYPE_CHANGED,
        RuleId.ENUM_VALUE_ADDED,
        RuleId.ENUM_VALUE_REMOVED,
    ]


# -- strings --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "rule", "directions"),
    [
        ({"maxLength": 10}, {"maxLength": 5}, RuleId.MAX_LENGTH_DECREASED, (False, True)),
        ({"maxLength": 5}, {"maxLength": 10}, RuleId.MAX_LENGTH_INCREASED, (True, False)),
        ({}, {"maxLength": 10}, RuleId.MAX_LENGTH_ADDED, (False, True)),
        ({"maxLength": 10}, {}, RuleId.MAX_LENGTH_REMOVED, (True, False)),
        ({"minLength": 1}, {"minLength": 3}, RuleId.MIN_LENGTH_INCREASED, (False, True)),
        ({"minLength": 3}, {"minLength": 1}, RuleId.MIN_LENGTH_DECREASED, (True, False)),
        ({}, {"minLength": 1}, RuleId.MIN_LENGTH_ADDED, (False, True)),
        ({"minLength": 2}, {}, RuleId.MIN_LENGTH_REMOVED, (True, False)),
        ({}, {"pattern": "^[A-Z]{3}$"}, RuleId.PATTERN_ADDED, (False, True)),
        ({"pattern": "^[A-Z]{3}$"}, {}, RuleId.PATTERN_REMOVED, (True, False)),
        ({"pattern": "^[A-Z]{3}$"}, {"pattern": "^[A-Z]{2,3}$"}, RuleId.PATTERN_CHANGED, (False, False)),
        ({}, {"format": "date"}, RuleId.FORMAT_ADDED, (False, True)),
        ({"format": "date"}, {}, RuleId.FORMAT_REMOVED, (True, False)),
        ({"format": "date"}, {"format": "date-time"}, RuleId.FORMAT_CHANGED, (False, False)),
        ({"contentEncoding": "base64"}, {}, RuleId.CONTENT_ENCODING_REMOVED, (True, False)),
        (
            {"contentMediaType": "image/png"},
            {"contentMediaType": "image/gif"},
            RuleId.CONTENT_MEDIA_TYPE_CHANGED,
            (False, False),
        ),
    ],
)
def test_string_keywords(old: Any, new: Any, rule: RuleId, directions: tuple[bool, bool]) -> None:
    old, new = {"type": "string", **old}, {"type": "string", **new}
    assert rules_of(old, new) == [rule]
    assert directions_of(old, new) == directions


def test_min_length_zero_is_the_same_as_no_min_length() -> None:
    assert _diff({"type": "string", "minLength": 0}, {"type": "string"}) == []


def test_string_bounds_on_a_value_that_cannot_be_a_string_do_not_matter() -> None:
    assert _diff({"type": "integer", "maxLength": 3}, {"type": "integer"}) == []


# -- numbers --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "rule", "directions"),
    [
        ({"minimum": 0}, {"minimum": 1}, RuleId.MINIMUM_INCREASED, (False, True)),
        ({"minimum": 1}, {"minimum": 0}, RuleId.MINIMUM_DECREASED, (True, False)),
        ({}, {"minimum": 0}, RuleId.MINIMUM_ADDED, (False, True)),
        ({"maximum": 10}, {}, RuleId.MAXIMUM_REMOVED, (True, False)),
        ({"maximum": 10}, {"maximum": 9.5}, RuleId.MAXIMUM_DECREASED, (False, True)),
        ({"minimum": 0}, {"exclusiveMinimum": 0}, RuleId.MINIMUM_MADE_EXCLUSIVE, (False, True)),
        ({"exclusiveMaximum": 10}, {"maximum": 10}, RuleId.MAXIMUM_MADE_INCLUSIVE, (True, False)),
        ({"multipleOf": 10}, {"multipleOf": 5}, RuleId.MULTIPLE_OF_RELAXED, (True, False)),
        ({"multipleOf": 0.1}, {"multipleOf": 0.3}, RuleId.MULTIPLE_OF_TIGHTENED, (False, True)),
        ({"multipleOf": 7}, {"multipleOf": 13}, RuleId.MULTIPLE_OF_CHANGED, (False, False)),
        ({}, {"multipleOf": 2}, RuleId.MULTIPLE_OF_ADDED, (False, True)),
    ],
)
def test_number_keywords(old: Any, new: Any, rule: RuleId, directions: tuple[bool, bool]) -> None:
    old, new = {"type": "number", **old}, {"type": "number", **new}
    assert rules_of(old, new) == [rule]
    assert directions_of(old, new) == directions


D04 = {"$schema": "http://json-schema.org/draft-04/schema#"}


def test_draft04_and_draft2020_exclusive_bounds_are_the_same_bound() -> None:
    draft04 = {"type": "number", "maximum": 10, "exclusiveMaximum": True, **D04}
    assert [c.rule for c in _diff(draft04, {"type": "number", "exclusiveMaximum": 10})] == [RuleId.DIALECT_CHANGED]
    old, new = {"minimum": 10, "exclusiveMinimum": True, **D04}, {"minimum": 10, **D04}
    assert rules_of(old, new) == [RuleId.MINIMUM_MADE_INCLUSIVE]
    assert directions_of(old, new) == (True, False)
    assert _diff(old, new)[0].path == "/minimum"  # the draft-04 spelling, as written


def test_tighter_of_minimum_and_exclusive_minimum_counts() -> None:
    assert _diff({"minimum": 5, "exclusiveMinimum": 1}, {"minimum": 5}) == []


# -- annotations and booleans --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keyword", "before", "after"),
    [
        ("title", "before", "after"),
        ("description", "before", "after"),
        ("default", "before", ["after"]),
        ("examples", ["before"], ["after"]),
        ("$comment", "before", "after"),
        ("x-unknownValuePolicy", "before", ["after"]),
        ("deprecated", False, True),
    ],
)
def test_annotations_are_compatible_both_ways(keyword: str, before: Any, after: Any) -> None:
    changed = _diff({"type": "string", keyword: before}, {"type": "string", keyword: after})
    added = _diff({"type": "string"}, {"type": "string", keyword: after})
    removed = _diff({"type": "string", keyword: before}, {"type": "string"})
    assert [c.rule for c in changed + added + removed] == [
        RuleId.ANNOTATION_CHANGED, RuleId.ANNOTATION_ADDED, RuleId.ANNOTATION_REMOVED,
    ]  # fmt: skip
    assert all(c.backward and c.forward for c in changed + added + removed)


def test_an_unknown_keyword_is_reported_with_its_pointer_and_judged_conservatively() -> None:
    old = {"properties": {"kind": {"type": "string", "discriminator": {"propertyName": "a"}}}}
    new = {"properties": {"kind": {"type": "string", "discriminator": {"propertyName": "b"}}}}
    [change] = _diff(old, new)
    assert (change.rule, change.path) == (RuleId.KEYWORD_UNMODELLED, "/properties/kind/discriminator")
    assert (change.backward, change.forward) == (False, False)
    [lenient] = diff_schemas(old, new, policy=Policy.LENIENT)
    assert (lenient.backward, lenient.forward) == (True, True)


def test_dialect_change_alone_is_neutral() -> None:
    old = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "string"}
    new = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string"}
    assert rules_of(old, new) == [RuleId.DIALECT_CHANGED]
    assert directions_of(old, new) == (True, True)


def test_boolean_schemas() -> None:
    assert rules_of(_obj(a=False), _obj(a={"type": "string"})) == [RuleId.SCHEMA_FALSE_RELAXED]
    assert directions_of(_obj(a=False), _obj(a={"type": "string"})) == (True, False)
    assert rules_of(True, False) == [RuleId.SCHEMA_MADE_FALSE]
    assert _diff(True, {}) == []
    assert _diff(False, False) == []
    assert directions_of({"type": "string"}, True) == (True, False)

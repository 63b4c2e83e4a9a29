"""allOf / anyOf / oneOf (order-free branch matching), not, if/then/else."""

from __future__ import annotations

from typing import Any

from tests.unit.compat.diffs import directions_of, rules_of

from contract_platform.compat import Change, RuleId, diff_schemas


def _diff(old: Any, new: Any) -> list[Change]:
    return diff_schemas(old, new)


STRING, INTEGER, NULL = {"type": "string"}, {"type": "integer"}, {"type": "null"}


def test_one_of_branch_reorder_is_no_change() -> None:
    old = {"oneOf": [STRING, {"type": "object", "required": ["id"]}, NULL]}
    new = {"oneOf": [NULL, STRING, {"type": "object", "required": ["id"]}]}
    assert _diff(old, new) == []


def test_any_of_branch_added_widens_and_removed_narrows() -> None:
    assert rules_of({"anyOf": [STRING]}, {"anyOf": [STRING, INTEGER]}) == [RuleId.ANY_OF_BRANCH_ADDED]
    assert directions_of({"anyOf": [STRING]}, {"anyOf": [STRING, INTEGER]}) == (True, False)
    assert rules_of({"oneOf": [STRING, INTEGER]}, {"oneOf": [INTEGER]}) == [RuleId.ONE_OF_BRANCH_REMOVED]
    assert directions_of({"oneOf": [STRING, INTEGER]}, {"oneOf": [INTEGER]}) == (False, True)


def test_changed_branch_is_matched_to_its_old_counterpart() -> None:
    old = {"anyOf": [INTEGER, {"type": "string", "maxLength": 5}]}
    new = {"anyOf": [{"type": "string", "maxLength": 10}, INTEGER]}
    [change] = _diff(old, new)
    assert (change.rule, change.path) == (RuleId.MAX_LENGTH_INCREASED, "/anyOf/0/maxLength")


def test_all_of_branches_conjoin() -> None:
    assert rules_of({"allOf": [STRING]}, {"allOf": [STRING, {"maxLength": 3}]}) == [RuleId.ALL_OF_BRANCH_ADDED]
    assert directions_of({"allOf": [STRING]}, {"allOf": [STRING, {"maxLength": 3}]}) == (False, True)
    assert directions_of({"allOf": [STRING, {"maxLength": 3}]}, {"allOf": [STRING]}) == (True, False)


def test_combinator_kind_changes() -> None:
    branches = [{"maximum": 100}, {"multipleOf": 6}]
    assert rules_of({"allOf": branches}, {"anyOf": branches}) == [RuleId.ALL_OF_TO_ANY_OF]
    assert directions_of({"allOf": branches}, {"anyOf": branches}) == (True, False)
    assert directions_of({"anyOf": branches}, {"oneOf": branches}) == (False, True)
    assert _diff({"anyOf": [STRING]}, {"allOf": [STRING]}) == []


def test_wrapping_a_type_into_a_nullable_any_of_is_a_widening() -> None:
    old = {"type": "object", "properties": {"note": STRING}}
    new = {"type": "object", "properties": {"note": {"anyOf": [STRING, NULL]}}}
    assert rules_of(old, new) == [RuleId.NULL_ALLOWED, RuleId.COMPOSITION_ADDED_IMPLIED]
    assert directions_of(old, new) == (True, False)
    assert directions_of(new, old) == (False, True)


def test_a_new_composition_old_data_may_not_meet_narrows() -> None:
    old = {"type": "string"}
    new = {"type": "string", "anyOf": [{"maxLength": 3}, {"pattern": "^x"}]}
    assert rules_of(old, new) == [RuleId.COMPOSITION_ADDED]
    assert directions_of(old, new) == (False, True)
    assert rules_of(new, old) == [RuleId.COMPOSITION_REMOVED]


def test_narrowing_inside_not_widens() -> None:
    old = {"not": {"type": "string", "maxLength": 10}}
    new = {"not": {"type": "string", "maxLength": 5}}
    [change] = _diff(old, new)
    assert (change.rule, change.backward, change.forward) == (RuleId.MAX_LENGTH_DECREASED, True, False)
    assert rules_of({}, {"not": STRING}) == [RuleId.NOT_ADDED]
    assert directions_of({"not": STRING}, {}) == (True, False)


def test_conditionals() -> None:
    base = {"type": "object", "if": {"properties": {"kind": {"const": "a"}}}}
    old = {**base, "then": {"required": ["x"]}}
    assert _diff(old, {**base, "then": {"required": ["x"]}}) == []
    assert rules_of(old, {**base, "then": {}}) == [RuleId.REQUIRED_REMOVED]
    changed_if = {**old, "if": {"properties": {"kind": {"enum": ["a", "b"]}}}}
    assert rules_of(old, changed_if) == [RuleId.CONDITION_CHANGED]
    assert directions_of(old, changed_if) == (False, False)
    assert rules_of({"type": "object"}, old) == [RuleId.CONDITIONAL_ADDED]

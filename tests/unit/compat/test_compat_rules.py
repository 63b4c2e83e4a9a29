"""The rule table: complete, one entry per rule id, policy only where the content model matters."""

from __future__ import annotations

import re

import pytest

from contract_platform.compat import Mode, Policy, RuleId
from contract_platform.compat.rules import ANNOTATION_RULES, RULES, effect


def test_every_rule_id_has_exactly_one_table_entry() -> None:
    assert set(RULES) == set(RuleId)


def test_rule_ids_are_stable_kebab_case_strings() -> None:
    for rule in RuleId:
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", rule.value), rule
    assert len({rule.value for rule in RuleId}) == len(RuleId)


def test_every_rule_id_is_documented_in_the_enum_docstring() -> None:
    doc = RuleId.__doc__ or ""
    for rule in RuleId:
        assert f"    {rule.value} " in doc, rule


@pytest.mark.parametrize("policy", list(Policy))
def test_effects_are_pairs_of_booleans(policy: Policy) -> None:
    for rule in RuleId:
        backward, forward = effect(rule, policy)
        assert isinstance(backward, bool) and isinstance(forward, bool)


def test_only_open_content_model_rules_depend_on_the_policy() -> None:
    dependent = {rule for rule in RuleId if effect(rule, Policy.STRICT) != effect(rule, Policy.LENIENT)}
    assert dependent == {
        RuleId.PROPERTY_ADDED_OPEN_MODEL, RuleId.PROPERTY_REMOVED_OPEN_MODEL, RuleId.KEYWORD_UNMODELLED,
        RuleId.ADDITIONAL_PROPERTIES_CHANGED,
    }  # fmt: skip
    assert effect(RuleId.KEYWORD_UNMODELLED, Policy.STRICT) == (False, False)
    assert effect(RuleId.PROPERTY_ADDED_OPEN_MODEL, Policy.STRICT) == (False, True)
    assert effect(RuleId.PROPERTY_ADDED_OPEN_MODEL, Policy.LENIENT) == (True, True)


def test_annotations_are_compatible_both_ways() -> None:
    assert all(effect(rule, Policy.STRICT) == (True, True) for rule in ANNOTATION_RULES)


def test_a_rule_missing_from_the_table_raises() -> None:
    with pytest.raises(KeyError):
        effect("no-such-rule", Policy.STRICT)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (Mode.BACKWARD, [True, True, False, False]),
        (Mode.FORWARD_TRANSITIVE, [True, False, True, False]),
        (Mode.FULL, [True, False, False, False]),
        (Mode.NONE, [True, True, True, True]),
    ],
)
def test_mode_accepts(mode: Mode, expected: list[bool]) -> None:
    pairs = [(True, True), (True, False), (False, True), (False, False)]
    assert [mode.accepts(b, f) for b, f in pairs] == expected

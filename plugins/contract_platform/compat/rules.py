"""The one table that says, per rule id, which reading directions a change keeps working.

Each entry is ``(backward, forward)`` or a function of the content-model :class:`Policy`. A rule id
missing from the table is a bug and raises :class:`KeyError` (a test checks the table is complete).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from .model import Policy, RuleId

__all__ = ["ANNOTATION_RULES", "RULES", "effect"]

Directions = tuple[bool, bool]
Effect = Directions | Callable[[Policy], Directions]

WIDENS: Final = (True, False)  # OLD ⊆ NEW: new readers read old data; old readers may choke on new data
NARROWS: Final = (False, True)  # NEW ⊆ OLD
BREAKS: Final = (False, False)
NEUTRAL: Final = (True, True)


def _open_model_addition(policy: Policy) -> Directions:
    """Declaring a name an open model already allowed with any value."""
    return NEUTRAL if policy is Policy.LENIENT else NARROWS


def _open_model_removal(policy: Policy) -> Directions:
    """Undeclaring a name: an open model then allows any value under it."""
    return NEUTRAL if policy is Policy.LENIENT else WIDENS


def _unmodelled(policy: Policy) -> Directions:
    """A change the engine cannot judge: breaking unless the policy is lenient."""
    return NEUTRAL if policy is Policy.LENIENT else BREAKS


R = RuleId
RULES: Final[Mapping[RuleId, Effect]] = {
    R.TYPE_WIDENED: WIDENS,
    R.TYPE_NARROWED: NARROWS,
    R.TYPE_CHANGED: BREAKS,
    R.NULL_ALLOWED: WIDENS,
    R.NULL_DISALLOWED: NARROWS,
    R.SCHEMA_FALSE_RELAXED: WIDENS,
    R.SCHEMA_MADE_FALSE: NARROWS,
    R.ENUM_ADDED: NARROWS,
    R.ENUM_REMOVED: WIDENS,
    R.ENUM_VALUE_ADDED: WIDENS,
    R.ENUM_VALUE_REMOVED: NARROWS,
    R.MIN_LENGTH_ADDED: NARROWS,
    R.MIN_LENGTH_REMOVED: WIDENS,
    R.MIN_LENGTH_INCREASED: NARROWS,
    R.MIN_LENGTH_DECREASED: WIDENS,
    R.MAX_LENGTH_ADDED: NARROWS,
    R.MAX_LENGTH_REMOVED: WIDENS,
    R.MAX_LENGTH_INCREASED: WIDENS,
    R.MAX_LENGTH_DECREASED: NARROWS,
    R.PATTERN_ADDED: NARROWS,
    R.PATTERN_REMOVED: WIDENS,
    R.PATTERN_CHANGED: BREAKS,
    R.FORMAT_ADDED: NARROWS,
    R.FORMAT_REMOVED: WIDENS,
    R.FORMAT_CHANGED: BREAKS,
    R.CONTENT_ENCODING_ADDED: NARROWS,
    R.CONTENT_ENCODING_REMOVED: WIDENS,
    R.CONTENT_ENCODING_CHANGED: BREAKS,
    R.CONTENT_MEDIA_TYPE_ADDED: NARROWS,
    R.CONTENT_MEDIA_TYPE_REMOVED: WIDENS,
    R.CONTENT_MEDIA_TYPE_CHANGED: BREAKS,
    R.MINIMUM_ADDED: NARROWS,
    R.MINIMUM_REMOVED: WIDENS,
    R.MINIMUM_INCREASED: NARROWS,
    R.MINIMUM_DECREASED: WIDENS,
    R.MINIMUM_MADE_EXCLUSIVE: NARROWS,
    R.MINIMUM_MADE_INCLUSIVE: WIDENS,
    R.MAXIMUM_ADDED: NARROWS,
    R.MAXIMUM_REMOVED: WIDENS,
    R.MAXIMUM_INCREASED: WIDENS,
    R.MAXIMUM_DECREASED: NARROWS,
    R.MAXIMUM_MADE_EXCLUSIVE: NARROWS,
    R.MAXIMUM_MADE_INCLUSIVE: WIDENS,
    R.MULTIPLE_OF_ADDED: NARROWS,
    R.MULTIPLE_OF_REMOVED: WIDENS,
    R.MULTIPLE_OF_RELAXED: WIDENS,
    R.MULTIPLE_OF_TIGHTENED: NARROWS,
    R.MULTIPLE_OF_CHANGED: BREAKS,
    R.MIN_ITEMS_ADDED: NARROWS,
    R.MIN_ITEMS_REMOVED: WIDENS,
    R.MIN_ITEMS_INCREASED: NARROWS,
    R.MIN_ITEMS_DECREASED: WIDENS,
    R.MAX_ITEMS_ADDED: NARROWS,
    R.MAX_ITEMS_REMOVED: WIDENS,
    R.MAX_ITEMS_INCREASED: WIDENS,
    R.MAX_ITEMS_DECREASED: NARROWS,
    R.MIN_CONTAINS_ADDED: NARROWS,
    R.MIN_CONTAINS_REMOVED: WIDENS,
    R.MIN_CONTAINS_INCREASED: NARROWS,
    R.MIN_CONTAINS_DECREASED: WIDENS,
    R.MAX_CONTAINS_ADDED: NARROWS,
    R.MAX_CONTAINS_REMOVED: WIDENS,
    R.MAX_CONTAINS_INCREASED: WIDENS,
    R.MAX_CONTAINS_DECREASED: NARROWS,
    R.UNIQUE_ITEMS_ADDED: NARROWS,
    R.UNIQUE_ITEMS_REMOVED: WIDENS,
    R.CONTAINS_ADDED: NARROWS,
    R.CONTAINS_REMOVED: WIDENS,
    R.MIN_PROPERTIES_ADDED: NARROWS,
    R.MIN_PROPERTIES_REMOVED: WIDENS,
    R.MIN_PROPERTIES_INCREASED: NARROWS,
    R.MIN_PROPERTIES_DECREASED: WIDENS,
    R.MAX_PROPERTIES_ADDED: NARROWS,
    R.MAX_PROPERTIES_REMOVED: WIDENS,
    R.MAX_PROPERTIES_INCREASED: WIDENS,
    R.MAX_PROPERTIES_DECREASED: NARROWS,
    R.REQUIRED_ADDED: NARROWS,
    R.REQUIRED_REMOVED: WIDENS,
    R.PROPERTY_ADDED: NEUTRAL,
    R.PROPERTY_ADDED_CLOSED_MODEL: WIDENS,
    R.PROPERTY_ADDED_OPEN_MODEL: _open_model_addition,
    R.PROPERTY_REMOVED: NEUTRAL,
    R.PROPERTY_REMOVED_CLOSED_MODEL: NARROWS,
    R.PROPERTY_REMOVED_OPEN_MODEL: _open_model_removal,
    R.DEPENDENT_REQUIRED_ADDED: NARROWS,
    R.DEPENDENT_REQUIRED_REMOVED: WIDENS,
    R.DEPENDENT_SCHEMA_ADDED: NARROWS,
    R.DEPENDENT_SCHEMA_REMOVED: WIDENS,
    R.ALL_OF_BRANCH_ADDED: NARROWS,
    R.ALL_OF_BRANCH_REMOVED: WIDENS,
    R.ANY_OF_BRANCH_ADDED: WIDENS,
    R.ANY_OF_BRANCH_REMOVED: NARROWS,
    R.ONE_OF_BRANCH_ADDED: WIDENS,
    R.ONE_OF_BRANCH_REMOVED: NARROWS,
    # A change of combinator kind is reported with the directions its branches' values show
    # (logic._compare_kind_change); these entries are each kind's reading with the same branches.
    R.ALL_OF_TO_ANY_OF: WIDENS,
    R.ONE_OF_TO_ANY_OF: WIDENS,
    R.ANY_OF_TO_ALL_OF: NARROWS,
    R.ANY_OF_TO_ONE_OF: NARROWS,
    R.ALL_OF_TO_ONE_OF: BREAKS,
    R.ONE_OF_TO_ALL_OF: BREAKS,
    R.COMPOSITION_ADDED: NARROWS,
    R.COMPOSITION_ADDED_IMPLIED: NEUTRAL,
    R.COMPOSITION_REMOVED: WIDENS,
    R.COMPOSITION_REMOVED_IMPLIED: NEUTRAL,
    R.NOT_ADDED: NARROWS,
    R.NOT_REMOVED: WIDENS,
    R.CONDITIONAL_ADDED: NARROWS,
    R.CONDITIONAL_REMOVED: WIDENS,
    R.CONDITION_CHANGED: BREAKS,
    R.ANNOTATION_ADDED: NEUTRAL,
    R.ANNOTATION_REMOVED: NEUTRAL,
    R.ANNOTATION_CHANGED: NEUTRAL,
    R.DIALECT_CHANGED: NEUTRAL,
    R.KEYWORD_UNMODELLED: _unmodelled,
    R.ONE_OF_NEW_BRANCHES_OVERLAP: NARROWS,
    R.ONE_OF_OLD_BRANCHES_OVERLAP: WIDENS,
    # lenient policy only, with the directions objects._compare_undeclared shows
    R.ADDITIONAL_PROPERTIES_CHANGED: _unmodelled,
}

# Changes that document a schema without changing which instances it accepts (semver: patch).
ANNOTATION_RULES: Final = frozenset({R.ANNOTATION_ADDED, R.ANNOTATION_REMOVED, R.ANNOTATION_CHANGED, R.DIALECT_CHANGED})


def effect(rule: RuleId, policy: Policy) -> Directions:
    """``(backward, forward)`` for ``rule`` under ``policy``; KeyError for a rule missing from the table."""
    entry = RULES[rule]
    return entry(policy) if callable(entry) else entry

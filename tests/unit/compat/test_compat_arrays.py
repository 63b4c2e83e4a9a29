"""Array keywords: items, prefixItems, draft-07 tuple items + additionalItems, contains, bounds."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.compat.diffs import directions_of, rules_of

from contract_platform.compat import Change, RuleId, diff_schemas


def _diff(old: Any, new: Any) -> list[Change]:
    return diff_schemas(old, new)


def _arr(**keywords: Any) -> dict[str, Any]:
    return {"type": "array", **keywords}


def _arr07(**keywords: Any) -> dict[str, Any]:
    """A draft-07 array schema: ``items`` may be an array (tuple) with ``additionalItems``."""
    return {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", **keywords}


def _meaning(changes: list[Change]) -> list[Change]:
    return [c for c in changes if c.backward != c.forward or not c.backward]


def test_items_schema_is_compared_as_a_subschema() -> None:
    [change] = _diff(_arr(items={"type": "integer"}), _arr(items={"type": "number"}))
    assert (change.rule, change.path) == (RuleId.TYPE_WIDENED, "/items/type")
    assert (change.backward, change.forward) == (True, False)


def test_draft07_tuple_and_prefix_items_mean_the_same() -> None:
    draft07 = _arr07(items=[{"type": "string"}, {"type": "integer"}], additionalItems=False)
    draft2020 = _arr(prefixItems=[{"type": "string"}, {"type": "integer"}], items=False)
    assert [c.rule for c in _diff(draft07, draft2020)] == [RuleId.DIALECT_CHANGED]  # $schema itself
    assert _diff(draft2020, draft2020) == []


def test_each_draft_reads_its_own_array_keywords() -> None:
    # draft-07: additionalItems without tuple items does nothing; 2020-12: additionalItems is no keyword
    assert (
        _meaning(_diff(_arr07(items={"type": "string"}), _arr07(items={"type": "string"}, additionalItems=False))) == []
    )
    assert _meaning(_diff(_arr(items={"type": "string"}), _arr(additionalItems=False, items={"type": "string"}))) == []
    # prefixItems means nothing in draft-07: adding it changes nothing there, but narrows in 2020-12
    assert _meaning(_diff(_arr07(), _arr07(prefixItems=[{"type": "string"}]))) == []
    assert rules_of(_arr(), _arr(prefixItems=[{"type": "string"}])) == [RuleId.TYPE_NARROWED]


def test_tuple_position_appended_where_extra_items_were_forbidden() -> None:
    old = _arr(prefixItems=[{"type": "string"}], items=False)
    new = _arr(prefixItems=[{"type": "string"}, {"type": "integer"}], items=False)
    [change] = _diff(old, new)
    assert (change.rule, change.path) == (RuleId.SCHEMA_FALSE_RELAXED, "/prefixItems/1")
    assert directions_of(old, new) == (True, False)


def test_tuple_positions_swapped_break_both_ways() -> None:
    old = _arr07(items=[{"type": "number"}, {"type": "string"}])
    assert directions_of(old, _arr07(items=[{"type": "string"}, {"type": "number"}])) == (False, False)


def test_additional_items() -> None:
    old = _arr07(items=[{"type": "string"}], additionalItems={"type": "integer"})
    assert directions_of(old, _arr07(items=[{"type": "string"}], additionalItems={"type": "number"})) == (True, False)
    assert directions_of(old, _arr07(items=[{"type": "string"}], additionalItems={"type": "boolean"})) == (False, False)
    assert directions_of(old, _arr07(items=[{"type": "string"}], additionalItems=False)) == (False, True)
    [change] = _diff(old, _arr07(items=[{"type": "string"}], additionalItems=False))
    assert change.path == "/additionalItems"  # reported where the schema as written says it


def test_contains() -> None:
    assert rules_of(_arr(), _arr(contains={"type": "integer"})) == [RuleId.CONTAINS_ADDED]
    assert rules_of(_arr(contains={"type": "integer"}), _arr()) == [RuleId.CONTAINS_REMOVED]
    relaxed = directions_of(
        _arr(contains={"type": "integer", "minimum": 10}), _arr(contains={"type": "integer", "minimum": 5})
    )
    assert relaxed == (True, False)
    more = rules_of(_arr(contains={"type": "integer"}), _arr(contains={"type": "integer"}, minContains=2))
    assert more == [RuleId.MIN_CONTAINS_ADDED]  # minContains 1 is the default
    assert _diff(_arr(contains={}, minContains=1), _arr(contains={})) == []


@pytest.mark.parametrize(
    ("old", "new", "rule", "directions"),
    [
        ({"minItems": 1}, {"minItems": 2}, RuleId.MIN_ITEMS_INCREASED, (False, True)),
        ({"minItems": 2}, {}, RuleId.MIN_ITEMS_REMOVED, (True, False)),
        ({"maxItems": 5}, {"maxItems": 10}, RuleId.MAX_ITEMS_INCREASED, (True, False)),
        ({}, {"maxItems": 10}, RuleId.MAX_ITEMS_ADDED, (False, True)),
        ({}, {"uniqueItems": True}, RuleId.UNIQUE_ITEMS_ADDED, (False, True)),
        ({"uniqueItems": True}, {"uniqueItems": False}, RuleId.UNIQUE_ITEMS_REMOVED, (True, False)),
        ({}, {"unevaluatedItems": False}, RuleId.SCHEMA_MADE_FALSE, (False, True)),
    ],
)
def test_array_bounds(old: Any, new: Any, rule: RuleId, directions: tuple[bool, bool]) -> None:
    assert rules_of(_arr(**old), _arr(**new)) == [rule]
    assert directions_of(_arr(**old), _arr(**new)) == directions


def test_array_keywords_on_a_value_that_cannot_be_an_array_do_not_matter() -> None:
    assert _diff({"type": "string", "minItems": 3}, {"type": "string"}) == []

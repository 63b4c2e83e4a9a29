"""Verdicts taken from the specifications' own keyword definitions (JSON Schema draft-04 ... 2020-12).

The pairs and their verdicts live in ``spec_pairs.py``, shared with the soundness test, which checks
every direction called compatible against instances generated from the schemas.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.compat.spec_pairs import INTEGER, SCHEMA_IN_EACH_DRAFT, SPEC_PAIRS, STRING, obj

from contract_platform.catalog.schemas import validator_for
from contract_platform.compat import Policy, RuleId, diff_schemas


def directions(old: Any, new: Any, policy: Policy = Policy.STRICT) -> tuple[bool, bool]:
    changes = diff_schemas(old, new, policy=policy)
    return all(c.backward for c in changes), all(c.forward for c in changes)


@pytest.mark.parametrize(("case", "old", "new", "expected"), SPEC_PAIRS, ids=[p[0] for p in SPEC_PAIRS])
def test_verdicts_follow_the_keyword_definitions(case: str, old: Any, new: Any, expected: tuple[bool, bool]) -> None:
    assert directions(old, new) == expected


def test_a_duplicated_one_of_branch_never_passes_as_backward_compatible() -> None:
    # oneOf wants exactly one match: a string now matches two branches and is rejected
    old, new = {"oneOf": [STRING, INTEGER]}, {"oneOf": [STRING, INTEGER, STRING]}
    assert directions(old, new)[0] is False
    assert RuleId.ONE_OF_NEW_BRANCHES_OVERLAP in {c.rule for c in diff_schemas(old, new)}


def test_all_of_to_one_of_is_never_assumed_compatible() -> None:
    assert directions({"allOf": [STRING, {"maxLength": 3}]}, {"oneOf": [STRING, {"maxLength": 3}]}) == (False, False)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (obj({"a": STRING}, additionalProperties=False), obj({"a": STRING})),
        (obj({"a": STRING}), obj({"a": STRING}, additionalProperties=False)),
        (obj({"a": STRING}), obj({"a": STRING}, additionalProperties=INTEGER)),
    ],
)
def test_lenient_policy_reads_undeclared_properties_of_an_open_model_as_never_sent(old: Any, new: Any) -> None:
    assert directions(old, new, Policy.LENIENT) == (True, True)
    assert directions(old, new, Policy.STRICT) != (True, True)


@pytest.mark.parametrize(
    ("old", "new", "expected", "instance"),
    [
        # a map: {"a": "x", "tag": "y"} is written under the old schema and refused by the new one, and back
        (obj({"a": STRING}, additionalProperties=STRING), obj({"a": STRING}, additionalProperties=INTEGER),
         (False, False), {"a": "x", "tag": "y"}),
        (obj({"a": STRING}, additionalProperties=STRING), obj({"a": STRING}, additionalProperties=False),
         (False, True), {"a": "x", "tag": "y"}),
        (obj({"a": STRING}, additionalProperties=False), obj({"a": STRING}, additionalProperties=INTEGER),
         (True, False), {"a": "x", "tag": 1}),
    ],
)  # fmt: skip
def test_lenient_policy_judges_an_additional_properties_schema_by_its_values(
    old: Any, new: Any, expected: tuple[bool, bool], instance: Any
) -> None:
    assert directions(old, new, Policy.LENIENT) == expected
    source, target = (old, new) if not expected[0] else (new, old)
    assert validator_for(source).is_valid(instance) and not validator_for(target).is_valid(instance)


@pytest.mark.parametrize("old", list(SCHEMA_IN_EACH_DRAFT))
def test_every_pair_across_drafts_gets_a_verdict(old: str) -> None:
    for new in SCHEMA_IN_EACH_DRAFT:
        changes = diff_schemas(SCHEMA_IN_EACH_DRAFT[old], SCHEMA_IN_EACH_DRAFT[new])
        assert all(isinstance(c.backward, bool) and isinstance(c.forward, bool) for c in changes)
        if old == new:
            assert all(c.backward and c.forward for c in changes), (old, changes)


def test_a_keyword_repeated_beside_its_ref_that_cannot_be_combined_is_judged_conservatively() -> None:
    # both patterns apply to "a" in the old schema; the engine does not combine two regexes
    old = {
        "$defs": {"s": {"type": "string", "pattern": "^a"}},
        "properties": {"a": {"$ref": "#/$defs/s", "pattern": "b$"}},
    }
    new = {"properties": {"a": {"type": "string", "pattern": "b$"}}}
    changes = diff_schemas(old, new)
    assert RuleId.KEYWORD_UNMODELLED in {c.rule for c in changes}
    assert directions(old, new) == (False, False)
    assert directions(old, old) == (True, True)

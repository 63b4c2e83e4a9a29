"""Modes, history (transitive) checks, the CLI JSON shape, and semver."""

from __future__ import annotations

from typing import Any

import pytest

from contract_platform.compat import (
    Change,
    Mode,
    Policy,
    ReportedChange,
    RuleId,
    Verdict,
    check_compatibility,
    check_history,
    check_semver,
    diff_schemas,
    required_bump,
)

V1 = {"type": "object", "properties": {"id": {"type": "string"}, "note": {"type": "string"}}}
REQUIRED_NOTE = {**V1, "required": ["note"]}


@pytest.mark.parametrize(
    ("mode", "compatible"),
    [
        (Mode.BACKWARD, False),
        (Mode.BACKWARD_TRANSITIVE, False),
        (Mode.FORWARD, True),
        (Mode.FORWARD_TRANSITIVE, True),
        (Mode.FULL, False),
        (Mode.FULL_TRANSITIVE, False),
        (Mode.NONE, True),
    ],
)
def test_required_added_under_each_mode(mode: Mode, compatible: bool) -> None:
    verdict = check_compatibility(V1, REQUIRED_NOTE, mode=mode)
    assert verdict.mode is mode
    assert verdict.compatible is compatible
    assert [(c.rule, c.compatible) for c in verdict.changes] == [(RuleId.REQUIRED_ADDED, compatible)]


def test_mode_values_are_the_upper_case_names() -> None:
    assert [m.value for m in Mode] == [m.name for m in Mode]
    assert Mode("FULL_TRANSITIVE") is Mode.FULL_TRANSITIVE
    assert Policy("lenient") is Policy.LENIENT


def test_verdict_to_dict_is_the_cli_json_shape() -> None:
    verdict = check_compatibility(V1, REQUIRED_NOTE, mode=Mode.BACKWARD)
    assert verdict.to_dict() == {
        "compatible": False,
        "changes": [
            {"rule": "required-added", "path": "/required", "compatible": False, "message": verdict.changes[0].message}
        ],
    }
    assert check_compatibility(V1, V1, mode=Mode.FULL).to_dict() == {"compatible": True, "changes": []}


def _history() -> list[tuple[str, dict[str, Any]]]:
    """Under the lenient policy a field can be dropped (1.1.0) and come back with another type (1.2.0):
    each step is compatible with the one before, yet 1.2.0 cannot read what 1.0.0 wrote."""
    v10 = {"type": "object", "properties": {"id": {"type": "string"}, "ref": {"type": "string"}}}
    v11 = {"type": "object", "properties": {"id": {"type": "string"}}}
    return [("1.0.0", v10), ("1.1.0", v11)]


def test_transitive_mode_catches_a_break_against_an_older_version_that_pairwise_misses() -> None:
    new = {"type": "object", "properties": {"id": {"type": "string"}, "ref": {"type": "integer"}}}
    pairwise = check_history(_history(), new, mode=Mode.BACKWARD, policy=Policy.LENIENT)
    transitive = check_history(_history(), new, mode=Mode.BACKWARD_TRANSITIVE, policy=Policy.LENIENT)
    assert pairwise.compatible
    assert {c.against for c in pairwise.changes} == {"1.1.0"}
    assert not transitive.compatible
    assert [(c.rule, c.against) for c in transitive.breaking] == [(RuleId.TYPE_CHANGED, "1.0.0")]
    assert transitive.to_dict()["changes"][0]["against"] == "1.0.0"


def test_none_mode_is_always_compatible_but_still_lists_changes() -> None:
    verdict = check_history([("1.0.0", {"type": "string"})], {"type": "integer"}, mode=Mode.NONE)
    assert verdict.compatible
    assert [(c.rule, c.compatible, c.against) for c in verdict.changes] == [(RuleId.TYPE_CHANGED, True, "1.0.0")]


def test_empty_history_is_compatible() -> None:
    assert check_history([], {"type": "string"}, mode=Mode.FULL_TRANSITIVE) == Verdict(Mode.FULL_TRANSITIVE, True, [])


def test_reported_change_without_history_has_no_against() -> None:
    [change] = check_compatibility(V1, REQUIRED_NOTE, mode=Mode.FORWARD).changes
    assert isinstance(change, ReportedChange) and change.against is None


# -- semver ------------------------------------------------------------------------------------------


def _changes(old: Any, new: Any, policy: Policy = Policy.STRICT) -> list[Change]:
    return diff_schemas(old, new, policy=policy)


CLOSED = {"type": "object", "properties": {"id": {"type": "string"}}, "additionalProperties": False}
CLOSED_PLUS = {**CLOSED, "properties": {"id": {"type": "string"}, "note": {"type": "string"}}}
STATUS = {"enum": ["NEW", "PAID"]}


def test_required_bump() -> None:
    assert required_bump(_changes(V1, REQUIRED_NOTE)) == "major"
    assert required_bump(_changes({"type": "number"}, {"type": "integer"})) == "major"
    assert required_bump(_changes(STATUS, {"enum": ["NEW", "PAID", "VOID"]})) == "minor"
    assert required_bump(_changes(CLOSED, CLOSED_PLUS)) == "minor"
    open_plus = {"type": "object", "properties": {**V1["properties"], "extra": {"type": "string"}}}
    assert required_bump(_changes(V1, open_plus, Policy.LENIENT)) == "minor"
    assert required_bump(_changes(V1, {**V1, "description": "An id and a note."})) == "patch"
    assert required_bump([]) == "patch"


def test_required_bump_under_full_counts_either_direction_as_breaking() -> None:
    assert required_bump(_changes(STATUS, {"enum": ["NEW", "PAID", "VOID"]}), mode=Mode.FULL) == "major"


def test_breaking_change_inside_one_major_is_an_error() -> None:
    [problem] = check_semver("1.2.0", "1.3.0", _changes(V1, REQUIRED_NOTE))
    assert "2.0.0" in problem and "required-added" in problem
    assert check_semver("1.2.0", "2.0.0", _changes(V1, REQUIRED_NOTE)) == []


def test_additive_change_needs_at_least_a_minor_bump() -> None:
    widened = _changes(STATUS, {"enum": ["NEW", "PAID", "VOID"]})
    [problem] = check_semver("1.2.0", "1.2.1", widened)
    assert "1.3.0" in problem
    assert check_semver("1.2.0", "1.3.0", widened) == []


def test_annotation_change_needs_a_patch_bump() -> None:
    documented = _changes(V1, {**V1, "title": "Invoice"})
    assert check_semver("1.2.0", "1.2.1", documented) == []
    assert len(check_semver("1.2.0", "1.2.0", documented)) == 1
    assert check_semver("1.2.0", "1.2.0", []) == []


def test_version_must_not_go_backwards_or_be_malformed() -> None:
    assert len(check_semver("1.2.0", "1.1.9", [])) == 1
    assert len(check_semver("1.2", "v1.3.0", [])) == 2

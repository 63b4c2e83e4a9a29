"""``contractctl diff`` decides by the values each schema accepts where the keywords alone mislead.

A widening the keyword-by-keyword reading takes for a narrowing (a union whose branches together meet the
new bound, a branch that lost values another branch still takes, a ``const`` object the new ``properties``
accept) is compatible; a near miss, where some old value is refused, still is not, and the test shows that
value: one the old schema accepts and the new one refuses (JSON Schema 2020-12, the platform's validator).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.support.cli import run_cli

from contract_platform.catalog.schemas import validator_for

STRING = {"type": "string"}
MINIMA = {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "integer", "minimum": 2}]}

# (old, new, the rule the keywords call breaking)
WIDENINGS: dict[str, tuple[Any, Any, str]] = {
    "anyOf minima 1 and 2 -> minimum 1": (MINIMA, {"type": ["integer", "string"], "minimum": 1}, "minimum-added"),
    "branch made object, the other takes every non-object": (
        {"anyOf": [{"properties": {"id": STRING}}, {"type": ["null", "boolean", "array", "string", "number"]}]},
        {
            "anyOf": [
                {"type": "object", "properties": {"id": STRING}},
                {"type": ["null", "boolean", "array", "string", "number"]},
            ]
        },
        "type-narrowed",
    ),
    "branch made object, 'not object' takes the rest": (
        {"anyOf": [{"type": ["object", "string"], "required": ["id"]}, STRING]},
        {"anyOf": [{"type": "object", "required": ["id"]}, {"not": {"type": "object"}}]},
        "type-narrowed",
    ),
    "const object -> properties const": (
        {"const": {"key": "value"}},
        {"properties": {"key": {"const": "value"}}},
        "property-added-open-model",
    ),
}

# (old, new, a value the old schema accepts and the new one refuses)
NEAR_MISSES: dict[str, tuple[Any, Any, Any]] = {
    "anyOf minima 0 and 2 -> minimum 1": (
        {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "integer", "minimum": 2}]},
        {"type": ["integer", "string"], "minimum": 1},
        0,
    ),
    "branch made object, the other takes strings only": (
        {"anyOf": [{"properties": {"id": STRING}}, STRING]},
        {"anyOf": [{"type": "object", "properties": {"id": STRING}}, STRING]},
        7,
    ),
    "anyOf minima -> overlapping oneOf": (
        MINIMA,
        {"oneOf": [{"type": "integer", "minimum": 1}, {"type": "integer", "minimum": 2}]},
        2,
    ),
    "const object with more -> closed properties": (
        {"const": {"key": "value", "extra": 1}},
        {"properties": {"key": {"const": "value"}}, "additionalProperties": False},
        {"key": "value", "extra": 1},
    ),
    "const object -> another property const": (
        {"const": {"key": "other"}},
        {"properties": {"key": {"const": "value"}}},
        {"key": "other"},
    ),
    "const string -> format date": ({"const": "27/11/2026"}, {"type": "string", "format": "date"}, "27/11/2026"),
}


def _files(tmp_path: Path, old: Any, new: Any) -> tuple[str, str]:
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    return str(tmp_path / "old.json"), str(tmp_path / "new.json")


@pytest.mark.parametrize("case", WIDENINGS)
def test_a_widening_the_keywords_misread_is_compatible(case: str, tmp_path: Path, capsys: Any) -> None:
    old, new, misread = WIDENINGS[case]
    code, out, err = run_cli(capsys, "diff", *_files(tmp_path, old, new), "--format", "json")

    assert code == 0, err
    document = json.loads(out)
    assert document["compatible"] is True
    [change] = [c for c in document["changes"] if c["rule"] == misread]
    assert change["compatible"] is True
    assert "the new schema accepts every value the old one accepted" in change["message"]


@pytest.mark.parametrize("case", WIDENINGS)
def test_sampling_finds_no_old_value_the_new_schema_refuses(case: str, tmp_path: Path, capsys: Any) -> None:
    old, new, _ = WIDENINGS[case]
    code, out, err = run_cli(capsys, "diff", *_files(tmp_path, old, new), "--verify-samples", "40", "--format", "json")

    assert code == 0, err
    [backward] = json.loads(out)["samples"]
    assert backward["direction"] == "backward" and backward["holds"] is True


@pytest.mark.parametrize("case", NEAR_MISSES)
def test_a_near_miss_stays_breaking(case: str, tmp_path: Path, capsys: Any) -> None:
    old, new, refused = NEAR_MISSES[case]
    assert validator_for(old).is_valid(refused) and not validator_for(new).is_valid(refused)  # a real break

    code, out, _ = run_cli(capsys, "diff", *_files(tmp_path, old, new), "--format", "json")

    assert code == 1
    assert json.loads(out)["compatible"] is False

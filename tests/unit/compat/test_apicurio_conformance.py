"""Apicurio Registry's JSON Schema compatibility cases, run as a conformance suite for the engine.

Each enabled case labels a pair (original -> updated) ``backward``, ``both`` or ``none``, which gives
two checks: BACKWARD(original -> updated) and FORWARD(original -> updated). Agreement must reach 98%
in each direction separately.

Where the engine disagrees with a label, the specification decides. Two cases remain backward, both
``oneOf`` labelled ``backward``: ``"Complex: oneOf 1"`` (``[string, {maxLength: 5}]`` -> ``[string,
{maxLength: 10}]``) and ``"Complex: oneOf 3"`` (``[string]`` -> ``[string, {maxLength: 5}]``). oneOf
wants exactly one matching branch, so the string ``"abcdefg"`` (first case) or ``"ab"`` (second), valid under the
original, matches two branches of the updated schema and is rejected: not backward compatible. The
engine says so (``one-of-new-branches-overlap``); so does ``test_compat_soundness``, by sampling. One
remains forward: ``"Complex: anyOf 1"`` (``[string, {maxLength: 5}]`` -> ``[string, {maxLength: 10}]``),
labelled ``backward``. ``maxLength`` constrains strings only, so both schemas accept every value (a
string by the first branch, anything else by the second); the engine, judging by the values
(docs/compatibility.md#when-the-values-decide), calls it compatible both ways.

Content-model policy: **strict**. The corpus decides it. Where a declared property is removed from an
open content model (no ``additionalProperties``), e.g. ``{"properties": {"postal_code": {"type":
"number"}, "street": ...}}`` -> ``{"properties": {"street": ...}}``, the corpus labels the pair
``backward``, not ``both``: readers on the old schema must be ready for data in which the new schema
lets ``postal_code`` hold anything. That is the strict reading of an open model (an undeclared name may
carry any value); the lenient one ("producers send only declared fields") calls those pairs compatible
both ways and loses three forward cases. No case in the corpus points the other way, which
``test_the_corpus_reads_open_content_models_strictly`` pins down from the data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contract_platform.compat import Mode, Policy, check_compatibility

CORPUS_DIR = Path(__file__).resolve().parents[3].parent / "shared" / "compat-corpus"
CORPUS_FILE = CORPUS_DIR / "apicurio-registry-jsonschema-compatibility-test-data.json"
THRESHOLD = 0.98
EXPECTED = {  # label -> (backward, forward)
    "backward": (True, False),
    "both": (True, True),
    "none": (False, False),
}


@pytest.fixture(scope="module")
def cases() -> list[dict[str, Any]]:
    if not CORPUS_DIR.is_dir():
        pytest.skip(f"the shared compatibility corpus is not checked out next to the repository ({CORPUS_DIR})")
    enabled = [case for case in json.loads(CORPUS_FILE.read_text())["tests"] if case["enabled"]]
    assert enabled, f"{CORPUS_FILE} holds no enabled case"
    return enabled


def _disagreements(cases: list[dict[str, Any]], policy: Policy) -> dict[str, list[str]]:
    """Per direction, one line per case where the engine disagrees with the label, with the changes found."""
    found: dict[str, list[str]] = {"backward": [], "forward": []}
    for case in cases:
        expected = dict(zip(("backward", "forward"), EXPECTED[case["compatibility"]], strict=True))
        for direction, mode in (("backward", Mode.BACKWARD), ("forward", Mode.FORWARD)):
            verdict = check_compatibility(case["original"], case["updated"], mode=mode, policy=policy)
            if verdict.compatible != expected[direction]:
                reasons = "; ".join(f"{c.rule} at {c.path or '/'}" for c in verdict.changes) or "no change found"
                found[direction].append(
                    f"[{direction}] {case['id']!r} labelled {case['compatibility']!r}: engine says "
                    f"{'compatible' if verdict.compatible else 'incompatible'} ({reasons})"
                )
    return found


def test_agreement_with_apicurio_in_each_direction(cases: list[dict[str, Any]]) -> None:
    disagreements = _disagreements(cases, Policy.STRICT)
    rates = {direction: 1 - len(lines) / len(cases) for direction, lines in disagreements.items()}
    for direction, lines in disagreements.items():
        print(f"{direction}: {rates[direction]:.1%} agreement over {len(cases)} cases")
        for line in lines:
            print("  " + line)
    failing = {d: r for d, r in rates.items() if r < THRESHOLD}
    assert not failing, f"agreement below {THRESHOLD:.0%}: {failing}\n" + "\n".join(
        line for lines in disagreements.values() for line in lines
    )


def test_the_corpus_reads_open_content_models_strictly(cases: list[dict[str, Any]]) -> None:
    strict = _disagreements(cases, Policy.STRICT)
    lenient = _disagreements(cases, Policy.LENIENT)
    for direction in ("backward", "forward"):
        assert len(strict[direction]) <= len(lenient[direction]), direction
    assert sum(map(len, strict.values())) < sum(map(len, lenient.values()))

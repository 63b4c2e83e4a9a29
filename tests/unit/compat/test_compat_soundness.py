"""Soundness: whenever the engine calls a pair compatible in a direction, generated instances agree.

Backward: instances generated from OLD (hypothesis-jsonschema) validate against NEW with the
platform's own validator; forward: from NEW against OLD. Run over the engine's own spec pairs and
over generated pairs (a schema and random edits of it, some spelled in draft-07). This CI test runs
``CONTRACT_SOUNDNESS_PAIRS`` generated pairs (default 100, about 10 s);
``benchmarks/compat_soundness.py`` runs 10,000 and records the figure.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from tests.unit.compat.spec_pairs import SPEC_PAIRS

from contract_platform.catalog.schemas import validator_for
from contract_platform.compat import diff_schemas
from contract_platform.compat.soundness import called_compatible, instances, pairs, sampling_settings, verify_samples

GENERATED_PAIRS = int(os.environ.get("CONTRACT_SOUNDNESS_PAIRS", "100"))


@pytest.mark.parametrize(("case", "old", "new", "expected"), SPEC_PAIRS, ids=[p[0] for p in SPEC_PAIRS])
def test_spec_pairs_called_compatible_survive_sampling(case: str, old: Any, new: Any, expected: Any) -> None:
    checked = verify_samples(old, new, samples=25, directions=called_compatible(diff_schemas(old, new)))
    for check in checked:
        assert check.holds, f"{case} {check.direction}: {check.counterexample}"


def test_sampling_finds_a_minimal_counterexample_for_a_narrowing() -> None:
    [backward, forward] = verify_samples({"type": "integer"}, {"type": "integer", "maximum": 3}, samples=100)
    assert backward.counterexample is not None and backward.counterexample.instance == 4  # shrunk to the edge
    assert "maximum" in backward.counterexample.reason
    assert forward.holds


def test_sampling_a_schema_that_accepts_nothing_is_reported_as_skipped() -> None:
    [backward] = verify_samples(False, {"type": "string"}, samples=10, directions=["backward"])
    assert backward.holds and backward.skipped


@sampling_settings(GENERATED_PAIRS)
@given(pairs(), st.data())
def test_generated_pairs_called_compatible_survive_sampling(pair: tuple[Any, Any], data: st.DataObject) -> None:
    old, new = pair
    for direction in called_compatible(diff_schemas(old, new)):
        source, target = (old, new) if direction == "backward" else (new, old)
        validator = validator_for(target)
        for _ in range(3):
            try:
                instance = data.draw(instances(source))
            except InvalidArgument:  # hypothesis-jsonschema cannot generate from this source schema
                return
            assert validator.is_valid(instance), f"{direction}: {old} -> {new} fails on {instance!r}"

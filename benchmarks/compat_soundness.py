"""Soundness of the compatibility engine over generated schema pairs (10,000 by default).

    .venv/bin/python benchmarks/compat_soundness.py [--pairs 10000] [--instances 3] [--seed 0]

Each pair is a generated schema and one to three random edits of it (bounds, required, properties,
types, values, combinators, additionalProperties/unevaluatedProperties; half the old schemas spelled
in draft-07), from ``contract_platform.compat.soundness.pairs``. For every direction the engine calls
compatible, ``--instances`` instances are generated from the source schema (hypothesis-jsonschema)
and validated against the target with the platform's validator. A failure is shrunk by Hypothesis
and printed with its pair and minimal instance; the run then exits 1.

Prints one JSON line: ``pairs`` checked to the end (``pairs_drawn`` counts Hypothesis's retries of
rejected draws too, and its shrinking after a failure), how many were called backward / forward
compatible, instances validated, counterexamples, pairs whose source schema could not be sampled,
and seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from hypothesis import given, seed
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from contract_platform.catalog.schemas import validator_for
from contract_platform.compat import diff_schemas
from contract_platform.compat.soundness import called_compatible, instances, pairs, sampling_settings


def run(pair_count: int, per_direction: int, random_seed: int) -> dict[str, Any]:
    figures: dict[str, Any] = {"pairs": 0, "pairs_drawn": 0, "backward_compatible": 0, "forward_compatible": 0,
                               "instances": 0, "unsampled": 0, "counterexamples": 0}  # fmt: skip

    start = time.perf_counter()

    @seed(random_seed)
    @sampling_settings(pair_count)
    @given(pairs(), st.data())
    def check(pair: tuple[Any, Any], data: st.DataObject) -> None:
        old, new = pair
        called = called_compatible(diff_schemas(old, new))
        figures["pairs_drawn"] += 1
        for direction in called:
            source, target = (old, new) if direction == "backward" else (new, old)
            validator = validator_for(target)
            for _ in range(per_direction):
                try:
                    instance = data.draw(instances(source))
                except InvalidArgument:
                    figures["unsampled"] += 1
                    return
                figures["instances"] += 1
                if not validator.is_valid(instance):
                    figures["counterexamples"] += 1
                    raise AssertionError(
                        f"{direction} called compatible, but {json.dumps(instance)} fails: "
                        f"{json.dumps(old)} -> {json.dumps(new)}"
                    )
        figures["pairs"] += 1  # checked to the end (a draw Hypothesis rejects is retried, not counted)
        if figures["pairs"] % 500 == 0:
            print(f"{figures['pairs']} pairs, {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
        for direction in called:
            figures[f"{direction}_compatible"] += 1

    try:
        check()
    except AssertionError as exc:
        figures["counterexample"] = str(exc).splitlines()[0]
    figures["seconds"] = round(time.perf_counter() - start, 1)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--instances", type=int, default=3, help="instances per direction called compatible")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    figures = run(args.pairs, args.instances, args.seed)
    print(json.dumps(figures))
    return 1 if "counterexample" in figures else 0


if __name__ == "__main__":
    sys.exit(main())

"""The one table of steps: only forward single steps exist, and every other move is refused with the way on."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from contract_platform.catalog.model import Contract, Status
from contract_platform.lifecycle import TRANSITIONS, GuardContext, check_step, next_status

ORDER = list(Status)


def test_the_table_holds_exactly_the_forward_single_steps() -> None:
    assert list(TRANSITIONS) == list(zip(ORDER, ORDER[1:], strict=False))
    assert all(guards for guards in TRANSITIONS.values())
    assert [next_status(status) for status in ORDER] == [*ORDER[1:], None]


@pytest.mark.parametrize(
    ("source", "target", "reason"),
    [
        (
            Status.ACTIVE,
            Status.RETIRED,
            "active -> retired is not a lifecycle step: it skips superseded, deprecated; "
            "the next step from active is superseded",
        ),
        (
            Status.PROPOSED,
            Status.ACTIVE,
            "proposed -> active is not a lifecycle step: it skips experimental; the next step from proposed is "
            "experimental",
        ),
        (
            Status.DEPRECATED,
            Status.ACTIVE,
            "deprecated -> active is not a lifecycle step: the lifecycle only moves forward; "
            "the next step from deprecated is retired",
        ),
        (
            Status.ACTIVE,
            Status.ACTIVE,
            "active -> active is not a lifecycle step: the lifecycle only moves forward; "
            "the next step from active is superseded",
        ),
        (Status.RETIRED, Status.ACTIVE, "retired -> active is not a lifecycle step: retired is final"),
    ],
)
def test_illegal_steps_are_refused_naming_the_allowed_next_step(
    ctx: Callable[[Contract], GuardContext],
    v1: Contract,
    prove_everything: Callable[[Contract], None],
    source: Status,
    target: Status,
    reason: str,
) -> None:
    prove_everything(v1)  # the evidence is all there: only the shape of the step is wrong
    assert check_step(source, target, ctx(v1)) == [reason]


def test_every_pair_outside_the_table_is_illegal(ctx: Callable[[Contract], GuardContext], v1: Contract) -> None:
    for source in Status:
        for target in Status:
            reasons = check_step(source, target, ctx(v1))
            if (source, target) not in TRANSITIONS:
                assert len(reasons) == 1 and "is not a lifecycle step" in reasons[0], (source, target)

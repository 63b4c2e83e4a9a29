"""The lifecycle in one table: every allowed step and the guards that must pass to take it.

::

    proposed -> experimental -> active -> superseded -> deprecated -> retired

Only these forward single steps exist. Anything else (a skip such as active -> retired, a move
backwards, any step out of retired) is illegal and refused with the step that is allowed instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from contract_platform.catalog.model import Status
from contract_platform.lifecycle.guards import (
    Guard,
    GuardContext,
    guard_archive_validation,
    guard_compatible,
    guard_envelope_quality,
    guard_fixtures_pass,
    guard_lint_clean,
    guard_migration_running,
    guard_no_hold,
    guard_parity_verified,
    guard_retirement_audit_fresh,
    guard_runtime_validation,
    guard_successor_active,
    guard_sunset_set,
    guard_topology_provisioned,
)

__all__ = ["TRANSITIONS", "check_step", "guard_names", "next_status"]

TRANSITIONS: Mapping[tuple[Status, Status], tuple[Guard, ...]] = MappingProxyType(
    {
        (Status.PROPOSED, Status.EXPERIMENTAL): (guard_lint_clean, guard_fixtures_pass, guard_topology_provisioned),
        (Status.EXPERIMENTAL, Status.ACTIVE): (
            guard_compatible,
            guard_envelope_quality,
            guard_archive_validation,
            guard_runtime_validation,
        ),
        (Status.ACTIVE, Status.SUPERSEDED): (guard_successor_active, guard_migration_running),
        (Status.SUPERSEDED, Status.DEPRECATED): (guard_sunset_set, guard_parity_verified),
        (Status.DEPRECATED, Status.RETIRED): (guard_retirement_audit_fresh, guard_no_hold),
    }
)


def next_status(status: Status) -> Status | None:
    """The one status reachable from ``status``; None from retired."""
    return next((to for (source, to) in TRANSITIONS if source is status), None)


def guard_names(from_status: Status, to_status: Status) -> list[str]:
    return [guard.__name__.removeprefix("guard_") for guard in TRANSITIONS[(from_status, to_status)]]


def check_step(from_status: Status, to_status: Status, ctx: GuardContext) -> list[str]:
    """Every reason the step cannot be taken now; empty when it is legal and every guard passes."""
    guards = TRANSITIONS.get((from_status, to_status))
    if guards is None:
        return [_illegal(from_status, to_status)]
    return [reason for guard in guards for reason in guard(ctx)]


def _illegal(from_status: Status, to_status: Status) -> str:
    allowed = next_status(from_status)
    if allowed is None:
        return f"{from_status} -> {to_status} is not a lifecycle step: {from_status} is final"
    instead = f"the next step from {from_status} is {allowed}"
    if to_status.rank <= from_status.rank:
        return f"{from_status} -> {to_status} is not a lifecycle step: the lifecycle only moves forward; {instead}"
    skipped = ", ".join(status.value for status in Status if from_status.rank < status.rank < to_status.rank)
    return f"{from_status} -> {to_status} is not a lifecycle step: it skips {skipped}; {instead}"

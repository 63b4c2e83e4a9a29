"""Reconcile declared with effective status, one guarded step at a time, like a controller.

``reconcile`` only plans (it reads evidence, writes nothing); ``apply_plan`` applies the plan through
the registry's optimistic concurrency and records the refused step, if any. ``request_transition``
is the platform team's manual single step, under the same guards.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from contract_platform.catalog.model import Contract, Status
from contract_platform.errors import ConcurrentTransition, TransitionRefused
from contract_platform.evidence.records import TransitionRecord, VersionState
from contract_platform.evidence.registry import Registry
from contract_platform.lifecycle.guards import GuardContext
from contract_platform.lifecycle.states import check_step, guard_names, next_status

__all__ = ["Plan", "Refusal", "Step", "apply_plan", "reconcile", "request_transition"]


@dataclass(frozen=True)
class Step:
    message_type: str
    from_status: Status
    to_status: Status
    evidence: tuple[int, ...] = ()  # ids of the evidence its guards consulted (first one goes on the record)


@dataclass(frozen=True)
class Refusal:
    step: Step
    reasons: list[str]


@dataclass(frozen=True)
class Plan:
    """What reconciling one contract would do: ``steps`` in order, then the step that was refused, if any."""

    steps: list[Step]
    refused: Refusal | None
    declared: Status
    effective: Status | None  # None: not registered yet (apply_plan registers it as proposed first)
    message_type: str
    contract_version: str

    @property
    def settled(self) -> bool:
        """Nothing to do: effective already equals declared."""
        return not self.steps and self.refused is None and self.effective == self.declared


def reconcile(contract: Contract, effective: Status | None, ctx: GuardContext) -> Plan:
    """Walk from ``effective`` toward the declared status, judging each step as if the earlier ones were taken.

    Stops at the first refused step. A declared status behind the effective one is refused too: the
    lifecycle does not move backwards.
    """
    declared, current = contract.status, effective or Status.PROPOSED

    def plan(steps: list[Step], refused: Refusal | None = None) -> Plan:
        return Plan(steps, refused, declared, effective, contract.message_type, contract.version)

    if declared.rank < current.rank:
        reason = (
            f"declared status {declared} is behind the effective status {current}: the lifecycle never moves "
            f"backwards; set `status: {current}` or later in contract.yaml, or replace the contract with a new major"
        )
        return plan([], Refusal(Step(contract.message_type, current, declared), [reason]))
    steps: list[Step] = []
    while current is not declared:
        following = next_status(current)
        assert following is not None  # declared ranks above current, so current is not final
        step_ctx = ctx.fresh(contract)
        reasons = check_step(current, following, step_ctx)
        step = Step(contract.message_type, current, following, tuple(dict.fromkeys(step_ctx.consulted)))
        if reasons:
            return plan(steps, Refusal(step, reasons))
        steps.append(step)
        current = following
    return plan(steps)


def apply_plan(
    plan: Plan, registry: Registry, *, actor: str, run_id: str | None = None, reason_prefix: str = ""
) -> list[TransitionRecord]:
    """Apply ``plan`` step by step; returns the transitions recorded (the registration first, if it was one).

    Registers the contract (or records its new contract version) first. Each step re-reads the
    effective status: if another run moved it, ``ConcurrentTransition`` propagates and nothing else
    of the plan is applied.
    """
    applied: list[TransitionRecord] = []
    state = registry.register(plan.message_type, plan.contract_version, actor=actor, run_id=run_id)
    if plan.effective is None:
        registration = registry.transition(plan.message_type, state.revision)
        if registration is not None and registration.from_status is None:
            applied.append(registration)
    for step in plan.steps:
        state = _expect(registry, step)
        evidence = ", ".join(f"#{evidence_id}" for evidence_id in step.evidence) or "none"
        reason = (
            f"{reason_prefix}reconciling toward declared {plan.declared}: "
            f"{', '.join(guard_names(step.from_status, step.to_status))} passed (evidence {evidence})"
        )
        applied.append(_apply(registry, state, step.to_status, actor, reason, run_id, step.evidence))
    if plan.refused is not None and not _already_refused(registry, plan.message_type, plan.refused):
        refused = plan.refused
        registry.record_refusal(
            plan.message_type,
            from_status=refused.step.from_status,
            to_status=refused.step.to_status,
            reasons=refused.reasons,
            actor=actor,
            run_id=run_id,
        )
    return applied


def request_transition(
    contract: Contract,
    to: Status,
    registry: Registry,
    *,
    actor: str,
    reason: str,
    run_id: str | None = None,
    now: datetime | None = None,
) -> TransitionRecord:
    """One manual step (``contractctl transition``): same guards; refused steps are recorded and raised."""
    state = registry.register(contract.message_type, contract.version, actor=actor, run_id=run_id)
    ctx = GuardContext(contract, registry, now or datetime.now(UTC))
    reasons = check_step(state.status, to, ctx)
    if reasons:
        registry.record_refusal(
            contract.message_type, from_status=state.status, to_status=to, reasons=reasons, actor=actor, run_id=run_id
        )
        raise TransitionRefused(contract.message_type, state.status.value, to.value, reasons)
    return _apply(registry, state, to, actor, reason, run_id, tuple(dict.fromkeys(ctx.consulted)))


def _already_refused(registry: Registry, message_type: str, refused: Refusal) -> bool:
    """The same step refused for the same reasons last time: a re-run records nothing new."""
    latest = registry.refusals(message_type, limit=1)
    return bool(latest) and (
        latest[0].from_status is refused.step.from_status
        and latest[0].to_status is refused.step.to_status
        and list(latest[0].reasons) == list(refused.reasons)
    )


def _expect(registry: Registry, step: Step) -> VersionState:
    state = registry.effective(step.message_type)
    if state is None or state.status is not step.from_status:
        now = state.status if state else "unregistered"
        raise ConcurrentTransition(
            f"{step.message_type}: planned {step.from_status} -> {step.to_status}, but the effective status is now "
            f"{now}: another run moved it first; reconcile again"
        )
    return state


def _apply(
    registry: Registry,
    state: VersionState,
    to: Status,
    actor: str,
    reason: str,
    run_id: str | None,
    evidence: tuple[int, ...],
) -> TransitionRecord:
    new = registry.apply_transition(
        state.message_type,
        expected=state,
        to=to,
        actor=actor,
        reason=reason,
        run_id=run_id,
        evidence_id=evidence[0] if evidence else None,
    )
    record = registry.transition(state.message_type, new.revision)
    assert record is not None, "apply_transition records the transition in the same database transaction"
    return record

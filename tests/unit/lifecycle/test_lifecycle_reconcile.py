"""Reconciling declared with effective status, applying plans, and the manual single step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import date, timedelta

import pytest

from contract_platform.catalog.model import Contract, Status
from contract_platform.errors import ConcurrentTransition, TransitionRefused
from contract_platform.lifecycle import GuardContext, Step, apply_plan, reconcile, request_transition
from contract_platform.store import EvidenceRecord, SqlRegistry

Ctx = Callable[[Contract], GuardContext]
Prove = Callable[..., EvidenceRecord]
V1 = "billing.invoice-issued.v1"
V2 = "billing.invoice-issued.v2"


def effective(registry: SqlRegistry, message_type: str = V1) -> Status | None:
    state = registry.effective(message_type)
    return state.status if state else None


def test_declared_equal_to_effective_is_an_empty_plan(
    ctx: Ctx, registry: SqlRegistry, force: Callable, v1: Contract
) -> None:
    force(V1, Status.ACTIVE)
    contract = replace(v1, status=Status.ACTIVE)
    plan = reconcile(contract, Status.ACTIVE, ctx(contract))
    assert (plan.steps, plan.refused, plan.settled) == ([], None, True)
    before = registry.transitions(V1)
    assert apply_plan(plan, registry, actor="dag:contract_change") == []
    assert registry.transitions(V1) == before and registry.refusals(V1) == []


def test_reconcile_stops_at_the_first_refused_step_and_keeps_the_earlier_ones(
    ctx: Ctx, prove: Prove, registry: SqlRegistry, make_contract: Callable[..., Contract]
) -> None:
    contract = make_contract(V1, status=Status.ACTIVE)
    lint, _, _ = (prove(contract, kind) for kind in ("lint", "fixtures", "topology"))
    prove(contract, "compatibility")
    prove(contract, "archive_validation")  # but no envelope quality yet
    plan = reconcile(contract, None, ctx(contract))
    assert [(s.from_status, s.to_status) for s in plan.steps] == [(Status.PROPOSED, Status.EXPERIMENTAL)]
    assert plan.refused is not None
    assert (plan.refused.step.from_status, plan.refused.step.to_status) == (Status.EXPERIMENTAL, Status.ACTIVE)
    assert plan.refused.reasons == ["no envelope quality evidence yet: run the envelope_quality DAG on real traffic"]
    assert registry.transitions(V1) == []  # planning writes nothing

    applied = apply_plan(
        plan, registry, actor="dag:contract_change", run_id="run-1", reason_prefix="[contract_change] "
    )
    assert [(t.from_status, t.to_status) for t in applied] == [
        (None, Status.PROPOSED),
        (Status.PROPOSED, Status.EXPERIMENTAL),
    ]
    assert applied == registry.transitions(V1)
    assert applied[1].evidence_id == lint.id and applied[1].run_id == "run-1"
    assert applied[1].reason.startswith(
        "[contract_change] reconciling toward declared active: lint_clean, fixtures_pass"
    )
    [refused] = registry.refusals(V1)
    assert (refused.from_status, refused.to_status, refused.run_id) == (Status.EXPERIMENTAL, Status.ACTIVE, "run-1")
    assert refused.reasons == tuple(plan.refused.reasons)
    assert effective(registry) is Status.EXPERIMENTAL


def test_a_declared_status_behind_the_effective_one_is_refused(
    ctx: Ctx, registry: SqlRegistry, force: Callable, v1: Contract
) -> None:
    force(V1, Status.ACTIVE)
    contract = replace(v1, status=Status.EXPERIMENTAL)
    plan = reconcile(contract, Status.ACTIVE, ctx(contract))
    assert plan.steps == [] and plan.refused is not None
    assert plan.refused.step == Step(V1, Status.ACTIVE, Status.EXPERIMENTAL)
    assert plan.refused.reasons == [
        "declared status experimental is behind the effective status active: the lifecycle never moves backwards; "
        "set `status: active` or later in contract.yaml, or replace the contract with a new major"
    ]
    assert apply_plan(plan, registry, actor="dag:contract_change") == []
    assert effective(registry) is Status.ACTIVE
    assert registry.refusals(V1)[0].to_status is Status.EXPERIMENTAL


def test_a_run_that_lost_the_race_raises_and_applies_nothing(
    ctx: Ctx, registry: SqlRegistry, prove_everything: Callable[[Contract], None], v1: Contract
) -> None:
    prove_everything(v1)
    registry.register(V1, v1.version, actor="setup")
    contract = replace(v1, status=Status.ACTIVE)
    plan = reconcile(contract, Status.PROPOSED, ctx(contract))
    assert len(plan.steps) == 2
    other = reconcile(contract, Status.PROPOSED, ctx(contract))
    apply_plan(other, registry, actor="dag:other", run_id="first")
    with pytest.raises(
        ConcurrentTransition, match="planned proposed -> experimental, but the effective status is now active"
    ):
        apply_plan(plan, registry, actor="dag:late", run_id="second")
    assert [t.actor for t in registry.transitions(V1)] == ["setup", "dag:other", "dag:other"]


def test_full_happy_path_from_proposed_to_retired_with_evidence_step_by_step(
    ctx: Ctx, prove: Prove, registry: SqlRegistry, force: Callable, make_contract: Callable[..., Contract]
) -> None:
    def run(contract: Contract) -> list[Status]:
        plan = reconcile(contract, effective(registry), ctx(contract))
        return [t.to_status for t in apply_plan(plan, registry, actor="dag:contract_change")]

    contract = make_contract(V1, status=Status.EXPERIMENTAL)
    assert run(contract) == [Status.PROPOSED]  # registered; experimental refused: nothing proven yet
    for kind in ("lint", "fixtures", "topology"):
        prove(contract, kind)
    assert run(contract) == [Status.EXPERIMENTAL]

    contract = replace(contract, status=Status.ACTIVE)
    assert run(contract) == []
    for kind in ("compatibility", "envelope_quality", "archive_validation"):
        prove(contract, kind)
    assert run(contract) == [Status.ACTIVE]

    contract = replace(contract, status=Status.SUPERSEDED, superseded_by=V2)
    force(V2, Status.EXPERIMENTAL)
    assert run(contract) == []
    force(V2, Status.ACTIVE)
    prove(contract, "migration_parity", "unknown", {"mode": "bridge"})
    assert run(contract) == [Status.SUPERSEDED]

    contract = replace(contract, status=Status.DEPRECATED, sunset=date(2026, 9, 1))
    assert run(contract) == []  # parity still undecided
    prove(contract, "migration_parity", "pass", {"mode": "bridge", "missing": 0}, age=timedelta(minutes=30))
    assert run(contract) == [Status.DEPRECATED]

    contract = replace(contract, status=Status.RETIRED)
    prove(contract, "retirement_audit", age=timedelta(days=5))
    assert run(contract) == []  # stale audit
    prove(contract, "retirement_audit")
    assert run(contract) == [Status.RETIRED]
    assert run(contract) == []

    history = registry.transitions(V1)
    assert [t.to_status for t in history] == list(Status)
    assert all(t.evidence_id is not None for t in history[1:])
    assert len(registry.refusals(V1)) == 5  # one per run that could not move


def test_request_transition_applies_one_guarded_step(
    registry: SqlRegistry, prove_everything: Callable[[Contract], None], v1: Contract, now
) -> None:
    prove_everything(v1)
    record = request_transition(v1, Status.EXPERIMENTAL, registry, actor="alice", reason="ticket PLAT-7", now=now)
    assert (record.from_status, record.to_status, record.actor, record.reason) == (
        Status.PROPOSED, Status.EXPERIMENTAL, "alice", "ticket PLAT-7"
    )  # fmt: skip
    assert record.evidence_id is not None
    assert registry.transitions(V1)[-1] == record


def test_request_transition_refuses_an_illegal_jump_and_records_it(
    registry: SqlRegistry, prove_everything: Callable[[Contract], None], force: Callable, v1: Contract, now
) -> None:
    prove_everything(v1)
    force(V1, Status.ACTIVE)
    with pytest.raises(TransitionRefused) as caught:
        request_transition(v1, Status.RETIRED, registry, actor="alice", reason="cleanup", now=now)
    assert caught.value.reasons == [
        "active -> retired is not a lifecycle step: it skips superseded, deprecated; "
        "the next step from active is superseded"
    ]
    assert caught.value.exit_code == 1
    assert effective(registry) is Status.ACTIVE
    assert registry.refusals(V1)[0].reasons == tuple(caught.value.reasons)


def test_request_transition_refuses_when_a_guard_does(
    registry: SqlRegistry, force: Callable, v1: Contract, now
) -> None:
    force(V1, Status.DEPRECATED)
    with pytest.raises(TransitionRefused, match="no retirement audit yet"):
        request_transition(v1, Status.RETIRED, registry, actor="alice", reason="done", now=now)
    assert effective(registry) is Status.DEPRECATED

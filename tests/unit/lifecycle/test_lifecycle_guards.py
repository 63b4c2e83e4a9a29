"""Every guard refuses on its own, with its reason, while every other guard of its step passes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import date, timedelta
from typing import Any

import pytest

from contract_platform.catalog.model import Contract, Hold, Status
from contract_platform.catalog.model import ValidationSettings as Validation
from contract_platform.lifecycle import GuardContext, check_step
from contract_platform.store import EvidenceRecord, SqlRegistry

Ctx = Callable[[Contract], GuardContext]
Prove = Callable[..., EvidenceRecord]
V2 = "billing.invoice-issued.v2"


@pytest.fixture(autouse=True)
def proven(v1: Contract, prove_everything: Callable[[Contract], None]) -> None:
    prove_everything(v1)


def refusal(ctx: Ctx, contract: Contract, to: Status) -> list[str]:
    return check_step(Status(list(Status)[to.rank - 1]), to, ctx(contract))


@pytest.mark.parametrize("to", [s for s in Status if s is not Status.PROPOSED])
def test_with_every_piece_of_evidence_every_step_passes(ctx: Ctx, v1: Contract, to: Status) -> None:
    assert refusal(ctx, v1, to) == []


# -- to experimental -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "word", "how"),
    [
        ("lint", "lint", "contractctl lint"),
        ("fixtures", "fixtures", "contractctl check"),
        ("topology", "topology", "provision"),
    ],
)
def test_experimental_needs_passing_catalogue_checks(
    ctx: Ctx, prove: Prove, v1: Contract, kind: str, word: str, how: str
) -> None:
    failing = prove(v1, kind, "fail", {}, age=timedelta(minutes=1))
    [reason] = refusal(ctx, v1, Status.EXPERIMENTAL)
    assert reason.startswith(f"{word} failed for version 1.0.0 (evidence #{failing.id} of 2026-07-01 11:59 UTC)")
    assert how in reason


def test_catalogue_checks_count_only_for_the_current_version(ctx: Ctx, v1: Contract) -> None:
    newer = replace(v1, version="1.1.0")
    reasons = refusal(ctx, newer, Status.EXPERIMENTAL)
    assert reasons[0] == (
        "no lint evidence for version 1.1.0 yet (the latest is for version 1.0.0): "
        "run `contractctl lint` or the contract_change DAG"
    )
    assert len(reasons) == 3  # lint, fixtures and topology: all were for 1.0.0


# -- to active -----------------------------------------------------------------------------------------


def test_active_needs_compatibility(ctx: Ctx, prove: Prove, v1: Contract) -> None:
    prove(v1, "compatibility", "fail", {"changes": 1}, age=timedelta(minutes=1))
    [reason] = refusal(ctx, v1, Status.ACTIVE)
    assert reason.startswith("compatibility failed for version 1.0.0") and "BACKWARD" in reason


def test_a_new_major_with_a_migration_needs_the_migration_spec_instead(
    ctx: Ctx, prove: Prove, make_contract: Callable[..., Contract]
) -> None:
    v2 = make_contract(V2, migration={"from": "billing.invoice-issued.v1"})
    for kind in ("compatibility", "envelope_quality", "archive_validation"):
        prove(v2, kind)
    [reason] = refusal(ctx, v2, Status.ACTIVE)
    assert reason.startswith("no migration spec evidence for version 2.0.0 yet")
    prove(v2, "migration_spec")
    assert refusal(ctx, v2, Status.ACTIVE) == []


def test_active_needs_envelope_quality_evidence(ctx: Ctx, make_contract: Callable[..., Contract], prove: Prove) -> None:
    fresh = make_contract("billing.fresh.v1")
    for kind in ("compatibility", "archive_validation"):
        prove(fresh, kind)
    assert refusal(ctx, fresh, Status.ACTIVE) == [
        "no envelope quality evidence yet: run the envelope_quality DAG on real traffic"
    ]


def test_failing_envelope_quality_names_the_failed_expectations(ctx: Ctx, prove: Prove, v1: Contract) -> None:
    figures = {"failed_expectations": ["metadata.occurredAt not after publishedAt", "metadata.tenantId not null"]}
    prove(v1, "envelope_quality", "fail", figures, age=timedelta(minutes=1))
    [reason] = refusal(ctx, v1, Status.ACTIVE)
    assert reason.startswith(
        "envelope quality failed on real traffic: metadata.occurredAt not after publishedAt, "
        "metadata.tenantId not null not met"
    )


def test_archive_validation_must_be_inside_the_window(
    ctx: Ctx, prove: Prove, make_contract: Callable[..., Contract]
) -> None:
    old = make_contract("billing.old.v1", validation=Validation(window_days=3))
    for kind in ("compatibility", "envelope_quality"):
        prove(old, kind)
    prove(old, "archive_validation", age=timedelta(days=3, minutes=1))
    assert refusal(ctx, old, Status.ACTIVE) == [
        "no archive validation evidence in the last 3 days: run the topic_archive_validation DAG"
    ]


def rate_refusal(rate: str, invalid: int, total: int) -> list[str]:
    return [
        f"invalid rate {rate} ({invalid} of {total} archived messages in the last 7 days) is above the target 0.100%: "
        "see the quarantine of topic_archive_validation for the reasons"
    ]


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        ([(5, 1000)], rate_refusal("0.500%", 5, 1000)),
        ([(1, 1000), (2, 1000)], rate_refusal("0.150%", 3, 2000)),  # each run counts
        ([(2, 1000), (0, 9000)], []),  # one bad day, 0.02 % over the window: the window decides
        ([(1, 1000), (1, 1000)], []),  # exactly at the target
    ],
)
def test_the_invalid_rate_is_summed_over_the_window(
    ctx: Ctx, prove: Prove, make_contract: Callable[..., Contract], runs: list[tuple[int, int]], expected: list[str]
) -> None:
    contract = make_contract("billing.rate.v1")
    for kind in ("compatibility", "envelope_quality"):
        prove(contract, kind)
    for day, (invalid, total) in enumerate(runs):
        figures = {"invalid": invalid, "total": total}
        prove(contract, "archive_validation", "fail" if invalid else "pass", figures, age=timedelta(days=day, hours=1))
    assert refusal(ctx, contract, Status.ACTIVE) == expected


def test_a_day_validated_twice_counts_once_with_its_latest_evidence(
    ctx: Ctx, prove: Prove, make_contract: Callable[..., Contract]
) -> None:
    contract = make_contract("billing.rerun.v1")
    for kind in ("compatibility", "envelope_quality"):
        prove(contract, kind)
    day = {"since": "2026-07-02", "until": "2026-07-03"}
    prove(
        contract, "archive_validation", "fail", {"invalid": 5, "total": 1000, "interval": day}, age=timedelta(hours=3)
    )
    prove(
        contract, "archive_validation", "pass", {"invalid": 1, "total": 1000, "interval": day}, age=timedelta(hours=1)
    )
    prove(
        contract, "archive_validation", "fail", {"invalid": 2, "total": 1000, "interval": None}
    )  # a whole-archive run
    assert refusal(ctx, contract, Status.ACTIVE) == rate_refusal("0.150%", 3, 2000)  # not 8 of 3000


def test_archive_validation_without_traffic_is_refused(
    ctx: Ctx, prove: Prove, make_contract: Callable[..., Contract]
) -> None:
    quiet = make_contract("billing.quiet.v1")
    for kind in ("compatibility", "envelope_quality"):
        prove(quiet, kind)
    prove(quiet, "archive_validation", figures={"invalid": 0, "total": 0})
    assert refusal(ctx, quiet, Status.ACTIVE) == [
        "archive validation saw no messages in the last 7 days: activation needs real traffic"
    ]


def test_archive_validation_with_incomplete_cross_day_checks_is_not_clean_and_names_the_days(
    ctx: Ctx, prove: Prove, make_contract: Callable[..., Contract]
) -> None:
    contract = make_contract("billing.gap.v1")
    for kind in ("compatibility", "envelope_quality"):
        prove(contract, kind)
    day = {"since": "2026-07-01", "until": "2026-07-02"}
    incomplete = {
        "invalid": 0,
        "total": 1000,
        "interval": day,
        "incomplete_duplicates": ["2026-06-30"],
        "incomplete_ordering": [f"2026-06-{n:02d}" for n in range(1, 31)],
    }
    record = prove(contract, "archive_validation", "unknown", incomplete, age=timedelta(hours=2))
    prove(contract, "archive_validation", "pass", {"invalid": 0, "total": 1000}, age=timedelta(days=1))  # older row
    assert refusal(ctx, contract, Status.ACTIVE) == [
        f"archive validation is incomplete, not clean, for a run (latest evidence #{record.id} of 2026-07-01 10:00 "
        "UTC): duplicate checks missed the first copies of 2026-06-30; ordering checks missed the sequences of "
        "2026-06-01 to 2026-06-30 (30 days); validate the days from 2026-06-01 on, in order, then those runs' days "
        "again (docs/archive-validation.md#incremental-runs)"
    ]
    # the same day validated again once the earlier days were: its latest evidence is complete, and counts
    prove(contract, "archive_validation", "pass", {"invalid": 0, "total": 1000, "interval": day})
    assert refusal(ctx, contract, Status.ACTIVE) == []


def test_incomplete_cross_day_checks_are_named_beside_a_rate_above_target(
    ctx: Ctx, prove: Prove, make_contract: Callable[..., Contract]
) -> None:
    contract = make_contract("billing.gap-and-rate.v1")
    for kind in ("compatibility", "envelope_quality"):
        prove(contract, kind)
    figures = {"invalid": 5, "total": 1000, "incomplete_ordering": ["2026-06-29", "2026-06-30"]}
    prove(contract, "archive_validation", "fail", figures)
    reasons = refusal(ctx, contract, Status.ACTIVE)
    assert len(reasons) == 2
    assert "ordering checks missed the sequences of 2026-06-29, 2026-06-30" in reasons[0]
    assert reasons[1:] == rate_refusal("0.500%", 5, 1000)


# -- to superseded -------------------------------------------------------------------------------------


def test_superseded_needs_superseded_by(ctx: Ctx, v1: Contract) -> None:
    assert refusal(ctx, replace(v1, superseded_by=None), Status.SUPERSEDED) == [
        "supersededBy is not set in contract.yaml: name the contract that replaces this one"
    ]


def test_superseded_needs_an_active_successor(ctx: Ctx, registry: SqlRegistry, v1: Contract) -> None:
    later = replace(v1, superseded_by="billing.invoice-issued.v3")
    assert refusal(ctx, later, Status.SUPERSEDED) == [
        "successor billing.invoice-issued.v3 is not in the registry yet: register it and make it active first"
    ]
    registry.register("billing.invoice-issued.v3", "3.0.0", actor="alice")
    assert refusal(ctx, later, Status.SUPERSEDED) == [
        "successor billing.invoice-issued.v3 is proposed, not active: make it active first"
    ]


@pytest.mark.parametrize(
    ("verdict", "figures", "expected"),
    [
        ("pass", {"mode": "replay"}, "has mode 'replay', not bridge or dual-publish"),
        ("fail", {"mode": "bridge"}, "the bridge migration is running but parity failed"),
        ("unknown", {"mode": "bridge"}, None),  # running, parity not decided yet: enough to supersede
    ],
)
def test_superseded_needs_a_running_migration(
    ctx: Ctx, prove: Prove, v1: Contract, verdict: str, figures: dict[str, Any], expected: str | None
) -> None:
    prove(v1, "migration_parity", verdict, figures, age=timedelta(minutes=1))
    reasons = refusal(ctx, v1, Status.SUPERSEDED)
    if expected is None:
        assert reasons == []
    else:
        [reason] = reasons
        assert expected in reason


# -- to deprecated -------------------------------------------------------------------------------------


def test_deprecated_needs_a_sunset(ctx: Ctx, v1: Contract) -> None:
    assert refusal(ctx, replace(v1, sunset=None), Status.DEPRECATED) == [
        "sunset is not set in contract.yaml: set the date after which consumers must have moved"
    ]


def test_deprecated_needs_verified_parity(ctx: Ctx, prove: Prove, v1: Contract) -> None:
    running = prove(v1, "migration_parity", "unknown", {"mode": "bridge"}, age=timedelta(minutes=1))
    [reason] = refusal(ctx, v1, Status.DEPRECATED)
    assert reason.startswith(f"migration parity was inconclusive (evidence #{running.id} ")


# -- to retired ----------------------------------------------------------------------------------------


def test_retired_needs_a_retirement_audit(ctx: Ctx, make_contract: Callable[..., Contract]) -> None:
    unaudited = make_contract("billing.unaudited.v1")
    assert refusal(ctx, unaudited, Status.RETIRED) == ["no retirement audit yet: run the retirement_audit DAG"]


def test_retired_needs_a_passing_audit(ctx: Ctx, prove: Prove, v1: Contract) -> None:
    prove(v1, "retirement_audit", "fail", {"failed_checks": ["no_consumers", "dlq_empty"]}, age=timedelta(minutes=1))
    [reason] = refusal(ctx, v1, Status.RETIRED)
    assert reason.startswith("retirement audit failed: no_consumers, dlq_empty failed (evidence #")


def test_retired_needs_a_fresh_audit_and_says_how_old_it_is(
    ctx: Ctx, prove: Prove, make_contract: Callable[..., Contract]
) -> None:
    stale = make_contract("billing.stale.v1")
    prove(stale, "retirement_audit", age=timedelta(days=3, hours=4))
    [reason] = refusal(ctx, stale, Status.RETIRED)
    assert reason.startswith("the latest retirement audit is 3d 4h old (evidence #")
    assert reason.endswith("it must be at most 2d old: run the retirement_audit DAG again")


def test_retired_is_refused_while_a_hold_is_in_force(ctx: Ctx, v1: Contract) -> None:
    held = replace(v1, holds=(
        Hold(kind="audit", until=date(2027, 6, 1), reason="tax audit 2026"),
        Hold(kind="legal", until=date(2026, 7, 1), reason="case 42"),  # ends today: still in force
        Hold(kind="replay", until=date(2026, 6, 30), reason="over"),
    ))  # fmt: skip
    assert refusal(ctx, held, Status.RETIRED) == [
        "audit hold in force until 2027-06-01: tax audit 2026",
        "legal hold in force until 2026-07-01: case 42",
    ]


def test_guards_record_the_evidence_they_consulted(ctx: Ctx, registry: SqlRegistry, v1: Contract) -> None:
    context = ctx(v1)
    assert check_step(Status.PROPOSED, Status.EXPERIMENTAL, context) == []
    lint, fixtures, topology = (
        registry.latest_evidence(v1.message_type, kind) for kind in ("lint", "fixtures", "topology")
    )
    assert context.consulted == [lint.id, fixtures.id, topology.id]  # type: ignore[union-attr]

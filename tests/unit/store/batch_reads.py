"""What the batched reads of the Contracts page must answer: the same as asking one message type at a time.

Shared by the SQLite test (tests/unit/store/test_store_batch_reads.py) and the PostgreSQL one
(tests/integration/test_store_batch_reads_postgres.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from contract_platform.catalog.model import Status
from contract_platform.evidence import EvidenceKind
from contract_platform.store import SqlRegistry

T0 = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
KINDS = (EvidenceKind.ARCHIVE_VALIDATION, EvidenceKind.ENVELOPE_QUALITY, EvidenceKind.RETIREMENT_AUDIT)


def seed_history(registry: SqlRegistry, prefix: str) -> list[str]:
    """Three types: walked, refused twice, evidence on several days (two rows at the same instant: the later id wins)."""
    names = [f"{prefix}.a.v1", f"{prefix}.b.v1", f"{prefix}.c.v1"]
    for index, name in enumerate(names):
        state = registry.register(name, "1.0.0", actor="t")
        for status in list(Status)[1 : 2 + index]:
            state = registry.apply_transition(
                name, expected=state, to=status, actor="t", reason=f"to {status}", run_id=f"{prefix}-run-{index}"
            )
        for day in range(3):
            at = T0 + timedelta(days=day)
            for kind in KINDS[: 1 + index]:
                registry.add_evidence(
                    name, contract_version="1.0.0", kind=kind, verdict="pass", figures={"day": day}, collected_at=at
                )
        registry.add_evidence(
            name,
            contract_version="1.0.0",
            kind=KINDS[0],
            verdict="fail",
            figures={"day": 2},
            collected_at=T0 + timedelta(days=2),
        )  # same instant as day 2's: recorded later, so it is the latest
    for reasons in (["first"], ["second"]):
        registry.record_refusal(
            names[1], from_status=Status.EXPERIMENTAL, to_status=Status.ACTIVE, reasons=reasons, actor="t"
        )
    return names


def assert_batches_match_single_reads(registry: SqlRegistry, names: list[str]) -> None:
    transitions, refusals = registry.latest_transitions(), registry.latest_refusals()
    latest = registry.latest_evidence_of(KINDS)
    only = registry.latest_evidence_of(KINDS, message_types=names[:1])
    for name in names:
        assert transitions[name] == registry.transitions(name)[-1]
        assert refusals.get(name) == next(iter(registry.refusals(name, limit=1)), None)
        for kind in KINDS:
            assert latest.get((name, kind)) == registry.latest_evidence(name, kind)
    assert refusals[names[1]].reasons == ("second",)
    assert latest[(names[0], KINDS[0])].verdict == "fail"
    assert {key for key in only} == {(names[0], KINDS[0])}
    assert registry.latest_evidence_of(()) == {}
    runs = {f"{names[0].split('.')[0]}-run-{index}" for index in range(len(names))}
    times = {run: at for run, at in registry.run_times("t", KINDS).items() if run in runs}
    for index, name in enumerate(names):
        run = f"{name.split('.')[0]}-run-{index}"
        applied = [t for t in registry.transitions(name) if t.run_id == run]
        assert times[run] == max(t.at for t in applied) and times[run].tzinfo is not None
        assert registry.transitions_by("t", [run]) == applied

"""The audit result, its evidence bundle, the evidence record the lifecycle guard reads, and refused retirements."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date, datetime, timedelta
from pathlib import Path

from tests.support.contracts import DURING_MIGRATION as NOW
from tests.support.contracts import V1, V2, catalog_of, migrating_contract

from contract_platform.catalog.model import Contract, Hold, Status
from contract_platform.evidence import EvidenceKind, Verdict
from contract_platform.lifecycle import GuardContext, check_step
from contract_platform.retirement import (
    AuditResult,
    CheckName,
    CheckResult,
    record_audit,
    retire_if_proven,
    write_audit_bundle,
)
from contract_platform.store import SqlRegistry

LATER = NOW + timedelta(days=3)


def passing(name: CheckName) -> CheckResult:
    return CheckResult(name, Verdict.PASS, {"ok": True})


def audit(*replaced: CheckResult, at: datetime = NOW) -> AuditResult:
    checks = {name: passing(name) for name in CheckName}
    checks.update({check.name: check for check in replaced})
    return AuditResult(V1, "1.0.0", at, tuple(checks.values()), run_id="run-1")


RETENTION = CheckResult(CheckName.RETENTION, Verdict.FAIL, {"passesAt": "x"}, "wait for retention", LATER)
UNACKED = CheckResult(CheckName.QUEUES, Verdict.UNKNOWN, {}, "unacked unknown")


def test_the_audit_passes_only_when_every_check_passes_and_unknown_is_not_a_pass() -> None:
    assert audit().verdict is Verdict.PASS
    assert audit(UNACKED).verdict is Verdict.UNKNOWN
    assert audit(UNACKED, RETENTION).verdict is Verdict.FAIL
    figures = audit(UNACKED, RETENTION).figures()
    assert figures["failed_checks"] == ["queues", "retention"]
    assert figures["clears_at"] == {"queues": None, "retention": "2026-11-25T12:00:00Z"}
    assert [b["check"] for b in figures["blockers"]] == ["queues", "retention"]
    assert set(figures["checks"]) == {str(name) for name in CheckName}


def test_the_bundle_has_latest_and_timestamped_json_and_markdown(tmp_path: Path) -> None:
    result = audit(RETENTION)
    paths = write_audit_bundle(result, tmp_path)

    folder = tmp_path / "retirement" / V1
    assert paths.json == folder / "latest.json" and paths.stamped == folder / "20261122T120000Z.json"
    assert all(path.exists() for path in paths.all)
    document = json.loads(paths.stamped.read_text())
    assert document["verdict"] == "fail" and document["failed_checks"] == ["retention"]
    page = paths.markdown.read_text()
    assert "**FAIL**" in page and "wait for retention" in page and "2026-11-25T12:00:00Z" in page

    newer = write_audit_bundle(audit(at=NOW + timedelta(hours=1)), tmp_path)
    assert json.loads(newer.json.read_text())["verdict"] == "pass"
    assert json.loads(paths.stamped.read_text())["verdict"] == "fail"  # the cited copy never changes


def test_the_recorded_evidence_is_what_the_lifecycle_guard_reads(registry: SqlRegistry, tmp_path: Path) -> None:
    contract = replace(migrating_contract(V1), status=Status.RETIRED)
    paths = write_audit_bundle(audit(RETENTION), tmp_path)
    record = record_audit(audit(RETENTION), registry, reference=paths.stamped)

    assert record.kind is EvidenceKind.RETIREMENT_AUDIT and record.verdict is Verdict.FAIL
    assert record.reference == str(paths.stamped) and record.collected_at == NOW
    reasons = check_step(Status.DEPRECATED, Status.RETIRED, GuardContext(contract, registry, NOW))
    assert any("retention failed" in reason for reason in reasons), reasons

    record_audit(audit(), registry)
    assert check_step(Status.DEPRECATED, Status.RETIRED, GuardContext(contract, registry, NOW)) == []
    stale = check_step(Status.DEPRECATED, Status.RETIRED, GuardContext(contract, registry, NOW + timedelta(days=3)))
    assert any("must be at most 2d old" in reason for reason in stale)


def deprecate(registry: SqlRegistry, message_type: str = V1) -> None:
    state = registry.register(message_type, "1.0.0", actor="setup")
    for status in [s for s in Status if Status.PROPOSED.rank < s.rank <= Status.DEPRECATED.rank]:
        state = registry.apply_transition(message_type, expected=state, to=status, actor="setup", reason="seed")


def test_not_declared_retired_keeps_it_deprecated_with_the_audit_blockers(registry: SqlRegistry) -> None:
    contract = migrating_contract(V1)  # declared deprecated
    deprecate(registry)
    record_audit(audit(RETENTION), registry)

    outcome = retire_if_proven(
        contract, catalog_of(contract, migrating_contract(V2)), registry, None, actor="t", run_id="r", now=NOW
    )

    assert not outcome.retired and outcome.effective == "deprecated"
    assert "set `status: retired`" in outcome.reasons[0] and "retention: wait for retention" in outcome.reasons
    assert outcome.clears_at == {"retention": "2026-11-25T12:00:00Z"}
    assert registry.refusals(V1) == []


def test_stale_evidence_is_refused_by_the_guard_and_recorded(registry: SqlRegistry) -> None:
    contract: Contract = replace(migrating_contract(V1), status=Status.RETIRED)
    deprecate(registry)
    record_audit(audit(at=NOW - timedelta(days=3)), registry)  # passed, but three days ago (freshness 2d)

    outcome = retire_if_proven(
        contract, catalog_of(contract, migrating_contract(V2)), registry, None, actor="t", run_id="r", now=NOW
    )

    assert not outcome.retired and registry.effective(V1).status is Status.DEPRECATED  # type: ignore[union-attr]
    assert any("old" in reason and "retirement_audit DAG" in reason for reason in outcome.reasons)
    [refusal] = registry.refusals(V1)
    assert refusal.to_status is Status.RETIRED and refusal.run_id == "r"


def test_a_hold_blocks_retirement_even_with_a_passing_audit(registry: SqlRegistry) -> None:
    hold = Hold("legal", date(2027, 1, 31), "litigation")
    contract = replace(migrating_contract(V1), status=Status.RETIRED, holds=(hold,))
    deprecate(registry)
    record_audit(audit(), registry)

    outcome = retire_if_proven(
        contract, catalog_of(contract, migrating_contract(V2)), registry, None, actor="t", run_id="r", now=NOW
    )
    assert not outcome.retired and any("legal hold in force until 2027-01-31" in r for r in outcome.reasons)


def test_only_deprecated_versions_are_retired(registry: SqlRegistry) -> None:
    contract = replace(migrating_contract(V1), status=Status.RETIRED)
    outcome = retire_if_proven(contract, catalog_of(contract), registry, None, actor="t", run_id="r", now=NOW)
    assert not outcome.retired and "unregistered" in outcome.reasons[0]

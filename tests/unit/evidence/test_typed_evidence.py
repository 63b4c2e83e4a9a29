"""Evidence as a typed contract: one writer, snake_case figures, and old rows still read."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract_platform.evidence import EvidenceKind, Verdict, figures_of, record
from contract_platform.evidence.figures import (
    KIND_FIGURES,
    ArchiveValidationFigures,
    CompatibilityFigures,
    EnvelopeQualityFigures,
    MigrationParityFigures,
    RetirementAuditFigures,
    TopologyFigures,
)
from contract_platform.store import SqlRegistry


@pytest.fixture()
def registry(tmp_path: Path) -> Iterator[SqlRegistry]:
    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as opened:
        yield opened


def test_every_evidence_kind_has_one_figures_class_of_its_own() -> None:
    assert set(KIND_FIGURES) == set(EvidenceKind)
    assert all(figures.KIND is kind for kind, figures in KIND_FIGURES.items())


def test_the_writer_stores_the_kind_of_the_figures_with_snake_case_keys(registry: SqlRegistry) -> None:
    parity = MigrationParityFigures(mode="bridge", target="orders.placed.v2", parity=0.5, v1_total=4, matched=2)
    written = record(registry, "orders.placed.v1", "1.2.0", parity, verdict=Verdict.FAIL, run_id="run-7")

    stored = registry.latest_evidence("orders.placed.v1", EvidenceKind.MIGRATION_PARITY)
    assert stored is not None and stored.id == written.id
    assert stored.kind is EvidenceKind.MIGRATION_PARITY and stored.verdict is Verdict.FAIL
    assert stored.contract_version == "1.2.0" and stored.run_id == "run-7"
    assert stored.figures["v1_total"] == 4 and "v1Total" not in stored.figures
    assert MigrationParityFigures.of(stored) == parity
    assert figures_of(stored) == parity


def test_figures_survive_the_store_unchanged_for_every_kind(registry: SqlRegistry) -> None:
    for number, kind in enumerate(KIND_FIGURES.values()):
        written = kind()  # defaults are valid figures of every kind
        record(registry, "payments.settled.v1", f"1.0.{number}", written, verdict=Verdict.PASS)
        stored = registry.latest_evidence("payments.settled.v1", kind.KIND)
        assert stored is not None and figures_of(stored) == written


def _older_row(registry: SqlRegistry, kind: str, verdict: str, figures: dict[str, Any]) -> None:
    """Evidence of orders.placed.v1 1.0.0 as an older release stored it (``figures`` as they were written)."""
    registry.add_evidence("orders.placed.v1", contract_version="1.0.0", kind=kind, verdict=verdict, figures=figures)


def test_rows_written_by_older_versions_in_camel_case_still_read(registry: SqlRegistry) -> None:
    """The registry on a user's machine holds audits and checks written before the key style was one."""
    _older_row(
        registry,
        "retirement_audit",
        "unknown",
        {
            "verdict": "unknown",
            "auditedAt": "2026-03-01T10:00:00Z",
            "failed_checks": ["queues"],
            "blockers": [{"check": "queues", "verdict": "unknown", "blocker": "3 ready", "clearsAt": None}],
            "clears_at": {"queues": None},
            "checks": {"queues": {"name": "queues", "clearsAt": "2026-03-02T00:00:00Z", "figures": {}}},
        },
    )
    _older_row(
        registry,
        "compatibility",
        "fail",
        {"messageType": "orders.placed.v1", "semverProblems": ["bump the major"], "ok": False},
    )
    _older_row(registry, "topology", "pass", {"broker": "rabbit", "messageType": "orders.placed.v1", "steps": []})

    audit = RetirementAuditFigures.of(_latest(registry, EvidenceKind.RETIREMENT_AUDIT))
    assert audit.audited_at == "2026-03-01T10:00:00Z"
    assert audit.blockers[0]["clears_at"] is None and "clearsAt" not in audit.blockers[0]
    assert audit.checks["queues"]["clears_at"] == "2026-03-02T00:00:00Z"
    compat = CompatibilityFigures.of(_latest(registry, EvidenceKind.COMPATIBILITY))
    assert compat.message_type == "orders.placed.v1" and compat.semver_problems == ("bump the major",)
    assert compat.ok is False
    assert TopologyFigures.of(_latest(registry, EvidenceKind.TOPOLOGY)).message_type == "orders.placed.v1"
    assert "auditedAt" not in audit.to_json() and audit.to_json()["audited_at"] == "2026-03-01T10:00:00Z"


def test_a_snake_case_key_wins_over_its_camel_case_twin() -> None:
    figures = RetirementAuditFigures.from_json({"auditedAt": "old", "audited_at": "new"})
    assert figures.audited_at == "new"


def test_counts_that_are_not_counts_read_as_unknown_not_as_zero() -> None:
    figures = ArchiveValidationFigures.from_json({"total": "12", "invalid": True, "invalid_rate": 0.25})
    assert figures.total is None and figures.invalid is None and figures.invalid_rate == 0.25


def test_reading_figures_as_another_kind_is_refused(registry: SqlRegistry) -> None:
    written = record(registry, "orders.placed.v1", "1.0.0", EnvelopeQualityFigures(), verdict=Verdict.PASS)
    with pytest.raises(ValueError, match="envelope_quality evidence, not migration_parity"):
        MigrationParityFigures.of(written)


def test_the_evidence_module_imports_no_sql() -> None:
    """Spark workers and the guards import evidence; SQLAlchemy is only for whoever opens the store."""
    code = (
        "import sys, contract_platform.evidence, contract_platform.lifecycle.guards; print('sqlalchemy' in sys.modules)"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "False"


def _latest(registry: SqlRegistry, kind: EvidenceKind):  # type: ignore[no-untyped-def]
    found = registry.latest_evidence("orders.placed.v1", kind)
    assert found is not None
    return found


def test_the_change_pipeline_writes_typed_evidence_the_guards_accept(catalog, registry: SqlRegistry) -> None:
    from contract_platform.change import check_compatibility, lint_contracts
    from contract_platform.evidence.figures import LintFigures
    from contract_platform.lifecycle.guards import GuardContext, guard_compatible, guard_lint_clean

    lint_contracts(catalog, registry, run_id="run-1")
    check_compatibility(catalog, registry, run_id="run-1")

    contract = next(iter(catalog))
    lint = registry.latest_evidence(contract.message_type, EvidenceKind.LINT)
    assert lint is not None and lint.run_id == "run-1"
    assert set(lint.figures) == {"errors", "warnings", "findings", "fixtures"}
    assert LintFigures.of(lint).errors == 0 and lint.passed
    compat = registry.latest_evidence(contract.message_type, EvidenceKind.COMPATIBILITY)
    assert compat is not None and all(key == key.lower() for key in compat.figures)
    ctx = GuardContext(contract, registry)
    assert guard_lint_clean(ctx) == []
    if contract.migration is None:
        assert guard_compatible(ctx.fresh()) == []


def test_every_reader_sees_older_rows_in_snake_case_with_nothing_dropped(registry: SqlRegistry) -> None:
    """The UI and ``contractctl status`` read the stored JSON: an old audit must show today's keys."""
    _older_row(
        registry,
        "retirement_audit",
        "pass",
        {"auditedAt": "2026-03-01T10:00:00Z", "blockers": [], "operatorNote": "kept"},
    )
    stored = _latest(registry, EvidenceKind.RETIREMENT_AUDIT)
    assert stored.figures == {"audited_at": "2026-03-01T10:00:00Z", "blockers": [], "operator_note": "kept"}

"""The contract change pipeline: what happens when contracts/ changes, one function per step.

The ``contract_change`` DAG calls these in order (and ``contractctl`` can too). Each step records
evidence in the registry store, so the lifecycle guards decide on facts, not on the DAG's memory:

    load -> lint (+ fixtures) -> compatibility -> provision topology -> reconcile -> docs
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contract_platform import evidence
from contract_platform.catalog import load_catalog
from contract_platform.catalog.fingerprint import fingerprint_catalog
from contract_platform.catalog.model import Catalog, Contract, Status
from contract_platform.checks import compatibility_of
from contract_platform.errors import ContractPlatformError
from contract_platform.evidence import Registry, Verdict
from contract_platform.evidence.figures import CompatibilityFigures, FixturesFigures, LintFigures, MigrationSpecFigures
from contract_platform.lint import Finding, RuleId, Severity, lint_catalog

__all__ = [
    "PROVISIONED_STATUSES",
    "ChangeSummary",
    "changed_contracts",
    "check_compatibility",
    "lint_contracts",
    "provision_topologies",
    "reconcile_catalog",
    "reconcile_or_request",
]

FIXTURE_RULES = {
    RuleId.FIXTURES_PRESENT,
    RuleId.FIXTURE_VALID_REJECTED,
    RuleId.FIXTURE_INVALID_ACCEPTED,
    RuleId.FIXTURE_METADATA,
}
# Topology exists from experimental on, and stays until retirement removes it (where asked).
PROVISIONED_STATUSES = {Status.EXPERIMENTAL, Status.ACTIVE, Status.SUPERSEDED, Status.DEPRECATED}


@dataclass
class ChangeSummary:
    """What one step did, per contract: small enough for an XCom and a log line."""

    step: str
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "ok": self.ok, "results": self.results, "problems": self.problems}


def _belongs_to(finding: Finding, contract: Contract) -> bool:
    return Path(finding.file).resolve().is_relative_to(contract.directory.resolve())


def lint_contracts(catalog: Catalog, registry: Registry, *, run_id: str | None = None) -> ChangeSummary:
    """Lint every contract and record ``lint`` and ``fixtures`` evidence for each."""
    summary = ChangeSummary("lint")
    findings = lint_catalog(catalog)
    for contract in catalog:
        own = [f for f in findings if _belongs_to(f, contract)]
        figures_class: type[LintFigures]
        for figures_class, selected in (
            (LintFigures, [f for f in own if f.rule not in FIXTURE_RULES]),
            (FixturesFigures, [f for f in own if f.rule in FIXTURE_RULES]),
        ):
            errors = [f for f in selected if f.severity is Severity.ERROR]
            evidence.record(
                registry,
                contract.message_type,
                contract.version,
                figures_class(
                    errors=len(errors),
                    warnings=len(selected) - len(errors),
                    findings=tuple(f.to_dict() for f in selected[:50]),
                    fixtures=sum(1 for _ in contract.fixtures),
                ),
                verdict=Verdict.FAIL if errors else Verdict.PASS,
                run_id=run_id,
            )
            summary.problems.extend(str(f) for f in errors)
        summary.results[contract.message_type] = {"findings": len(own)}
    return summary


def check_compatibility(catalog: Catalog, registry: Registry, *, run_id: str | None = None) -> ChangeSummary:
    """Each version against the earlier versions of its major the registry has seen; then snapshot it.

    A new major is not compared with the previous one (it is breaking by design): its
    ``migration.yaml`` is checked instead, as ``migration_spec`` evidence.
    """
    summary = ChangeSummary("compatibility")
    for contract in catalog:
        history = [(v, s) for v, s in registry.schema_history(contract.message_type) if v != contract.version]
        result = compatibility_of(contract, history, default_dialect=catalog.default_dialect)
        if result is None:
            figures = CompatibilityFigures(note="first version of this major the platform has seen")
            verdict = Verdict.PASS
        else:
            figures = result.evidence_figures()
            verdict = Verdict.PASS if result.ok else Verdict.FAIL
            if not result.ok:
                summary.problems.extend(
                    f"{contract.message_type}: {c['message']} ({c['path']})"
                    for c in result.changes
                    if not c["compatible"]
                )
                summary.problems.extend(f"{contract.message_type}: {p}" for p in result.semver_problems)
        evidence.record(registry, contract.message_type, contract.version, figures, verdict=verdict, run_id=run_id)
        if verdict is Verdict.PASS:
            registry.snapshot_schema(contract.message_type, contract.version, contract.payload_schema)
        if contract.migration is not None:
            _check_migration_spec(catalog, contract, registry, summary, run_id)
        summary.results[contract.message_type] = {"verdict": str(verdict), "against": list(figures.against)}
    return summary


def _check_migration_spec(
    catalog: Catalog, contract: Contract, registry: Registry, summary: ChangeSummary, run_id: str | None
) -> None:
    try:
        from contract_platform.migration import check_migration
    except ImportError:  # the migration engine is optional in this build
        return
    try:
        check = check_migration(catalog, contract)
        figures, ok = check.evidence_figures(), check.ok
        problems = [str(p) for p in check.problems]
    except ContractPlatformError as exc:
        figures, ok, problems = MigrationSpecFigures(ok=False, problems=(str(exc),)), False, [str(exc)]
    evidence.record(
        registry,
        contract.message_type,
        contract.version,
        figures,
        verdict=Verdict.PASS if ok else Verdict.FAIL,
        run_id=run_id,
    )
    summary.problems.extend(problems)


def provision_topologies(
    catalog: Catalog,
    connection: Any,
    registry: Registry,
    *,
    run_id: str | None = None,
    only: Iterable[str] | None = None,
) -> ChangeSummary:
    """Declare the topology of every version from experimental on; record ``topology`` evidence.

    A conflicting declaration on the broker is recorded (both versions) and reported, never
    deleted. ``BrokerUnavailable`` propagates: it is transient and the caller retries.
    """
    from contract_platform.amqp import plan_topology, provision
    from contract_platform.errors import TopologyConflict

    wanted = set(only) if only is not None else None
    summary = ChangeSummary("topology")
    for contract in catalog:
        if wanted is not None and contract.message_type not in wanted:
            continue
        if contract.status not in PROVISIONED_STATUSES:
            continue
        report = provision(connection, plan_topology(contract), strict=False)
        conflicts: list[TopologyConflict] = list(report.conflicts)
        evidence.record(
            registry,
            contract.message_type,
            contract.version,
            report.evidence_figures(),
            verdict=Verdict.FAIL if conflicts else Verdict.PASS,
            run_id=run_id,
        )
        summary.problems.extend(f"{contract.message_type}: {conflict}" for conflict in conflicts)
        summary.results[contract.message_type] = {"created": report.created, "present": len(report.present)}
    return summary


def reconcile_catalog(
    catalog: Catalog,
    registry: Registry,
    *,
    actor: str,
    run_id: str | None = None,
    only: Iterable[str] | None = None,
    now: datetime | None = None,
) -> ChangeSummary:
    """Move each contract's effective status toward its declared one, one guarded step at a time."""
    from contract_platform.lifecycle import GuardContext, apply_plan, reconcile

    wanted = set(only) if only is not None else None
    summary = ChangeSummary("reconcile")
    moment = now or datetime.now(UTC)
    for contract in catalog:
        if wanted is not None and contract.message_type not in wanted:
            continue
        before = registry.effective(contract.message_type)
        plan = reconcile(contract, before.status if before else None, GuardContext(contract, registry, moment))
        applied = apply_plan(plan, registry, actor=actor, run_id=run_id)
        after = registry.effective(contract.message_type)
        summary.results[contract.message_type] = {
            "declared": str(contract.status),
            "before": str(before.status) if before else None,
            "after": str(after.status) if after else None,
            "applied": [f"{t.from_status or '∅'} -> {t.to_status}" for t in applied],
            "refused": (
                {
                    "step": f"{plan.refused.step.from_status} -> {plan.refused.step.to_status}",
                    "reasons": list(plan.refused.reasons),
                }
                if plan.refused
                else None
            ),
        }
    return summary


def reconcile_or_request(
    catalog: Catalog,
    registry: Registry,
    *,
    actor: str,
    run_id: str | None = None,
    contract: str | None = None,
    target_status: str | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """A manual step for one contract when a target status is given, else reconciliation (of one or all).

    A refused manual step raises ``TransitionRefused`` (recorded in the store first): the person who
    asked for it must see it fail.
    """
    from contract_platform.errors import UsageError
    from contract_platform.lifecycle import request_transition

    if target_status and not contract:
        raise UsageError("a target status needs a contract (messageType)")
    chosen = catalog.get(contract) if contract else None
    if contract and chosen is None:
        raise UsageError(f"{contract!r} is not a messageType of the catalogue")
    if chosen is not None and target_status:
        try:
            status = Status(target_status)
        except ValueError as exc:
            raise UsageError(
                f"{target_status!r} is not a status; use one of {', '.join(s.value for s in Status)}"
            ) from exc
        record = request_transition(
            chosen, status, registry, actor=actor, reason=reason or "requested by hand", run_id=run_id
        )
        return {"step": "request", "ok": True, "requested": f"{contract}: {record.from_status} -> {record.to_status}"}
    return reconcile_catalog(
        catalog, registry, actor=actor, run_id=run_id, only=[contract] if contract else None
    ).to_dict()


def changed_contracts(catalog_root: Path, registry: Registry) -> list[dict[str, str]]:
    """Contract versions whose folder fingerprint differs from the one the registry last saw."""
    current = fingerprint_catalog(catalog_root)
    return [
        {"messageType": message_type, "fingerprint": fingerprint}
        for message_type, fingerprint in current.items()
        if registry.fingerprint(message_type) != fingerprint
    ]


def load(catalog_root: Path) -> Catalog:
    """The catalogue, or ``CatalogError`` listing every problem (the DAG fails without retry)."""
    return load_catalog(catalog_root)

"""The checks a contract change must pass, shared by ``contractctl check`` and the ``contract_change`` DAG.

lint (which includes fixtures) + compatibility of each version with its predecessors of the same
major (from git or from the registry's schema snapshots) + semantic versioning.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from contract_platform.catalog.model import Catalog, Contract
from contract_platform.catalog.schemas import DEFAULT_DIALECT
from contract_platform.evidence.figures import CompatibilityFigures
from contract_platform.lint import Finding, Severity, lint_catalog

__all__ = ["CheckReport", "CompatibilityResult", "check_catalog", "compatibility_of"]

History = Sequence[tuple[str, Any]]  # (label such as "1.2.0", payload schema), oldest first


@dataclass(frozen=True)
class CompatibilityResult:
    message_type: str
    mode: str
    policy: str
    against: list[str]
    compatible: bool
    changes: list[dict[str, Any]]
    semver_problems: list[str]

    @property
    def ok(self) -> bool:
        return self.compatible and not self.semver_problems

    def evidence_figures(self) -> CompatibilityFigures:
        """The ``compatibility`` evidence figures (snake_case; ``to_dict`` is the CLI's JSON)."""
        return CompatibilityFigures(
            message_type=self.message_type,
            mode=self.mode,
            policy=self.policy,
            against=tuple(self.against),
            compatible=self.compatible,
            ok=self.ok,
            changes=tuple(self.changes),
            semver_problems=tuple(self.semver_problems),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "messageType": self.message_type,
            "mode": self.mode,
            "policy": self.policy,
            "against": self.against,
            "compatible": self.compatible,
            "ok": self.ok,
            "changes": self.changes,
            "semverProblems": self.semver_problems,
        }


@dataclass
class CheckReport:
    contracts: int
    findings: list[Finding] = field(default_factory=list)
    compatibility: list[CompatibilityResult] = field(default_factory=list)

    def lint_ok(self, *, strict: bool = False) -> bool:
        """Info findings (consumer-reads-everything) never fail a run; warnings do with ``--strict``."""
        return not any(
            f.severity is Severity.ERROR or (strict and f.severity is Severity.WARNING) for f in self.findings
        )

    def ok(self, *, strict: bool = False) -> bool:
        return self.lint_ok(strict=strict) and all(result.ok for result in self.compatibility)

    def to_dict(self, *, strict: bool = False) -> dict[str, Any]:
        return {
            "ok": self.ok(strict=strict),
            "contracts": self.contracts,
            "findings": [f.to_dict() for f in self.findings],
            "compatibility": [c.to_dict() for c in self.compatibility],
        }


def compatibility_of(
    contract: Contract, history: History, *, default_dialect: str = DEFAULT_DIALECT
) -> CompatibilityResult | None:
    """The contract's schema against its earlier versions of the same major, under its own mode and policy.

    An earlier schema without ``$schema`` is read as the catalogue reads one (``default_dialect``: the
    catalogue's ``defaultDialect``), as the contract's own schema was when it loaded."""
    from contract_platform.compat import Mode, Policy, check_history, diff_schemas
    from contract_platform.compat import check_semver as semver

    if not history:
        return None
    verdict = check_history(
        list(history),
        contract.payload_schema,
        mode=Mode(contract.compatibility),
        policy=Policy(contract.compatibility_policy),
        default_dialect=default_dialect,
    )
    latest_label, latest_schema = history[-1]
    latest_version = latest_label.split(" ", 1)[0]
    changes = diff_schemas(latest_schema, contract.payload_schema, default_dialect=default_dialect)
    problems = semver(latest_version, contract.version, changes) if latest_version != "?" else []
    return CompatibilityResult(
        message_type=contract.message_type,
        mode=contract.compatibility,
        policy=contract.compatibility_policy,
        against=[label for label, _ in history],
        compatible=verdict.compatible,
        changes=[c for c in verdict.to_dict()["changes"]],
        semver_problems=list(problems),
    )


def check_catalog(
    catalog: Catalog, history_of: Callable[[Contract], History] | None = None, *, only: set[str] | None = None
) -> CheckReport:
    """lint + fixtures for every contract (or only the messageTypes in ``only``: catalog.selection), and
    compatibility where ``history_of`` knows earlier versions."""
    chosen = [c for c in catalog if only is None or c.message_type in only]
    report = CheckReport(contracts=len(chosen), findings=lint_catalog(catalog, only=only))
    if history_of is not None:
        for contract in chosen:
            result = compatibility_of(contract, history_of(contract), default_dialect=catalog.default_dialect)
            if result is not None:
                report.compatibility.append(result)
    return report

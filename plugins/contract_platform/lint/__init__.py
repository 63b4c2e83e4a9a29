"""The contract linter: every rule over a loaded catalogue, with stable rule ids and one severity table."""

from __future__ import annotations

from contract_platform.catalog.model import Catalog
from contract_platform.envelope.validation import EnvelopeValidator
from contract_platform.lint.model import SEVERITY, Finding, RuleId, Severity
from contract_platform.lint.rules import RULES

__all__ = ["SEVERITY", "Finding", "RuleId", "Severity", "lint_catalog"]


def lint_catalog(catalog: Catalog, *, only: set[str] | None = None) -> list[Finding]:
    """Every finding for every contract (or only the messageTypes in ``only``), sorted by file and pointer."""
    validator = EnvelopeValidator(catalog)
    findings: list[Finding] = []
    for contract in catalog:
        if only is not None and contract.message_type not in only:
            continue
        for rule in RULES:
            findings.extend(rule(contract, catalog, validator))
    return sorted(set(findings))

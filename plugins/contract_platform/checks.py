"""The checks a contract change must pass, shared by ``contractctl check`` and the ``contract_change`` DAG.

lint (which includes fixtures) + compatibility of each version with its predecessors of the same
major (from git or from the registry's schema snapshots) + semantic versioning. Each compatibility result
carries the per-consumer impact of the change (``impact``: which consumers it breaks, with their owners)
and, for ``compatibility.perspective: readers``, the readers perspective's decision
(docs/consumer-impact.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from contract_platform.catalog.model import Catalog, Contract
from contract_platform.catalog.schemas import DEFAULT_DIALECT
from contract_platform.evidence.figures import CompatibilityFigures
from contract_platform.lint import Finding, lint_catalog

if TYPE_CHECKING:
    from contract_platform.impact import ConsumerImpact, ConsumerReport, PerspectiveDecision, ReadersOf

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
    impact: ConsumerImpact | None = None  # per consumer; None when the version declares no consumers
    perspective: PerspectiveDecision | None = None  # set when the readers perspective was asked to decide
    # the changes against the latest earlier version (compat ``Change``s, under the contract's policy): diffed once
    latest_changes: tuple[Any, ...] = field(default=(), repr=False, compare=False)

    @property
    def accepted_by_readers(self) -> bool:
        """The writer verdict refused, and the readers perspective accepted (docs/consumer-impact.md)."""
        return not self.compatible and self.perspective is not None and self.perspective.accepted

    @property
    def ok(self) -> bool:
        return (self.compatible or self.accepted_by_readers) and not self.semver_problems

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
            impact=self.impact.to_dict() if self.impact is not None else None,
            perspective=self.perspective.to_dict() if self.perspective is not None else None,
            decided_by="readers" if self.accepted_by_readers else None,
        )

    def to_dict(self) -> dict[str, Any]:
        out = {
            "messageType": self.message_type,
            "mode": self.mode,
            "policy": self.policy,
            "against": self.against,
            "compatible": self.compatible,
            "ok": self.ok,
            "changes": self.changes,
            "semverProblems": self.semver_problems,
        }
        if self.impact is not None:
            out["impact"] = self.impact.to_dict()
        if self.perspective is not None:
            out["perspective"] = self.perspective.to_dict()
        return out

    def broken_consumers(self) -> list[str]:
        """One line per consumer this change breaks: service, owner, contact and the first breaking places."""
        if self.impact is None:
            return []
        return [
            f"{consumer.service} ({consumer.who}): {self.breaking_places(consumer)}" for consumer in self.impact.broken
        ]

    def breaking_places(self, consumer: ConsumerReport) -> str:
        """The first breaking changes that reach ``consumer`` and where they land, or what its reader schema refuses."""
        if self.impact is None:
            return ""
        places = [self.impact.changes[i] for i in consumer.breaking[:3]]
        why = ", ".join(f"{c.change.rule} at {', '.join(c.pointers) or c.change.path or '/'}" for c in places)
        if not why and consumer.refusals:
            why = "its reader schema refuses " + ", ".join(r.path or "/" for r in consumer.refusals[:3])
        return why


@dataclass
class CheckReport:
    contracts: int
    findings: list[Finding] = field(default_factory=list)
    compatibility: list[CompatibilityResult] = field(default_factory=list)

    def lint_ok(self, *, strict: bool = False) -> bool:
        """No finding fails the run (``Finding.fails``: info never, warnings with ``--strict``)."""
        return not any(f.fails(strict=strict) for f in self.findings)

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
    contract: Contract,
    history: History,
    *,
    default_dialect: str = DEFAULT_DIALECT,
    catalog: Catalog | None = None,
    readers: ReadersOf | None = None,
) -> CompatibilityResult | None:
    """The contract's schema against its earlier versions of the same major, under its own mode and policy,
    with the impact on each of its consumers (owners from ``catalog``).

    An earlier schema without ``$schema`` is read as the catalogue reads one (``default_dialect``: the
    catalogue's ``defaultDialect``), as the contract's own schema was when it loaded. With
    ``compatibility.perspective: readers`` and a refused writer verdict, ``readers`` (what was seen of the
    version's readers) lets the readers perspective decide; without it the perspective refuses, naming why."""
    from contract_platform.compat import Mode, Policy, history_diffs, judge_changes
    from contract_platform.compat import check_semver as semver
    from contract_platform.impact import impact_of_contract, readers_perspective

    if not history:
        return None
    mode = Mode(contract.compatibility)
    diffs = history_diffs(
        list(history),
        contract.payload_schema,
        mode=mode,
        policy=Policy(contract.compatibility_policy),
        default_dialect=default_dialect,
    )
    verdict = judge_changes(mode, diffs)
    latest_label, latest_schema = history[-1]
    latest_changes = diffs[-1][1]  # the latest version is always compared, and last
    latest_version = latest_label.split(" ", 1)[0]
    impact = None
    if contract.consumers:  # judged on the changes against the latest version, whose places the diff knows
        latest = [c for c in verdict.changes if c.against in (None, latest_label)]
        impact = impact_of_contract(
            contract, latest, old_schema=latest_schema, catalog=catalog, default_dialect=default_dialect
        )
    perspective = None
    if contract.compatibility_perspective == "readers" and not verdict.compatible:
        perspective = readers_perspective(
            impact if impact is not None else impact_of_contract(contract, verdict.changes, old_schema=latest_schema),
            readers(contract) if readers is not None else None,
        )
    accepted = perspective is not None and perspective.accepted
    problems = (
        semver(latest_version, contract.version, latest_changes, breaking_allowed=accepted)
        if latest_version != "?"
        else []
    )
    return CompatibilityResult(
        message_type=contract.message_type,
        mode=contract.compatibility,
        policy=contract.compatibility_policy,
        against=[label for label, _ in history],
        compatible=verdict.compatible,
        changes=[c for c in verdict.to_dict()["changes"]],
        semver_problems=list(problems),
        impact=impact,
        perspective=perspective,
        latest_changes=tuple(latest_changes),
    )


def check_catalog(
    catalog: Catalog,
    history_of: Callable[[Contract], History] | None = None,
    *,
    only: set[str] | None = None,
    readers: ReadersOf | None = None,
) -> CheckReport:
    """lint + fixtures for every contract (or only the messageTypes in ``only``: catalog.selection), and
    compatibility where ``history_of`` knows earlier versions (with the per-consumer impact; ``readers`` for
    the readers perspective)."""
    chosen = [c for c in catalog if only is None or c.message_type in only]
    report = CheckReport(contracts=len(chosen), findings=lint_catalog(catalog, only=only))
    if history_of is not None:
        for contract in chosen:
            result = compatibility_of(
                contract,
                history_of(contract),
                default_dialect=catalog.default_dialect,
                catalog=catalog,
                readers=readers,
            )
            if result is not None:
                report.compatibility.append(result)
    return report

"""The contract change pipeline: what happens when contracts/ changes, one function per step.

The ``contract_change`` DAG calls these in order (and ``contractctl`` can too). Each step records
evidence in the registry store, so the lifecycle guards decide on facts, not on the DAG's memory:

    load -> lint (+ fixtures) -> compatibility -> provision topology -> reconcile -> docs
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contract_platform import evidence
from contract_platform.amqp.types import BrokerConnection
from contract_platform.catalog.fingerprint import fingerprint_catalog
from contract_platform.catalog.model import Catalog, Contract, Status
from contract_platform.catalog.selection import Changes, select
from contract_platform.checks import compatibility_of
from contract_platform.errors import ContractPlatformError
from contract_platform.evidence import Registry, Verdict
from contract_platform.evidence.figures import CompatibilityFigures, FixturesFigures, LintFigures, MigrationSpecFigures
from contract_platform.evidence.registry import earlier_schemas
from contract_platform.lint import Finding, RuleId, Severity, lint_catalog

if TYPE_CHECKING:  # an annotation: the readers come from the caller (retirement.readers_seen.ReadersSource)
    from contract_platform.impact import ReadersOf

__all__ = [
    "MAX_EVENTS",
    "PROVISIONED_STATUSES",
    "ChangeSummary",
    "affected_contracts",
    "change_batches",
    "changed_contracts",
    "event_extra",
    "scope_of_events",
    "unseen_contracts",
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


def _findings_by_contract(findings: list[Finding], contracts: Iterable[Contract]) -> dict[str, list[Finding]]:
    """Each finding under the contract whose folder holds its file (one pass, whatever the estate's size)."""
    folders = {contract.directory.resolve(): contract.message_type for contract in contracts}
    owned: dict[str, list[Finding]] = {message_type: [] for message_type in folders.values()}
    for finding in findings:
        path = Path(finding.file).resolve()
        owner = next((folders[p] for p in (path, *path.parents) if p in folders), None)
        if owner is not None:
            owned[owner].append(finding)
    return owned


def lint_contracts(
    catalog: Catalog, registry: Registry, *, run_id: str | None = None, only: Iterable[str] | None = None
) -> ChangeSummary:
    """Lint every contract (or only the messageTypes in ``only``) and record ``lint`` and ``fixtures``
    evidence for each."""
    summary = ChangeSummary("lint")
    wanted = set(only) if only is not None else None
    chosen = [c for c in catalog if wanted is None or c.message_type in wanted]
    by_contract = _findings_by_contract(lint_catalog(catalog, only=wanted), chosen)
    for contract in chosen:
        own = by_contract[contract.message_type]
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


def check_compatibility(
    catalog: Catalog,
    registry: Registry,
    *,
    run_id: str | None = None,
    only: Iterable[str] | None = None,
    readers: ReadersOf | None = None,
) -> ChangeSummary:
    """Each version (or only those in ``only``) against the earlier versions of its major the registry has
    seen, with the consumers each change breaks (docs/consumer-impact.md); then snapshot it. ``readers``:
    what was seen of a version's readers, for contracts that ask for the readers perspective.

    A new major is not compared with the previous one (it is breaking by design): its
    ``migration.yaml`` is checked instead, as ``migration_spec`` evidence.
    """
    summary = ChangeSummary("compatibility")
    wanted = set(only) if only is not None else None
    for contract in catalog:
        if wanted is not None and contract.message_type not in wanted:
            continue
        history = earlier_schemas(registry, contract)
        result = compatibility_of(
            contract, history, default_dialect=catalog.default_dialect, catalog=catalog, readers=readers
        )
        broken: list[str] = []
        if result is None:
            figures = CompatibilityFigures(note="first version of this major the platform has seen")
            verdict = Verdict.PASS
        else:
            figures = result.evidence_figures()
            verdict = Verdict.PASS if result.ok else Verdict.FAIL
            broken = [c.service for c in result.impact.broken] if result.impact is not None else []
            if not result.ok:
                summary.problems.extend(
                    f"{contract.message_type}: {c['message']} ({c['path']})"
                    for c in result.changes
                    if not c["compatible"]
                )
                summary.problems.extend(f"{contract.message_type}: {p}" for p in result.semver_problems)
                summary.problems.extend(
                    f"{contract.message_type}: breaks consumer {line}" for line in result.broken_consumers()
                )
                if result.perspective is not None:
                    summary.problems.append(f"{contract.message_type}: {result.perspective.message}")
        evidence.record(registry, contract.message_type, contract.version, figures, verdict=verdict, run_id=run_id)
        if verdict is Verdict.PASS:
            registry.snapshot_schema(contract.message_type, contract.version, contract.payload_schema)
        if contract.migration is not None:
            _check_migration_spec(catalog, contract, registry, summary, run_id)
        summary.results[contract.message_type] = {
            "verdict": str(verdict),
            "against": list(figures.against),
            "brokenConsumers": broken,
        }
        if result is not None and result.accepted_by_readers:
            summary.results[contract.message_type]["decidedBy"] = "readers"
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
    connection: BrokerConnection,
    registry: Registry,
    *,
    run_id: str | None = None,
    only: Iterable[str] | None = None,
    connect: Callable[[], Any] | None = None,
    workers: int = 1,
) -> ChangeSummary:
    """Declare the topology of every version from experimental on; record ``topology`` evidence.

    A conflicting declaration on the broker is recorded (both versions) and reported, never
    deleted. ``BrokerUnavailable`` propagates: it is transient and the caller retries.

    With ``connect`` (opens another connection to the same broker) and ``workers`` > 1, up to ``workers``
    versions are declared at once, each worker on a connection of its own: a broker creates durable
    queues one disk write at a time per connection, and an estate has ten queues per version. Evidence
    is recorded here, in catalogue order, as each version's declarations come back.
    """
    from contract_platform.amqp import plan_topology, provision
    from contract_platform.amqp.management import management_client
    from contract_platform.errors import TopologyConflict

    wanted = set(only) if only is not None else None
    chosen = [
        contract
        for contract in catalog
        if (wanted is None or contract.message_type in wanted) and contract.status in PROVISIONED_STATUSES
    ]
    summary = ChangeSummary("topology")
    # One management client for the whole run (CONTRACT_RABBITMQ_MANAGEMENT_URL moves it): an API that does
    # not answer is given up on once, not once per contract.
    management = management_client(connection)

    def declare(contract: Contract, on: Any) -> Any:
        return provision(on, plan_topology(contract), management=management, strict=False)

    for contract, report in _out_of_resources_said(
        _each_declared(chosen, connection, declare, connect, workers), management
    ):
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


def _out_of_resources_said(declared: Iterator[tuple[Contract, Any]], management: Any) -> Iterator[tuple[Contract, Any]]:
    """``declared``, but a broker lost halfway through says why when its management API knows: a node out of
    file handles stops opening queues and AMQP handshakes time out, which retrying alone does not fix."""
    from contract_platform.errors import BrokerOutOfResources, BrokerUnavailable

    try:
        yield from declared
    except BrokerOutOfResources:
        raise
    except BrokerUnavailable as exc:
        from contract_platform.amqp.management import resource_problem

        problem = resource_problem(management) if management is not None else None
        if problem is None:
            raise
        raise BrokerOutOfResources(f"{exc}: {problem}") from exc


def _each_declared(
    contracts: list[Contract],
    connection: BrokerConnection,
    declare: Callable[[Contract, Any], Any],
    connect: Callable[[], Any] | None,
    workers: int,
) -> Iterator[tuple[Contract, Any]]:
    """(contract, report) in order: on ``connection`` alone, or on ``workers`` connections of their own."""
    if connect is None or workers <= 1 or len(contracts) <= 1:
        for contract in contracts:
            yield contract, declare(contract, connection)
        return
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from contract_platform.amqp.connection import close_quietly

    local = threading.local()
    opened: list[Any] = []
    lock = threading.Lock()

    def on_own_connection(contract: Contract) -> Any:
        own = getattr(local, "connection", None)
        if own is None or not own.is_open:
            own = local.connection = connect()
            with lock:
                opened.append(own)
        return declare(contract, own)

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="provision")
    try:
        futures = [pool.submit(on_own_connection, contract) for contract in contracts]
        for contract, future in zip(contracts, futures, strict=True):
            yield contract, future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        for own in opened:
            close_quietly(own)


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
    only: Iterable[str] | None = None,
) -> dict[str, Any]:
    """A manual step for one contract when a target status is given, else reconciliation (of one, of the
    messageTypes in ``only``, or of all).

    A refused manual step raises ``TransitionRefused`` (recorded in the store first): the person who
    asked for it must see it fail.
    """
    from contract_platform.errors import UsageError
    from contract_platform.lifecycle import request_transition

    if target_status and not contract:
        raise UsageError("a target status needs a contract (messageType)")
    chosen = catalog.require(contract) if contract else None
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
        catalog, registry, actor=actor, run_id=run_id, only=[contract] if contract else only
    ).to_dict()


def changed_contracts(catalog_root: Path, registry: Registry) -> list[dict[str, str]]:
    """Contract versions whose folder fingerprint differs from the one the registry last saw."""
    current = fingerprint_catalog(catalog_root)
    return [
        {"messageType": message_type, "fingerprint": fingerprint}
        for message_type, fingerprint in current.items()
        if registry.fingerprint(message_type) != fingerprint
    ]


# The watch emits at most MAX_EVENTS asset events per run, each naming up to BATCH versions (more when the
# change is larger), so its task instances stay bounded. One event per run where it can: the scheduler
# starts a run from the first event it sees, and a second event of the same asset that lands in that
# moment waits for the next one. BATCH messageTypes are about 90 kB of JSON in the metadata DB.
MAX_EVENTS = 8
BATCH = 2500


def change_batches(
    changes: list[dict[str, str]], *, max_events: int = MAX_EVENTS, batch: int = BATCH
) -> list[dict[str, Any]]:
    """The changed versions split into at most ``max_events`` batches of about equal size.

    Each batch is ``{"messageTypes": [...], "fingerprints": {messageType: fingerprint}}``: the event
    names the versions, the fingerprints are recorded once every event is emitted.
    """
    if not changes:
        return []
    count = min(max_events, -(-len(changes) // batch))
    size = -(-len(changes) // count)
    ordered = sorted(changes, key=lambda change: change["messageType"])
    return [
        {
            "messageTypes": [c["messageType"] for c in part],
            "fingerprints": {c["messageType"]: c["fingerprint"] for c in part},
        }
        for part in (ordered[i : i + size] for i in range(0, len(ordered), size))
    ]


def event_extra(batch: dict[str, Any]) -> dict[str, Any]:
    """The ``contract_catalog`` asset event's extra for one batch (docs/design.md#dags).

    ``messageTypes`` and ``count`` always; a batch of one version also keeps the single-change keys
    ``messageType`` and ``fingerprint``.
    """
    types: list[str] = list(batch["messageTypes"])
    extra: dict[str, Any] = {"messageTypes": types, "count": len(types)}
    if len(types) == 1:
        extra |= {"messageType": types[0], "fingerprint": batch["fingerprints"][types[0]]}
    return extra


def scope_of_events(extras: Iterable[Any]) -> set[str] | None:
    """The messageTypes a run's triggering events name, or None (the whole catalogue) when there is no
    event or one does not say which versions changed."""
    named: set[str] = set()
    seen = False
    for extra in extras:
        seen = True
        if not isinstance(extra, dict):
            return None
        types = extra.get("messageTypes")
        if isinstance(types, list) and all(isinstance(t, str) for t in types):
            named.update(types)
        elif isinstance(extra.get("messageType"), str):
            named.add(extra["messageType"])
        else:
            return None
    return named if seen else None


def unseen_contracts(catalog: Catalog, registry: Registry) -> set[str]:
    """Versions of the catalogue the registry has no effective status for: always in a run's scope, so that
    a version is never left unchecked because the event that named it was consumed late."""
    return {c.message_type for c in catalog if registry.effective(c.message_type) is None}


def affected_contracts(catalog: Catalog, changed: Iterable[str]) -> set[str]:
    """The versions a change reaches: the changed ones in the catalogue, the other majors of their family
    (migrations and supersession are checked across majors) and any version whose ``supersededBy`` names one.
    The pull-request check's rule (``catalog.selection``), so the DAG and ``check --against`` reach the same."""
    return set(select(catalog, Changes(ref="", versions=frozenset(changed))).selected)

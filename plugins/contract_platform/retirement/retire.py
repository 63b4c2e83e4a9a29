"""``retire_if_proven``: retire a deprecated version once it is declared retired and the audit proves it.

The lifecycle decides, not this module: the step deprecated -> retired is planned by
``lifecycle.reconcile`` and applied by ``lifecycle.apply_plan``, so its guards (a passing retirement
audit no older than ``retirement.evidenceFreshness``, no hold in force) are the single rule, and a
refused step is recorded in the store with its reasons. On retirement this keeps a bundle::

    <data>/retirement-bundles/<messageType>/
        manifest.json        what, when, who, the transition and the list of files
        contract.yaml  payload.schema.json  fixtures/      the final contract, as it was
        topology.json        the planned topology and the live state of every queue
        evidence.json        the retirement audit evidence the transition rested on (+ audit.json, its report)
        sample.jsonl         up to 20 last archived messages of the type, PII masked
        retention.json       the archive partitions archive retention deleted (its archive_retention evidence):
                             what neither the archive nor sample.jsonl holds any more (only when any was deleted)
        removal.json         what was removed from the broker (only with topology.removeOnRetire)

The bundle is staged first and moved into place only once the transition is applied; topology is
removed last (``remove_topology``: only empty queues; exchanges other contracts use stay).
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from contract_platform import settings
from contract_platform.amqp.http import ManagementClient
from contract_platform.amqp.inspection import inspect_queue, resolve_management
from contract_platform.amqp.topology import Outcome, TopologyPlan, plan_topology, remove_topology
from contract_platform.amqp.types import BrokerConnection
from contract_platform.catalog.model import Catalog, Contract, Status
from contract_platform.evidence import EvidenceKind, Registry
from contract_platform.evidence.figures import ArchiveRetentionFigures, RetirementAuditFigures
from contract_platform.evidence.records import EvidenceRecord, TransitionRecord
from contract_platform.lifecycle import GuardContext, apply_plan, reconcile
from contract_platform.retirement.archive import last_archived
from contract_platform.retirement.model import iso, require_aware

__all__ = ["SAMPLE_SIZE", "RetirementOutcome", "exchanges_in_use", "retire_if_proven"]

SAMPLE_SIZE = 20
_DELETIONS_READ = 100_000  # archive_retention evidence: one a day at most per exchange, pruned after 180 days


@dataclass(frozen=True)
class RetirementOutcome:
    """What ``retire_if_proven`` did: retired (with its bundle), or why not and when it might clear."""

    message_type: str
    retired: bool
    effective: str | None
    reasons: tuple[str, ...] = ()
    clears_at: Mapping[str, str | None] = field(default_factory=dict)
    bundle: str | None = None
    removal: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "messageType": self.message_type,
            "retired": self.retired,
            "effective": self.effective,
            "reasons": list(self.reasons),
            "clearsAt": dict(self.clears_at),
            "bundle": self.bundle,
            "removal": dict(self.removal) if self.removal is not None else None,
        }


def exchanges_in_use(catalog: Catalog, registry: Registry, retiring: Contract) -> set[str]:
    """Exchanges of every other catalogue contract that is not retired (declared and effective)."""
    used = set()
    for contract in catalog:
        if contract.message_type == retiring.message_type:
            continue
        state = registry.effective(contract.message_type)
        if contract.status is Status.RETIRED and state is not None and state.status is Status.RETIRED:
            continue
        used.add(contract.transport.exchange)
    return used


def retire_if_proven(
    contract: Contract,
    catalog: Catalog,
    registry: Registry,
    connection: BrokerConnection,
    *,
    actor: str,
    run_id: str | None,
    now: datetime,
    archive_root: str | Path | None = None,
    bundle_root: str | Path | None = None,
    management: ManagementClient | None | Literal["auto"] = "auto",
) -> RetirementOutcome:
    """Retire ``contract`` when it is deprecated, declared retired and the lifecycle guards pass."""
    now = require_aware(now)
    message_type = contract.message_type
    state = registry.effective(message_type)
    latest = registry.latest_evidence(message_type, EvidenceKind.RETIREMENT_AUDIT)
    audit = RetirementAuditFigures.of(latest) if latest is not None else RetirementAuditFigures()
    clears = dict(audit.clears_at)
    audit_blockers = tuple(f"{b.get('check')}: {b.get('blocker')}" for b in audit.blockers)
    effective = str(state.status) if state is not None else None
    deleted = tuple(registry.evidence(message_type, EvidenceKind.ARCHIVE_RETENTION, limit=_DELETIONS_READ))
    sources = _BundleSources(connection, plan_topology(contract), latest, archive_root, management, now, deleted)
    if state is not None and state.status is Status.RETIRED and contract.status is Status.RETIRED:
        return _complete(contract, catalog, registry, _bundle_root(bundle_root), sources)
    if state is None or state.status is not Status.DEPRECATED:
        reason = f"effective status is {effective or 'unregistered'}, not deprecated: only deprecated versions retire"
        return RetirementOutcome(message_type, False, effective, (reason,), clears)
    if contract.status is not Status.RETIRED:
        reason = (
            f"declared status is {contract.status}: set `status: retired` in {contract.contract_file} "
            "to retire it once every check passes"
        )
        return RetirementOutcome(message_type, False, effective, (reason, *audit_blockers), clears)
    plan = reconcile(contract, state.status, GuardContext(contract, registry, now))
    if plan.refused is not None or not plan.steps:
        apply_plan(plan, registry, actor=actor, run_id=run_id)  # records the refusal (once per reason set)
        reasons = tuple(plan.refused.reasons) if plan.refused else ("nothing to apply",)
        return RetirementOutcome(message_type, False, effective, reasons, clears)

    def retire() -> TransitionRecord:
        return apply_plan(plan, registry, actor=actor, run_id=run_id)[-1]

    folder = _keep_bundle(_bundle_root(bundle_root), contract, retire, sources)
    return _finish(contract, catalog, registry, folder, sources)


@dataclass(frozen=True)
class _BundleSources:
    """What the bundle records besides the contract files: the broker now, the evidence, the archive."""

    connection: BrokerConnection
    topology: TopologyPlan
    evidence: Any
    archive_root: str | Path | None
    management: ManagementClient | None | Literal["auto"]
    now: datetime
    deleted: tuple[EvidenceRecord, ...] = ()  # the type's archive_retention evidence, newest first


def _complete(
    contract: Contract, catalog: Catalog, registry: Registry, root: Path, sources: _BundleSources
) -> RetirementOutcome:
    """Retired by an earlier try that failed before finishing (a retried task): keep the bundle, remove topology."""
    folder = root / contract.message_type
    if not (folder / "manifest.json").exists():
        retired = next(
            t for t in reversed(registry.transitions(contract.message_type)) if t.to_status is Status.RETIRED
        )
        folder = _keep_bundle(root, contract, lambda: retired, sources)
    return _finish(contract, catalog, registry, folder, sources)


def _bundle_root(bundle_root: str | Path | None) -> Path:
    return Path(bundle_root) if bundle_root is not None else settings.data_dir() / "retirement-bundles"


def _keep_bundle(
    root: Path, contract: Contract, retire: Callable[[], TransitionRecord], sources: _BundleSources
) -> Path:
    """Stage the bundle, retire (``retire``), then move the bundle into place; nothing is left if retiring fails."""
    staging = root / f".{contract.message_type}.staging-{uuid.uuid4().hex[:8]}"
    final = root / contract.message_type
    try:
        files = _stage_bundle(staging, contract, sources)
        retired = retire()
        _write_json(
            staging / "manifest.json",
            {
                "messageType": contract.message_type,
                "contractVersion": contract.version,
                "retiredAt": iso(retired.at),
                "actor": retired.actor,
                "runId": retired.run_id,
                "transition": {"id": retired.id, "revision": retired.revision, "reason": retired.reason},
                "evidenceId": retired.evidence_id,
                "files": sorted(files),
            },
        )
        if final.exists():
            shutil.rmtree(final)
        staging.rename(final)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return final


def _finish(
    contract: Contract, catalog: Catalog, registry: Registry, folder: Path, sources: _BundleSources
) -> RetirementOutcome:
    """Remove the topology where the contract asks for it (idempotent: absent queues are fine)."""
    removal: dict[str, Any] | None = None
    kept: tuple[str, ...] = ()
    if contract.topology.remove_on_retire:
        report = remove_topology(
            sources.connection,
            sources.topology,
            exchanges_in_use=exchanges_in_use(catalog, registry, contract),
            only_if_empty=True,
            management=sources.management,
        )
        removal = report.as_dict() | {"deleted": report.deleted, "kept": report.kept}
        first = folder / "removal.json"  # a retried removal must not overwrite what the first one deleted
        _write_json(first if not first.exists() else folder / f"removal-{sources.now:%Y%m%dT%H%M%SZ}.json", removal)
        kept = tuple(
            f"{step.name} was kept ({step.detail}): empty it and delete it by hand"
            for step in report.steps
            if step.kind == "queue" and step.outcome is Outcome.KEPT
        )
    return RetirementOutcome(contract.message_type, True, str(Status.RETIRED), kept, {}, str(folder), removal)


def _stage_bundle(folder: Path, contract: Contract, sources: _BundleSources) -> list[str]:
    folder.mkdir(parents=True)
    files = ["manifest.json", "topology.json", "evidence.json", "sample.jsonl"]
    for source in (contract.contract_file, contract.schema_file, contract.migration_file):
        if source.exists():
            shutil.copy2(source, folder / source.name)
            files.append(source.name)
    if not contract.schema_file.exists():
        _write_json(folder / "payload.schema.json", dict(contract.payload_schema))
        files.append("payload.schema.json")
    fixtures = contract.directory / "fixtures"
    if fixtures.is_dir():
        shutil.copytree(fixtures, folder / "fixtures")
        files += [f"fixtures/{p.relative_to(fixtures).as_posix()}" for p in fixtures.rglob("*") if p.is_file()]
    client = resolve_management(sources.connection, sources.management)
    live = [
        asdict(inspect_queue(sources.connection, queue.name, management=client)) for queue in sources.topology.queues
    ]
    _write_json(
        folder / "topology.json", {"takenAt": iso(sources.now), "plan": _plan_dict(sources.topology), "live": live}
    )
    evidence = sources.evidence
    _write_json(folder / "evidence.json", _evidence_dict(evidence))
    reference = Path(evidence.reference) if evidence is not None and evidence.reference else None
    if reference is not None and reference.is_file():
        shutil.copy2(reference, folder / "audit.json")
        files.append("audit.json")
    sample = last_archived(sources.archive_root or settings.archive_dir(), contract, limit=SAMPLE_SIZE)
    with (folder / "sample.jsonl").open("w", encoding="utf-8") as out:
        for record in sample:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    if sources.deleted:
        _write_json(folder / "retention.json", _retention_dict(contract, sources.deleted))
        files.append("retention.json")
    return files


def _retention_dict(contract: Contract, deleted: tuple[EvidenceRecord, ...]) -> dict[str, Any]:
    """The archive partitions of the version's exchange that archive retention deleted, from its evidence, oldest
    first: each day with its files, records and bytes (of every version the exchange carries), and the record."""
    runs: list[dict[str, Any]] = []
    for record in sorted(deleted, key=lambda r: (r.collected_at, r.id)):
        figures = ArchiveRetentionFigures.of(record)
        runs.append(
            {
                "evidenceId": record.id,
                "collectedAt": iso(record.collected_at),
                "runId": record.run_id,
                "exchange": figures.exchange,
                "window": figures.window,
                "before": figures.before,
                "partitions": [dict(partition) for partition in figures.partitions],
                "records": figures.records,
            }
        )
    days = sorted({str(p.get("day")) for run in runs for p in run["partitions"]})
    return {
        "note": (
            f"archive retention deleted {len(days)} partition(s) of {contract.transport.exchange} past its "
            "retention.archive (each run below, with its archive_retention evidence): the archive and sample.jsonl "
            "no longer hold their messages"
        ),
        "exchange": contract.transport.exchange,
        "days": days,
        "records": sum(int(run["records"]) for run in runs),
        "runs": runs,
    }


def _plan_dict(plan: TopologyPlan) -> dict[str, Any]:
    return {
        "messageType": plan.message_type,
        "exchange": plan.exchange,
        "exchanges": [{"name": e.name, "type": e.type, "durable": e.durable} for e in plan.exchanges],
        "queues": [
            {"name": q.name, "role": str(q.role), "arguments": dict(q.arguments), "serves": q.serves}
            for q in plan.queues
        ],
        "bindings": [{"exchange": b.exchange, "queue": b.queue, "routingKey": b.routing_key} for b in plan.bindings],
    }


def _evidence_dict(evidence: EvidenceRecord | None) -> dict[str, Any] | None:
    if evidence is None:
        return None
    return {
        "id": evidence.id,
        "kind": str(evidence.kind),
        "verdict": str(evidence.verdict),
        "collectedAt": iso(evidence.collected_at),
        "contractVersion": evidence.contract_version,
        "runId": evidence.run_id,
        "reference": evidence.reference,
        "figures": dict(evidence.figures),
    }


def _write_json(path: Path, document: Any) -> None:
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")

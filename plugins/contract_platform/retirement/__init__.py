"""The retirement audit (docs/design.md#retirement-audit): evidence that nothing still needs a deprecated version.

::

    audit_versions(contracts, catalog, registry, connection, last_seen, *, run_id) -> AuditRun
        the same for many versions over one TopologySnapshot (the topology read once per run, each DLQ read once)
    audit_version(contract, catalog, registry, connection, last_seen, *, now, run_id) -> AuditResult
        queues               consumers, ready and unacked messages on its own queues and every queue its
                             exchange routes to on the broker, whoever declared it (docs/retirement-audit.md)
        readers              nobody read any queue of the version over the whole observation span: reader
                             sessions from the broker activity recorder, its coverage (a gap is unknown),
                             and each queue's delivery counters between audits
        dead_letters         no message of the type in any DLQ found by dead-letter topology, policy or name
                             (read, then requeued in order)
        retention            max(queue, dlq) retention elapsed since its last archived message
        holds                no audit, legal or replay hold in force
        successor_consumers  every consumer of this version consumes the successor
    write_audit_bundle(result, docs_dir) -> AuditPaths     latest.json / latest.md / timestamped copies
    record_audit(result, registry, reference=...)          ``retirement_audit`` evidence (the guard reads it)
    keep_audit(result, registry, docs_dir)                 both, in that order (the DAG and audit --record)
    retire_if_proven(contract, catalog, registry, connection, *, actor, run_id, now) -> RetirementOutcome

Each check returns a ``CheckResult``: verdict pass / fail / unknown (never a pass), its figures, a
blocker a person can act on, and when it might clear by itself. The audit passes only when every
check passes; retiring is still the lifecycle's decision (its guards read the recorded evidence).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contract_platform.lazy import lazy_names

if TYPE_CHECKING:
    from contract_platform.retirement.archive import last_archived, mask_pii
    from contract_platform.retirement.audit import AuditRun, audit_version, audit_versions, versions_to_audit
    from contract_platform.retirement.dead_letters import (
        DeadLetterScan,
        QueueScan,
        check_dead_letters,
        message_type_of,
        requeue_risk,
        scan_dead_letters,
    )
    from contract_platform.retirement.model import AuditResult, CheckName, CheckResult
    from contract_platform.retirement.policy import check_holds, check_successor_consumers
    from contract_platform.retirement.queues import QueueLook, check_queues, observe_queues, record_observations
    from contract_platform.retirement.readers import ReaderEvidence, VersionQueue, check_readers
    from contract_platform.retirement.report import (
        AuditPaths,
        KeptAudit,
        keep_audit,
        record_audit,
        render_audit_page,
        write_audit_bundle,
    )
    from contract_platform.retirement.retention import LastSeen, TypeLastSeen, check_retention
    from contract_platform.retirement.retire import RetirementOutcome, exchanges_in_use, retire_if_proven
    from contract_platform.retirement.snapshot import TopologySnapshot

# The names below are loaded on first use (PEP 562), as in contract_platform.amqp: importing one module of
# this package, say ``retirement.readers_seen`` for ``contractctl migration status``, loads only what it needs,
# not the whole audit (the management API's HTTP client, the dead-letter scan, the report).
_MODULES = {
    "archive": ("last_archived", "mask_pii"),
    "audit": ("AuditRun", "audit_version", "audit_versions", "versions_to_audit"),
    "dead_letters": (
        "DeadLetterScan",
        "QueueScan",
        "check_dead_letters",
        "message_type_of",
        "requeue_risk",
        "scan_dead_letters",
    ),
    "model": ("AuditResult", "CheckName", "CheckResult"),
    "policy": ("check_holds", "check_successor_consumers"),
    "queues": ("QueueLook", "check_queues", "observe_queues", "record_observations"),
    "readers": ("ReaderEvidence", "VersionQueue", "check_readers"),
    "report": ("AuditPaths", "KeptAudit", "keep_audit", "record_audit", "render_audit_page", "write_audit_bundle"),
    "retention": ("LastSeen", "TypeLastSeen", "check_retention"),
    "retire": ("RetirementOutcome", "exchanges_in_use", "retire_if_proven"),
    "snapshot": ("TopologySnapshot",),
}

__all__ = [
    "AuditPaths",
    "KeptAudit",
    "AuditResult",
    "AuditRun",
    "CheckName",
    "CheckResult",
    "DeadLetterScan",
    "LastSeen",
    "QueueLook",
    "QueueScan",
    "ReaderEvidence",
    "RetirementOutcome",
    "TopologySnapshot",
    "TypeLastSeen",
    "VersionQueue",
    "audit_version",
    "audit_versions",
    "check_dead_letters",
    "check_holds",
    "check_queues",
    "check_readers",
    "check_retention",
    "check_successor_consumers",
    "exchanges_in_use",
    "last_archived",
    "mask_pii",
    "message_type_of",
    "observe_queues",
    "keep_audit",
    "record_audit",
    "record_observations",
    "render_audit_page",
    "requeue_risk",
    "retire_if_proven",
    "scan_dead_letters",
    "versions_to_audit",
    "write_audit_bundle",
]


__getattr__, __dir__ = lazy_names(__name__, globals(), _MODULES)

"""Declared vs effective status, as ``contractctl status`` and the UI show it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contract_platform.catalog.model import Catalog
from contract_platform.evidence import EvidenceKind, Registry
from contract_platform.evidence.figures import ReplayFigures
from contract_platform.evidence.records import EvidenceRecord

__all__ = ["contract_status", "evidence_summary", "overview", "replay_by_version", "status_entry"]

_RECENT_REPLAYS = 50  # replay evidence looked at for the latest of each version


def _iso(value: Any) -> str | None:
    return value.isoformat(timespec="seconds") if value is not None else None


def _summary(figures: Mapping[str, Any]) -> str:
    keys = (
        "invalid_rate",
        "total",
        "invalid",
        "failed_expectations",
        "parity",
        "blockers",
        "findings",
        "decision",
        "replayed",
        "rejected",
    )
    return ", ".join(f"{k}={figures[k]}" for k in keys if k in figures)


def overview(catalog: Catalog, registry: Registry) -> list[dict[str, Any]]:
    rows = []
    for contract in catalog:
        state = registry.effective(contract.message_type)
        history = registry.transitions(contract.message_type) if state else []
        refusals = registry.refusals(contract.message_type, limit=1) if state else []
        effective = str(state.status) if state else None
        rows.append(
            {
                "messageType": contract.message_type,
                "declared": str(contract.status),
                "effective": effective,
                "inSync": effective == str(contract.status),
                "lastTransitionAt": _iso(history[-1].at) if history else None,
                "lastRefusal": "; ".join(refusals[0].reasons) if refusals else None,
            }
        )
    return rows


def status_entry(record: EvidenceRecord, *, summary: bool = True) -> dict[str, Any]:
    """One kind's latest evidence as ``status`` shows it (``summary=False``: its one-line figures left empty)."""
    return {
        "verdict": str(record.verdict),
        "collectedAt": _iso(record.collected_at),
        "figures": record.figures,
        "reference": record.reference,
        "summary": _summary(record.figures) if summary else "",
    }


def evidence_summary(figures: Mapping[str, Any]) -> str:
    """The one-line figures ``status`` shows for a piece of evidence."""
    return _summary(figures)


def contract_status(catalog: Catalog, registry: Registry, message_type: str) -> dict[str, Any]:
    contract = catalog.require(message_type, "see contractctl status for the list")
    state = registry.effective(message_type)
    evidence = {}
    for kind in EvidenceKind:
        record = registry.latest_evidence(message_type, str(kind))
        if record is not None:
            evidence[str(kind)] = status_entry(record)
    return {
        "messageType": message_type,
        "declared": str(contract.status),
        "effective": str(state.status) if state else None,
        "version": contract.version,
        "history": [
            {
                "at": _iso(t.at),
                "from": str(t.from_status) if t.from_status else None,
                "to": str(t.to_status),
                "actor": t.actor,
                "runId": t.run_id,
                "reason": t.reason,
            }
            for t in registry.transitions(message_type)
        ],
        "refusals": [
            {"at": _iso(r.at), "from": str(r.from_status), "to": str(r.to_status), "reasons": list(r.reasons)}
            for r in registry.refusals(message_type, limit=5)
        ],
        "evidence": evidence,
        "replay": replay_by_version(registry, message_type),
    }


def replay_by_version(registry: Registry, message_type: str) -> list[dict[str, Any]]:
    """The latest replay evidence of each version of ``message_type`` (newest first), as status shows it.

    Figures are those of docs/replay.md; any that a record lacks show as None (or empty), never invented.
    """
    latest: dict[str, dict[str, Any]] = {}
    for record in registry.evidence(message_type, EvidenceKind.REPLAY, limit=_RECENT_REPLAYS):
        if record.contract_version not in latest:
            latest[record.contract_version] = _replay(record)
    return list(latest.values())


def _number(value: Any) -> int | float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _replay(record: EvidenceRecord) -> dict[str, Any]:
    figures = ReplayFigures.of(record)
    in_flight = figures.in_flight
    queues = in_flight.get("queues")
    return {
        "version": record.contract_version,
        "decision": figures.decision or "unknown",
        "verdict": str(record.verdict),
        "collectedAt": _iso(record.collected_at),
        "runId": record.run_id,
        "staticVerdict": figures.static_verdict,
        "tightening": figures.tightening,
        "narrowingOnly": figures.narrowing_only,
        "sourceType": figures.source_type,
        "migrated": figures.migrated,
        "since": figures.since,
        "until": figures.until,
        "windowDays": figures.window_days,
        "minMessages": figures.min_messages,
        "threshold": figures.threshold,
        "replayed": figures.replayed,
        "rejected": figures.rejected,
        "rejectionRate": figures.rejection_rate,
        "alreadyInvalid": figures.already_invalid,
        "topPointers": [dict(p) for p in figures.top_pointers],
        "sampleMessageIds": list(figures.sample_message_ids),
        "inFlight": {  # inspected None: in-flight messages were not checked (the note says why)
            "inspected": _number(in_flight.get("inspected")),
            "rejected": _number(in_flight.get("rejected")),
            "queues": [dict(q) for q in queues if isinstance(q, Mapping)] if isinstance(queues, list) else [],
            "note": in_flight.get("note") if isinstance(in_flight.get("note"), str) else None,
        },
        "reasons": list(figures.reasons),
    }

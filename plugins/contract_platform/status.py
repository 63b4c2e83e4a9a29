"""Declared vs effective status, as ``contractctl status`` and the UI show it."""

from __future__ import annotations

from typing import Any

from contract_platform.catalog.model import Catalog
from contract_platform.errors import UsageError
from contract_platform.evidence import EvidenceKind

__all__ = ["contract_status", "overview"]


def _iso(value: Any) -> str | None:
    return value.isoformat(timespec="seconds") if value is not None else None


def _summary(figures: dict[str, Any]) -> str:
    keys = ("invalid_rate", "total", "invalid", "failed_expectations", "parity", "blockers", "findings")
    return ", ".join(f"{k}={figures[k]}" for k in keys if k in figures)


def overview(catalog: Catalog, registry: Any) -> list[dict[str, Any]]:
    rows = []
    for contract in catalog:
        state = registry.effective(contract.message_type)
        history = registry.history(contract.message_type) if state else []
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


def contract_status(catalog: Catalog, registry: Any, message_type: str) -> dict[str, Any]:
    contract = catalog.get(message_type)
    if contract is None:
        raise UsageError(f"{message_type!r} is not a messageType of the catalogue; see contractctl status for the list")
    state = registry.effective(message_type)
    evidence = {}
    for kind in EvidenceKind:
        record = registry.latest_evidence(message_type, str(kind))
        if record is not None:
            evidence[str(kind)] = {
                "verdict": str(record.verdict),
                "collectedAt": _iso(record.collected_at),
                "figures": record.figures,
                "reference": record.reference,
                "summary": _summary(record.figures),
            }
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
            for t in registry.history(message_type)
        ],
        "refusals": [
            {"at": _iso(r.at), "from": str(r.from_status), "to": str(r.to_status), "reasons": list(r.reasons)}
            for r in registry.refusals(message_type, limit=5)
        ],
        "evidence": evidence,
    }

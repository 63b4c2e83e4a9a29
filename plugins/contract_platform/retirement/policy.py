"""Checks read from the catalogue: ``holds`` in force, and ``successor_consumers`` that have moved (with the
consumers the broker does not show to have moved listed beside the verdict)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, time, timedelta
from typing import Any

from contract_platform.catalog.model import Catalog, Contract
from contract_platform.evidence import Verdict
from contract_platform.impact.moves import ConsumerMove, still_on_source
from contract_platform.retirement.model import CheckName, CheckResult, iso, require_aware

__all__ = ["check_holds", "check_successor_consumers"]


def check_holds(contract: Contract, *, now: datetime) -> CheckResult:
    """Fail while any hold (audit, legal, replay) is in force; it clears the day after the last one ends."""
    today = require_aware(now).date()
    in_force = contract.holds_in_force(today)
    figures: dict[str, Any] = {
        "holds": [
            {"kind": h.kind, "until": h.until.isoformat(), "reason": h.reason, "inForce": h.in_force(today)}
            for h in contract.holds
        ],
        "inForce": len(in_force),
    }
    if not in_force:
        return CheckResult(CheckName.HOLDS, Verdict.PASS, figures)
    # A hold is in force through its ``until`` day (lifecycle guard_no_hold), so it clears at the next midnight UTC.
    clears_at = datetime.combine(max(h.until for h in in_force) + timedelta(days=1), time(0), UTC)
    listed = "; ".join(f"{h.kind} hold until {h.until.isoformat()} ({h.reason})" for h in in_force)
    return CheckResult(
        CheckName.HOLDS,
        Verdict.FAIL,
        figures,
        f"{listed}: retirement waits until {iso(clears_at)}, or until the hold's owner lifts it in contract.yaml",
        clears_at,
    )


def check_successor_consumers(
    contract: Contract, catalog: Catalog, moves: Sequence[ConsumerMove] | None = None
) -> CheckResult:
    """Every service declared as a consumer of this version also consumes the successor.

    ``moves``: each consumer's state as the broker shows it (``impact.moves``: reader sessions on both
    versions' queues). The verdict stays the catalogue's; the consumers not seen to have moved are listed
    under ``stillOnSource`` with their owners, for the report (docs/consumer-impact.md)."""
    successor = catalog.successor(contract)
    figures: dict[str, Any] = {
        "successor": successor.message_type if successor else contract.superseded_by,
        "consumers": sorted({c.service for c in contract.consumers}),
    }
    if moves is not None:
        figures["stillOnSource"] = [
            {"service": m.service, "team": m.team, "contact": m.contact, "state": m.state, "why": m.why}
            for m in still_on_source(moves)
        ]
    if successor is None:
        named = f"supersededBy names {contract.superseded_by}, which" if contract.superseded_by else "no later major"
        return CheckResult(
            CheckName.SUCCESSOR_CONSUMERS,
            Verdict.FAIL,
            figures,
            f"{named} is not in the catalogue: the consumers of {contract.message_type} have nothing to move to; "
            "add the successor contract (and set supersededBy)",
        )
    moved = {c.service for c in successor.consumers}
    missing = sorted({c.service for c in contract.consumers} - moved)
    figures["successorConsumers"] = sorted(moved)
    figures["notMoved"] = missing
    if not missing:
        return CheckResult(CheckName.SUCCESSOR_CONSUMERS, Verdict.PASS, figures)
    return CheckResult(
        CheckName.SUCCESSOR_CONSUMERS,
        Verdict.FAIL,
        figures,
        f"{', '.join(missing)} consume{'s' if len(missing) == 1 else ''} {contract.message_type} but "
        f"{'is' if len(missing) == 1 else 'are'} not declared as consumer{'' if len(missing) == 1 else 's'} of "
        f"{successor.message_type}: move {'it' if len(missing) == 1 else 'them'} and declare "
        f"{'it' if len(missing) == 1 else 'them'} under consumers in {successor.message_type}'s contract.yaml",
    )

"""Which versions a replay judges, against what, over which window: every changed version with an earlier one of
its major (its check's verdict reused when the check reached one), and every new major with a migration.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from contract_platform.archive_layout import kept_since
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.checks import CompatibilityResult, History, compatibility_of
from contract_platform.replay.decision import (
    StaticVerdict,
    breaks_only_by_narrowing,
)
from contract_platform.replay.judge import ReplayPlan

__all__ = ["ReplayTarget", "replay_targets", "retained_since", "window_of"]


_MESSAGE_ID = "/metadata/messageId"


@dataclass(frozen=True)
class ReplayTarget:
    """A version to replay, what it is replayed with, and the engine's verdict on it."""

    contract: Contract
    plan: ReplayPlan
    static: StaticVerdict
    narrowing_only: bool
    static_problems: tuple[str, ...] = ()
    archive_window: timedelta | None = None  # how long the archive keeps ``exchange``'s partitions (None: unsaid)

    @property
    def exchange(self) -> str:
        """The exchange whose archive partitions hold the replayed records (the previous major's for a migration)."""
        return self.plan.source_exchange or self.contract.transport.exchange


def replay_targets(
    catalog: Catalog,
    history_of: Callable[[Contract], History],
    only: Iterable[str] | None = None,
    *,
    compatibility: Iterable[CompatibilityResult] | None = None,
) -> list[ReplayTarget]:
    """Every version with an earlier version of its major (``history_of``), and every new major with a migration.

    ``compatibility``: the verdicts ``check`` already reached (``CheckReport.compatibility``); a version found
    there is not compared again, so the replay judges what the check judged (its readers perspective too)."""
    from contract_platform.compat import Mode

    judged = {result.message_type: result for result in compatibility or ()}
    wanted = set(only) if only is not None else None
    found = []
    for contract in catalog:
        if wanted is not None and contract.message_type not in wanted:
            continue
        mask = _MESSAGE_ID in contract.pii.fields
        history = list(history_of(contract))
        result = judged.get(contract.message_type)
        if result is None:
            result = compatibility_of(contract, history, default_dialect=catalog.default_dialect)
        if result is not None and history:
            latest = history[-1][1]
            static = StaticVerdict.COMPATIBLE if result.compatible else StaticVerdict.BREAKING
            problems = [f"{c['message']} ({c['path']})" for c in result.changes if not c["compatible"]]
            problems += list(result.semver_problems)
            plan = ReplayPlan(contract.message_type, contract.message_type, current_schema=latest, mask_ids=mask)
            narrowing = breaks_only_by_narrowing(result.latest_changes, Mode(contract.compatibility))
            window = catalog.archive_window(contract.transport.exchange)
            found.append(ReplayTarget(contract, plan, static, narrowing, tuple(problems), window))
            continue
        predecessor = catalog.predecessor(contract)
        if contract.migration is not None and predecessor is not None:
            plan = ReplayPlan(
                contract.message_type,
                predecessor.message_type,
                migration=contract.migration,
                mask_ids=mask,
                source_exchange=predecessor.transport.exchange,
            )
            window = catalog.archive_window(predecessor.transport.exchange)
            found.append(ReplayTarget(contract, plan, StaticVerdict.COMPATIBLE, False, archive_window=window))
    return found


def window_of(contract: Contract, now: datetime | None = None) -> tuple[date, date]:
    """The date partitions replayed: ``since <= date < until``, the window's days up to and including today."""
    today = (now or datetime.now(UTC)).astimezone(UTC).date()
    days = max(1, math.ceil(contract.replay.window / timedelta(days=1)))
    return today - timedelta(days=days - 1), today + timedelta(days=1)


def retained_since(target: ReplayTarget, since: date, now: datetime | None = None) -> date:
    """The first day of the window ``since`` on that the archive still keeps (``since`` when it keeps them all):
    the earlier ones are past the archive's retention, deleted by archive retention, and not replayed."""
    if target.archive_window is None:
        return since
    return max(since, kept_since(target.archive_window, now or datetime.now(UTC)))

"""Contracts built in code (not read from contracts/), a SQLite registry, and evidence at a fixed moment."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.support.contracts import V1, V2, build_contract

from contract_platform.catalog.model import Contract, Status
from contract_platform.lifecycle import GuardContext
from contract_platform.store import EvidenceKind, EvidenceRecord, SqlRegistry

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


@pytest.fixture()
def now() -> datetime:
    return NOW


@pytest.fixture()
def make_contract() -> Callable[..., Contract]:
    return build_contract


@pytest.fixture()
def registry(tmp_path: Path) -> Iterator[SqlRegistry]:
    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as opened:
        yield opened


@pytest.fixture()
def ctx(registry: SqlRegistry) -> Callable[[Contract], GuardContext]:
    return lambda contract: GuardContext(contract=contract, registry=registry, now=NOW)


@pytest.fixture()
def prove(registry: SqlRegistry) -> Callable[..., EvidenceRecord]:
    """Add evidence for a contract: ``prove(contract, "lint")``, failing with ``verdict="fail"``, older with ``age``."""

    def add(
        contract: Contract,
        kind: EvidenceKind | str,
        verdict: str = "pass",
        figures: dict[str, Any] | None = None,
        *,
        age: timedelta = timedelta(hours=1),
        version: str | None = None,
    ) -> EvidenceRecord:
        return registry.add_evidence(
            contract.message_type,
            contract_version=version or contract.version,
            kind=kind,
            verdict=verdict,
            figures=figures if figures is not None else DEFAULT_FIGURES.get(EvidenceKind(kind), {}),
            collected_at=NOW - age,
        )

    return add


DEFAULT_FIGURES: dict[EvidenceKind, dict[str, Any]] = {
    EvidenceKind.ARCHIVE_VALIDATION: {"invalid": 0, "total": 5000},
    EvidenceKind.MIGRATION_PARITY: {"mode": "dual-publish", "missing": 0},
}


@pytest.fixture()
def force(registry: SqlRegistry) -> Callable[[str, Status], None]:
    """Put a message type at a status without guards (the store does not judge), e.g. a successor."""

    def walk(message_type: str, status: Status) -> None:
        state = registry.register(message_type, "1.0.0", actor="setup")
        for next_status in [s for s in Status if state.status.rank < s.rank <= status.rank]:
            state = registry.apply_transition(message_type, expected=state, to=next_status, actor="setup", reason="")

    return walk


@pytest.fixture()
def prove_everything(
    prove: Callable[..., EvidenceRecord], force: Callable[[str, Status], None]
) -> Callable[[Contract], None]:
    """Passing, fresh evidence of every kind, and an active successor: every guard of every step passes."""

    def everything(contract: Contract) -> None:
        for kind in EvidenceKind:
            prove(contract, kind)
        if contract.superseded_by:
            force(contract.superseded_by, Status.ACTIVE)

    return everything


@pytest.fixture()
def v1() -> Contract:
    """v1 as it reads once v2 replaces it: supersededBy and sunset set, declared retired."""
    return build_contract(V1, superseded_by=V2, sunset=date(2026, 6, 1), status=Status.RETIRED)

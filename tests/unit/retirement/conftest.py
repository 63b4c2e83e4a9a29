"""Fixtures for the retirement unit tests: a fixed moment, contracts built in code, a throwaway SQLite registry."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
from tests.support.contracts import DURING_MIGRATION as NOW
from tests.support.contracts import V1, V2, migrating_contract

from contract_platform.catalog.model import Contract
from contract_platform.store import SqlRegistry


@pytest.fixture()
def now() -> datetime:
    return NOW


@pytest.fixture()
def make_contract() -> Callable[..., Contract]:
    return migrating_contract


@pytest.fixture()
def v1() -> Contract:
    return migrating_contract(V1)


@pytest.fixture()
def v2() -> Contract:
    return migrating_contract(V2)


@pytest.fixture()
def registry(tmp_path: Path) -> Iterator[SqlRegistry]:
    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as opened:
        yield opened

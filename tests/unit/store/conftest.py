"""A fresh SQLite registry per test, in the test's own folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from contract_platform.store import SqlRegistry


@pytest.fixture()
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'registry' / 'registry.db'}"


@pytest.fixture()
def registry(sqlite_url: str) -> Iterator[SqlRegistry]:
    with SqlRegistry.open(sqlite_url) as opened:
        yield opened

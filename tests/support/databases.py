"""Scratch PostgreSQL databases for tests and benchmarks: made for one caller, always dropped.

Every name starts with ``contract_platform_`` (``PREFIX``), which the suite's leak check
(``tests/support/leaks.py``) looks for at the end of a run: a database a test made and left is a failure.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from contract_platform.store import SqlRegistry

__all__ = ["BOTH_STORES", "PREFIX", "create_database", "drop_database", "registry_on", "scratch_database"]

# The ``params`` of a registry fixture run on either store; the PostgreSQL one needs the integration lane.
BOTH_STORES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)]

PREFIX = "contract_platform_"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


@contextlib.contextmanager
def scratch_database(server_url: str, purpose: str, *, create: bool = True) -> Iterator[str]:
    """The URL of a new database ``contract_platform_<purpose>_<8 hex>`` on ``server_url``'s server.

    ``create=False`` leaves making it to the code under test (the serve command creates its own); it is
    dropped afterwards either way, with any connection still open to it.
    """
    from sqlalchemy.engine import make_url

    name = f"{purpose}_{uuid.uuid4().hex[:8]}"
    name = name if name.startswith(PREFIX) else PREFIX + name
    url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    if create:
        create_database(url)
    try:
        yield url
    finally:
        drop_database(url)


@contextlib.contextmanager
def registry_on(request: pytest.FixtureRequest, tmp_path: Path, purpose: str) -> Iterator[SqlRegistry]:
    """An empty registry store on the fixture's ``request.param``: ``"sqlite"`` in ``tmp_path``, or
    ``"postgresql"`` in a scratch database (``purpose``) on the ``postgres_url`` fixture's server."""
    from contract_platform.store import SqlRegistry

    if request.param == "sqlite":
        with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as opened:
            yield opened
        return
    with scratch_database(request.getfixturevalue("postgres_url"), purpose) as url, SqlRegistry.open(url) as opened:
        yield opened


def create_database(url: str) -> None:
    _on_server(url, 'CREATE DATABASE "{name}"')


def drop_database(url: str) -> None:
    """Drop the database of ``url`` if it exists, with any connection still open to it."""
    _on_server(url, 'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _on_server(url: str, statement: str) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    target = make_url(url)
    name = str(target.database)
    if not _NAME.fullmatch(name):
        raise ValueError(f"not a database name a test makes: {name!r}")
    engine = create_engine(target.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text(statement.format(name=name)))
    finally:
        engine.dispose()

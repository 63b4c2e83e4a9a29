"""The edge between the registry and SQLAlchemy: engines per dialect, and the one error mapping.

SQLite gets WAL, a busy timeout and ``BEGIN IMMEDIATE`` for writers, so several processes can share
one file; PostgreSQL a pre-pinged pool. ``store_error`` turns any SQLAlchemy (or file system) error
into a ``StoreError`` that names the database by ``redact_url`` and never shows its password.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError, SQLAlchemyError

from contract_platform.errors import StoreError
from contract_platform.settings import redact_url

__all__ = ["BUSY_TIMEOUT_SECONDS", "WRITE_OPTION", "open_engine", "store_error"]

BUSY_TIMEOUT_SECONDS = 30
WRITE_OPTION = "cp_write"  # execution option: this connection's transaction will write


def open_engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(parsed, pool_pre_ping=True)
    database = parsed.database or ""
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(parsed, connect_args={"timeout": BUSY_TIMEOUT_SECONDS})
    event.listen(engine, "connect", _sqlite_connected)
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def _sqlite_connected(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # we emit BEGIN ourselves (_sqlite_begin)
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_SECONDS * 1000}")
    cursor.execute("PRAGMA journal_mode = WAL")
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    # IMMEDIATE takes the write lock up front: a writer waits (busy timeout) for another process
    # instead of failing later on a stale snapshot.
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(WRITE_OPTION) else "BEGIN")


def store_error(url: str, action: str, exc: BaseException) -> StoreError:
    orig = getattr(exc, "orig", None)  # the driver's own error, without SQLAlchemy's SQL echo
    detail = str(orig) if orig is not None else str(exc)
    detail = " ".join(line.strip() for line in detail.splitlines() if line.strip())[:500]
    try:
        password = make_url(url).password
    except SQLAlchemyError:
        password = None
    if password:
        detail = detail.replace(str(password), "***")
    hint = ""
    if isinstance(exc, OperationalError) and any(word in detail.lower() for word in ("connect", "unable to open")):
        hint = "; check CONTRACT_REGISTRY_URL and that the database is running"
    return StoreError(f"registry store {redact_url(url)}: {action} failed: {detail}{hint}")

"""The edge between the registry and its database: DB-API connections per dialect, transactions, values, errors.

The registry's SQL is written once, with ``?`` placeholders, and runs on the driver itself: the standard
library's ``sqlite3`` for ``sqlite:`` URLs, ``psycopg2`` for ``postgresql:`` (or ``postgresql+psycopg2:``)
URLs, whose placeholders are ``%s``. SQLAlchemy is not needed to read or write; ``migrations`` uses it to
create or upgrade the schema, on connections made here.

SQLite gets WAL, a busy timeout, ``synchronous = NORMAL``, foreign keys, and our own ``BEGIN`` (``BEGIN
IMMEDIATE`` for writers, so a writer waits for another process's lock instead of failing later on a stale
snapshot): several processes can share one file. Connections are kept for the next transaction (a registry
may live long, in the Airflow UI or the recorder); a PostgreSQL connection is checked before it is reused
and replaced when it is dead. ``close()`` closes them all.

Values cross here, both ways, by column name (``DATETIME_COLUMNS``, ``JSON_COLUMNS``, ``BOOLEAN_COLUMNS``; a
test checks them against ``tables``): datetimes go in aware and come back aware, in UTC (SQLite holds naive
UTC text as SQLAlchemy's ``DateTime`` writes it, so text order is time order; PostgreSQL a timestamptz,
whatever the session's time zone), JSON as text (SQLite) or ``json``, booleans as 0/1 on SQLite.

Any text crosses too, whatever a client of the broker chose to put in it (docs/retirement-audit.md). Neither
database holds every Python ``str``: PostgreSQL refuses NUL, and neither driver can encode a lone surrogate
(what ``surrogateescape`` makes of invalid UTF-8). ``hold_text`` gives such text one reversible form:
``ESCAPED`` (U+FDD0, a Unicode noncharacter both databases keep) followed by the text with each backslash,
NUL and surrogate written as ``\\\\``, ``\\u0000`` and ``\\udXXX``; a text that already starts with
``ESCAPED`` is written the same way, so no text is taken for the form. Every ``str`` parameter is bound
through it (an equality lookup finds what was stored) and every ``str`` read back goes through ``read_text``.
Ordinary text is bound as it is: the test is ``isascii()`` and no NUL. JSON needs nothing: ``json.dumps``
writes NUL and surrogates as ``\\u`` escapes, which PostgreSQL's ``json`` type keeps as text.

``store_error`` is the one error mapping: a driver (or file system) error becomes a ``StoreError`` that names
the database by ``redact_url`` and never shows its password.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from contract_platform.errors import StoreError
from contract_platform.settings import redact_url

__all__ = [
    "BOOLEAN_COLUMNS",
    "BUSY_TIMEOUT_SECONDS",
    "DATETIME_COLUMNS",
    "ESCAPED",
    "JSON_COLUMNS",
    "Database",
    "Row",
    "Transaction",
    "hold_text",
    "is_integrity_error",
    "marks",
    "read_text",
    "store_error",
]

BUSY_TIMEOUT_SECONDS = 30
IDLE_CONNECTIONS = 4  # kept for reuse; more at once (threads of the UI) are closed when they are done

# Every column of ``tables`` of each kind, by name (tests/unit/store/test_store_sql.py checks them).
DATETIME_COLUMNS = frozenset(
    {
        "applied_at",
        "at",
        "attached_at",
        "closed_at",
        "collected_at",
        "confirmed_until",
        "covered_from",
        "covered_until",
        "detached_at",
        "end",
        "ended_at",
        "idle_since",
        "observed_at",
        "opened_at",
        "own_until",
        "recorded_at",
        "requested_at",
        "start",
        "started_at",
        "traced_from",
        "updated_at",
    }
)
JSON_COLUMNS = frozenset({"figures", "reasons", "schema"})
BOOLEAN_COLUMNS = frozenset({"present"})

Row = dict[str, Any]

ESCAPED = "\ufdd0"  # starts the escaped form of a text the database cannot hold as it is (hold_text)
_UNHOLDABLE = re.compile("[\\\\\x00\ud800-\udfff]")  # what the escaped form writes as an escape
_MUST_ESCAPE = re.compile("[\x00\ud800-\udfff]")  # what the database cannot hold
_ESCAPE = re.compile(r"\\(\\|u[0-9a-f]{4})")

_SQLITE_TEXT = "{:04d}-{:02d}-{:02d} {:02d}:{:02d}:{:02d}.{:06d}"  # SQLAlchemy's DateTime on SQLite
_POSTGRESQL_SCHEMES = ("postgresql", "postgresql+psycopg2", "postgres")


def marks(count: int) -> str:
    """``?, ?, ?``: the placeholders of an ``IN (...)`` list of ``count`` values."""
    return ", ".join("?" * count)


def is_integrity_error(exc: BaseException) -> bool:
    """True when the ``StoreError`` ``exc`` was a unique (or other integrity) constraint the database refused."""
    cause = exc.__cause__
    if isinstance(cause, sqlite3.IntegrityError):
        return True
    psycopg2 = sys.modules.get("psycopg2")
    return psycopg2 is not None and isinstance(cause, psycopg2.IntegrityError)


def store_error(url: str, action: str, exc: BaseException) -> StoreError:
    orig = getattr(exc, "orig", None)  # under SQLAlchemy (migrations): the driver's own error, without the SQL
    driver_error = orig if isinstance(orig, BaseException) else exc
    detail = " ".join(line.strip() for line in str(driver_error).splitlines() if line.strip())[:500]
    password = _password(url)
    if password:
        detail = detail.replace(password, "***")
    hint = ""
    if _is_operational(driver_error) and any(word in detail.lower() for word in ("connect", "unable to open")):
        hint = "; check CONTRACT_REGISTRY_URL and that the database is running"
    return StoreError(f"registry store {redact_url(url)}: {action} failed: {detail}{hint}")


def _password(url: str) -> str | None:
    try:
        password = urlsplit(url).password
    except ValueError:
        return None
    return unquote(password) if password else None


def _is_operational(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.OperationalError):
        return True
    psycopg2 = sys.modules.get("psycopg2")
    return psycopg2 is not None and isinstance(exc, psycopg2.OperationalError)


class Transaction:
    """One open transaction: SQL with ``?`` placeholders in, rows (dicts by column name) out."""

    def __init__(self, connection: Any, dialect: str) -> None:
        self.connection = connection
        self.dialect = dialect

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; returns the rows it changed."""
        cursor = self._run(sql, params)
        count = cursor.rowcount
        cursor.close()
        return int(count) if count and count > 0 else 0

    def execute_many(self, sql: str, params: Sequence[Sequence[Any]]) -> None:
        if not params:
            return
        cursor = self.connection.cursor()
        try:
            bound = [self._bind_all(one) for one in params]
            if self.dialect == "sqlite":
                cursor.executemany(sql, bound)
            else:
                from psycopg2.extras import execute_batch  # one round trip per 100 rows, not one per row

                execute_batch(cursor, _pyformat(sql), bound, page_size=100)
        finally:
            cursor.close()

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        cursor = self._run(sql, params)
        try:
            names = [column[0] for column in cursor.description]
            return [_decode(names, found, self.dialect) for found in cursor.fetchall()]
        finally:
            cursor.close()

    def first(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        found = self.rows(sql, params)
        return found[0] if found else None

    def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        found = self.first(sql, params)
        return next(iter(found.values())) if found else None

    def insert(self, table: str, row: Mapping[str, Any], *, returning_id: bool = False) -> int | None:
        """Insert ``row`` into ``table``; with ``returning_id``, the new row's ``id``."""
        columns = ", ".join(f'"{name}"' for name in row)
        sql = f"INSERT INTO {table} ({columns}) VALUES ({marks(len(row))})"
        if not returning_id:
            self.execute(sql, list(row.values()))
            return None
        if self.dialect == "postgresql":
            new = self.scalar(sql + " RETURNING id", list(row.values()))
            return int(new)
        cursor = self._run(sql, list(row.values()))
        cursor.close()
        return int(cursor.lastrowid)

    def insert_many(self, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Insert ``rows`` (all with the keys of the first) into ``table``."""
        if not rows:
            return
        names = list(rows[0])
        columns = ", ".join(f'"{name}"' for name in names)
        sql = f"INSERT INTO {table} ({columns}) VALUES ({marks(len(names))})"
        self.execute_many(sql, [[row[name] for name in names] for row in rows])

    def _run(self, sql: str, params: Sequence[Any]) -> Any:
        cursor = self.connection.cursor()
        try:
            cursor.execute(sql if self.dialect == "sqlite" else _pyformat(sql), self._bind_all(params))
        except BaseException:
            cursor.close()
            raise
        return cursor

    def _bind_all(self, params: Sequence[Any]) -> list[Any]:
        return [_bind(value, self.dialect) for value in params]


def hold_text(text: str) -> str:
    """``text`` as the database can hold it: itself, or ``ESCAPED`` + its escaped form (see the module)."""
    if "\x00" not in text and (text.isascii() or (not text.startswith(ESCAPED) and not _MUST_ESCAPE.search(text))):
        return text
    return ESCAPED + _UNHOLDABLE.sub(_escape, text)


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    return "\\\\" if char == "\\" else f"\\u{ord(char):04x}"


def read_text(stored: str) -> str:
    """What ``hold_text`` was given, from what it returned."""
    if not stored.startswith(ESCAPED):
        return stored
    return _ESCAPE.sub(_unescape, stored[len(ESCAPED) :])


def _unescape(found: re.Match[str]) -> str:
    escaped = found.group(1)
    return "\\" if escaped == "\\" else chr(int(escaped[1:], 16))


def _pyformat(sql: str) -> str:
    """``?`` placeholders -> psycopg2's ``%s`` (a literal ``%`` doubled). The registry's SQL has no ``?`` in text."""
    return sql.replace("%", "%%").replace("?", "%s")


def _bind(value: Any, dialect: str) -> Any:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value.isoformat()}: the registry stores aware UTC datetimes only")
        value = value.astimezone(UTC)
        if dialect != "sqlite":
            return value
        return _SQLITE_TEXT.format(
            value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond
        )
    if isinstance(value, str):
        return value if value.isascii() and "\x00" not in value else hold_text(value)
    if isinstance(value, dict | list):
        return json.dumps(value)
    return value


def _decode(names: Sequence[str], found: Sequence[Any], dialect: str) -> Row:
    row: Row = {}
    for name, value in zip(names, found, strict=True):
        if value is not None:
            if name in DATETIME_COLUMNS:
                value = utc(value)
            elif name in JSON_COLUMNS and isinstance(value, str | bytes):
                value = json.loads(value)
            elif name in BOOLEAN_COLUMNS:
                value = bool(value)
            elif isinstance(value, str) and value.startswith(ESCAPED):
                value = read_text(value)
        row[name] = value
    return row


def utc(value: datetime | str) -> datetime:
    """A stored moment, aware in UTC: SQLite's naive UTC text, or PostgreSQL's timestamptz in any time zone."""
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class Database:
    """One registry database: connections of its dialect, kept for reuse, one transaction at a time each."""

    def __init__(self, url: str) -> None:
        self.url = url  # with its password: shown only through redact_url
        scheme = url.split(":", 1)[0].lower()
        if scheme == "sqlite":
            self.dialect = "sqlite"
            self._sqlite_path, self._sqlite_uri = _sqlite_target(url)
            if not self._sqlite_uri and self._sqlite_path != ":memory:":
                try:
                    Path(self._sqlite_path).expanduser().parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise store_error(url, "opening", exc) from exc
        elif scheme in _POSTGRESQL_SCHEMES:
            self.dialect = "postgresql"
            self._dsn = "postgresql" + url[len(scheme) :]
        else:
            raise StoreError(
                f"registry store {redact_url(url)}: opening failed: {scheme!r} is not a database the registry "
                "runs on; use a sqlite:/// or postgresql:// URL"
            )
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._closed = False

    @property
    def errors(self) -> tuple[type[BaseException], ...]:
        """What the driver raises (and the file system): what ``store_error`` maps."""
        if self.dialect == "sqlite":
            return (sqlite3.Error, OSError)
        import psycopg2

        return (psycopg2.Error, OSError)

    def connect(self) -> Any:
        """A new DB-API connection, set up as every registry connection is (also what SQLAlchemy upgrades on)."""
        if self.dialect == "sqlite":
            connection = sqlite3.connect(
                self._sqlite_path,
                timeout=BUSY_TIMEOUT_SECONDS,
                isolation_level=None,  # we emit BEGIN ourselves
                check_same_thread=False,  # kept connections serve one thread at a time, not always the same one
                uri=self._sqlite_uri,
            )
            try:
                connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_SECONDS * 1000}")
                _wal(connection)
                connection.execute("PRAGMA synchronous = NORMAL")
                connection.execute("PRAGMA foreign_keys = ON")
            except BaseException:
                connection.close()
                raise
            return connection
        import psycopg2

        return psycopg2.connect(self._dsn)

    @contextmanager
    def transaction(self, action: str, *, write: bool = False) -> Iterator[Transaction]:
        """One transaction, committed when the block ends and rolled back when it raises; the driver's errors
        leave as ``StoreError`` (the one place they are mapped), anything else as it is."""
        errors = self.errors
        connection = self._open_for(action)
        done = False
        try:
            if self.dialect == "sqlite":
                # IMMEDIATE takes the write lock up front: a writer waits (busy timeout) for another process
                connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            yield Transaction(connection, self.dialect)
            if self.dialect == "sqlite":
                connection.execute("COMMIT")
            else:
                connection.commit()
            done = True
        except errors as exc:
            raise store_error(self.url, action, exc) from exc
        finally:
            self._give_back(connection, done)

    def reclaim_space(self, action: str, *, min_free_ratio: float) -> int:
        """SQLite: ``VACUUM`` when at least ``min_free_ratio`` of the file's pages are free (deleted rows leave them;
        SQLite reuses them but never gives them back), then truncate the WAL; the bytes the file and its WAL shrank by. The cost
        (a copy of the file) is paid only when that much is free. PostgreSQL, or an in-memory SQLite: 0."""
        if self.dialect != "sqlite" or self._sqlite_path == ":memory:":
            return 0
        errors = self.errors
        connection = self._open_for(action)
        try:
            pages, free = (
                connection.execute(f"PRAGMA {name}").fetchone()[0] for name in ("page_count", "freelist_count")
            )
            if not pages or free / pages < min_free_ratio:
                return 0
            files = [Path(self._sqlite_path).expanduser(), Path(f"{self._sqlite_path}-wal").expanduser()]
            before = sum(_file_size(f) for f in files)
            connection.execute("VACUUM")  # outside a transaction: it takes the write lock, waiting the busy timeout
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the file shrinks at the checkpoint in WAL mode
            return max(0, before - sum(_file_size(f) for f in files))
        except errors as exc:
            raise store_error(self.url, action, exc) from exc
        finally:
            self._give_back(connection, True)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for connection in idle:
            _close_quietly(connection)

    def _open_for(self, action: str) -> Any:
        """A connection for ``action``: the registry closed, or the driver failing to connect, is a ``StoreError``
        naming the store and the action."""
        if self._closed:
            raise StoreError(f"registry store {redact_url(self.url)}: {action} failed: the registry is closed")
        try:
            return self._take()
        except self.errors as exc:
            raise store_error(self.url, action, exc) from exc

    def _take(self) -> Any:
        while True:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                return self.connect()
            if self.dialect == "sqlite" or _alive(connection):
                return connection
            _close_quietly(connection)

    def _give_back(self, connection: Any, committed: bool) -> None:
        if not committed:
            try:
                if self.dialect == "sqlite":
                    if connection.in_transaction:
                        connection.execute("ROLLBACK")
                else:
                    connection.rollback()
            except Exception:  # a connection that cannot roll back is not kept
                _close_quietly(connection)
                return
        with self._lock:
            if not self._closed and len(self._idle) < IDLE_CONNECTIONS:
                self._idle.append(connection)
                return
        _close_quietly(connection)


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # no WAL file, or a URI the file system does not know
        return 0


def _wal(connection: sqlite3.Connection) -> None:
    """Switch the file to WAL (kept in the file: a no-op once done). The switch wants the file to itself, and
    SQLite answers "database is locked" at once, without waiting the busy timeout, when another connection
    is reading the file while a third holds its write lock (processes opening a fresh file at once): try
    again for as long as the busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    while True:
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _sqlite_target(url: str) -> tuple[str, bool]:
    """``sqlite:///relative.db``, ``sqlite:////absolute.db``, ``sqlite://`` (memory), ``?uri=true`` for ``file:``."""
    rest, _, query = url.split(":", 1)[1].partition("?")
    database = rest[3:] if rest.startswith("///") else rest[2:] if rest.startswith("//") else rest
    options = dict(parse_qsl(query))
    uri = database.startswith("file:") or options.get("uri", "").lower() in ("true", "1")
    return (database or ":memory:"), uri


def _alive(connection: Any) -> bool:
    """A kept PostgreSQL connection still answers (the server may have restarted, or closed it when idle)."""
    if connection.closed:
        return False
    try:
        cursor = connection.cursor()
        cursor.execute("SELECT 1")
        cursor.close()
        connection.rollback()
    except Exception:  # any failure: take a new connection
        return False
    return True


def _close_quietly(connection: Any) -> None:
    with suppress(Exception):  # closing what may already be dead
        connection.close()

"""Any text a client of the broker chose is stored and read back exactly, on SQLite and on a real PostgreSQL
(``store/sql.py``: ``hold_text``): what the database cannot hold goes in escaped, everything else as it is;
and a broker event's names, parsed as the recorder parses them, come back from the registry as they were sent."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from tests.support.databases import BOTH_STORES, registry_on, scratch_database

from contract_platform.activity.events import MAX_NAME, parse_event
from contract_platform.store import SqlRegistry
from contract_platform.store.sql import ESCAPED, Database, hold_text, read_text

HOSTILE = [
    "nul\x00inside",
    "\x00",
    "control \x01\x07\x08\x1b[2J\x7f\x9b end",
    "line\nbreak\r\ttab",
    "lone \udcff\udc80 surrogates (invalid UTF-8 under surrogateescape)",
    "\ud800",
    "bidi \u202eevil\u202c \u2066isolate\u2069",
    ESCAPED,
    ESCAPED + "looks escaped \\u0000",
    "\\u0000 is not a NUL",
    "\\\\u0041\\",
    "\ufdd1\uffff\U0010ffff emoji \U0001f600",
    "x" * 65_536,
    "\x00\udcff\\" * 21_846,  # 64 KiB of what is escaped, six times longer stored
]
ORDINARY = ["", "plain", "ünïcödé \u202e and \ufdd0 inside", "back\\slash", "x" * 65_536]


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def opened(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    if request.param == "sqlite":
        yield from _with_table(Database(f"sqlite:///{tmp_path_factory.mktemp('text') / 'text.db'}"), "TEXT")
        return
    with scratch_database(request.getfixturevalue("postgres_url"), "store_text") as url:
        yield from _with_table(Database(url), "JSON")


def _with_table(database: Database, json_type: str) -> Iterator[Database]:
    with database.transaction("setting up", write=True) as tx:
        tx.execute(f"CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, figures {json_type} NULL)")
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def database(opened: Database) -> Database:
    with opened.transaction("emptying", write=True) as tx:
        tx.execute("DELETE FROM t")
    return opened


def _stored(database: Database) -> dict[int, Any]:
    """The names as the database holds them, read without the store's decoding."""
    with database.transaction("reading raw") as tx:
        cursor = tx.connection.cursor()
        cursor.execute("SELECT id, name FROM t")
        found = dict(cursor.fetchall())
        cursor.close()
    return found


@pytest.mark.parametrize("text", HOSTILE + ORDINARY, ids=lambda text: repr(text[:24]))
def test_a_text_is_stored_and_read_back_exactly_and_found_by_equality(database: Database, text: str) -> None:
    with database.transaction("writing", write=True) as tx:
        tx.insert("t", {"id": 1, "name": text, "figures": {"name": text, "list": [text]}})
        tx.insert("t", {"id": 2, "name": text + "-other"})
    with database.transaction("reading") as tx:
        [row] = tx.rows("SELECT * FROM t WHERE name = ?", [text])
        assert [r["id"] for r in tx.rows("SELECT id FROM t WHERE name IN (?, ?) ORDER BY id", [text, "x"])] == [1]
    assert (row["id"], row["name"], row["figures"]) == (1, text, {"name": text, "list": [text]})


def test_ordinary_text_is_held_as_it_is_and_only_what_the_database_refuses_is_escaped(database: Database) -> None:
    texts = ORDINARY + HOSTILE
    with database.transaction("writing", write=True) as tx:
        tx.insert_many("t", [{"id": n, "name": text, "figures": None} for n, text in enumerate(texts)])
    stored = _stored(database)
    for n, text in enumerate(ORDINARY):
        assert stored[n] == text
    escaped = {texts[n] for n, held in stored.items() if held.startswith(ESCAPED)}
    assert escaped == {text for text in HOSTILE if "\x00" in text or text.startswith(ESCAPED) or _surrogate(text)}
    for n, held in stored.items():
        assert "\x00" not in held and not _surrogate(held) and read_text(held) == texts[n]
    assert stored[texts.index("nul\x00inside")] == ESCAPED + "nul\\u0000inside"


def test_the_escaped_form_is_one_way_round() -> None:
    for text in HOSTILE + ORDINARY:
        assert read_text(hold_text(text)) == text
        assert read_text(hold_text(hold_text(text))) == hold_text(text)  # the form itself is never taken for one
    assert hold_text("a\x00\udcff\\") == ESCAPED + "a\\u0000\\udcff\\\\"


def _surrogate(text: str) -> bool:
    return any("\ud800" <= char <= "\udfff" for char in text)


@pytest.fixture(params=BOTH_STORES)
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlRegistry]:
    with registry_on(request, tmp_path, "store_names") as opened:
        yield opened


NAMES = [  # as a client sends them: bytes, since some are not UTF-8
    b"nul\x00 control \x01\x1b[2J\x7f",
    "bidi \u202eevil\u202c \ufdd0 and \\u0000".encode(),
    b"invalid \xff\xfe and overlong \xc0\xaf \xed\xa0\x80",
    b"\xff" * 255,
]


def test_a_broker_events_names_come_back_from_the_registry_as_the_client_sent_them(registry: SqlRegistry) -> None:
    at = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    events = []
    for n, raw in enumerate(NAMES):
        pid, channel = f"<rabbit@n.{n}.1>".encode(), f"<rabbit@n.{n}.2>".encode()
        long_name = raw + b"-" + b"n" * (MAX_NAME - len(raw) - 1)  # 64 kB, whole
        for kind, headers in (
            ("connection.created", {"pid": pid, "user_provided_name": long_name, "user": raw, "peer_host": raw}),
            ("channel.created", {"pid": channel, "connection": pid}),
            ("consumer.created", {"queue": raw, "consumer_tag": raw, "channel": channel, "vhost": raw}),
            ("queue.created", {"name": raw, "vhost": raw}),
        ):
            ms = int((at + timedelta(seconds=n)).timestamp() * 1000)
            event = parse_event(kind, SimpleNamespace(headers={**headers, "timestamp_in_ms": ms}), at)
            assert event is not None
            events.append(event)
    assert registry.store_broker_events(events) == len(events)
    assert registry.store_broker_events(events) == 0  # found again by their digests: stored once
    for raw in NAMES:
        name = raw.decode("utf-8", "surrogateescape")
        [session] = registry.reader_sessions([(name, name)], since=at, until=at + timedelta(minutes=1))
        assert (session.vhost, session.queue, session.consumer_tag, session.user, session.peer_host) == (name,) * 5
        assert session.connection_name is not None
        assert session.connection_name.encode("utf-8", "surrogateescape") == raw + b"-" + b"n" * (
            MAX_NAME - len(raw) - 1
        )
        [change] = registry.broker_changes([(name, name)], since=at)
        assert (change.vhost, change.name) == (name, name)

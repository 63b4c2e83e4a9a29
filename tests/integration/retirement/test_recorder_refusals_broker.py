"""The recorder never stops on one event, with a real store and the real broker.

An event the store refuses for itself (here a trigger of the registry's database refuses the reader sessions of
one queue; in the field it was a NUL that PostgreSQL's driver refused with a ValueError) is parked in
``<queue>.parked`` with its reason and recorded as a gap naming it, and the recorder goes on: the next reader is
recorded. A store that is down is not a refused event: nothing is parked or acked, and once the store is back
the events are stored.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine
from tests.support import broker
from tests.support.broker import url_of
from tests.support.databases import scratch_database
from tests.support.retirement import recorder_thread
from tests.support.waiting import wait_until

from contract_platform.activity.parking import REASON_HEADER
from contract_platform.activity.queues import parked_queue
from contract_platform.amqp import open_connection
from contract_platform.amqp.connection import close_quietly
from contract_platform.amqp.inspection import passive_queue
from contract_platform.evidence.records import BrokerEvent
from contract_platform.store import SqlRegistry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

REFUSED = "refused by the test's trigger"
POISON = f"poison-{uuid.uuid4().hex[:8]}"  # in the name of the queues whose readers the store refuses
SQLITE_TRIGGER = f"""
CREATE TRIGGER cp_test_refuse BEFORE INSERT ON cp_reader_sessions WHEN NEW.queue LIKE '%{POISON}%'
BEGIN SELECT RAISE(ABORT, '{REFUSED.replace("'", "''")}'); END
"""
POSTGRESQL_TRIGGER = f"""
CREATE FUNCTION cp_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.queue LIKE '%{POISON}%' THEN RAISE EXCEPTION '{REFUSED.replace("'", "''")}'; END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER cp_test_refuse BEFORE INSERT ON cp_reader_sessions FOR EACH ROW EXECUTE FUNCTION cp_test_refuse();
"""


class DriverRefusing(SqlRegistry):
    """The registry as it was when a NUL reached PostgreSQL: its driver raised a ValueError, not a store error."""

    def store_broker_events(self, events: Sequence[BrokerEvent]) -> int:
        if any(POISON in (event.get("queue") or "") for event in events):
            raise ValueError("A string literal cannot contain NUL (0x00) characters.")
        return super().store_broker_events(events)


@pytest.fixture
def prefix(rabbitmq_url: str) -> Iterator[str]:
    if not broker.management_answers():
        pytest.skip("the RabbitMQ management API is not answering on 15672")
    name = broker.prefix()
    yield name
    broker.delete_names(url_of("/"), queues=[f"{name}{POISON}", f"{name}plain", f"{name}down"])


@pytest.fixture(params=["sqlite", "postgresql", "driver"])
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlRegistry]:
    """A registry whose store refuses the reader sessions of queues named ``...POISON...``."""
    if request.param == "postgresql":
        server = request.getfixturevalue("postgres_url")
        with scratch_database(server, "recorder_refusals") as url, SqlRegistry.open(url) as opened:
            engine = create_engine(url)
            conn = engine.raw_connection()  # the driver's own: no parameters, so '%' is itself
            conn.cursor().execute(POSTGRESQL_TRIGGER)
            conn.commit()
            conn.close()
            engine.dispose()
            yield opened
        return
    path = tmp_path / "registry.db"
    if request.param == "driver":
        with DriverRefusing.open(f"sqlite:///{path}") as opened:
            yield opened
        return
    with SqlRegistry.open(f"sqlite:///{path}") as opened:
        with sqlite3.connect(path) as conn:
            conn.execute(SQLITE_TRIGGER)
        yield opened


def attach_and_leave(queue: str) -> None:
    """A reader that attaches to ``queue`` and leaves: a consumer.created and a consumer.deleted event."""
    connection = open_connection(url_of("/"))
    try:
        channel = connection.channel()
        channel.queue_declare(queue)
        channel.basic_cancel(channel.basic_consume(queue, lambda *args: None))
    finally:
        close_quietly(connection)


def sessions(registry: SqlRegistry, queue: str, since: datetime) -> list[Any]:
    return registry.reader_sessions([("/", queue)], since=since, until=datetime.now(UTC) + timedelta(minutes=1))


def parked_messages(queue: str) -> list[dict[str, Any]]:
    """The headers of what ``<queue>.parked`` holds (taken)."""
    connection = open_connection(url_of("/"))
    try:
        return [properties.headers for properties, _body in broker.drain(connection, parked_queue(queue))]
    finally:
        close_quietly(connection)


def test_an_event_the_store_refuses_is_parked_as_a_gap_and_the_next_reader_is_recorded(
    registry: SqlRegistry, prefix: str
) -> None:
    queue = f"{prefix}broker-activity"
    with recorder_thread(registry, url_of("/"), queue) as recorder:
        since = datetime.now(UTC) - timedelta(seconds=5)
        attach_and_leave(f"{prefix}{POISON}")
        attach_and_leave(f"{prefix}plain")  # the next reader, after the refused ones
        wait_until(lambda: sessions(registry, f"{prefix}plain", since), 30, 0.1, what="the plain reader stored")
        wait_until(lambda: recorder.report.parked >= 2, 30, 0.1, what="the poison reader's events parked")
        covered_after = datetime.now(UTC)
        wait_until(lambda: (recorder.report.covered_until or since) > covered_after, 30, 0.1, what="coverage going on")
        parked = parked_messages(queue)
    assert sessions(registry, f"{prefix}{POISON}", since) == []
    assert sorted(headers["x-park-event"] for headers in parked) == ["consumer.created", "consumer.deleted"]
    for headers in parked:
        assert headers["queue"] == f"{prefix}{POISON}" and headers["vhost"] == "/"
        assert REFUSED in headers[REASON_HEADER] or "NUL" in headers[REASON_HEADER]
    _segments, gaps = registry.coverage(since)
    named = [gap for gap in gaps if f"of queue {prefix}{POISON} in vhost /" in gap.reason]
    assert named and all(gap.start == gap.end and f"parked in {queue}.parked" in gap.reason for gap in named)
    assert {kind for gap in named for kind in ("consumer.created", "consumer.deleted") if kind in gap.reason} == {
        "consumer.created",
        "consumer.deleted",
    }
    assert recorder.report.parked == 2 and len(recorder.report.gaps) >= 1


def test_a_store_that_is_down_parks_nothing_and_stores_the_events_once_it_is_back(
    tmp_path: Path, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "registry.db"
    queue = f"{prefix}broker-activity"
    hidden = {"cp_broker_events_seen": "cp_hidden_seen", "cp_coverage_segments": "cp_hidden_segments"}
    with SqlRegistry.open(f"sqlite:///{path}") as registry, recorder_thread(registry, url_of("/"), queue) as recorder:
        since = datetime.now(UTC) - timedelta(seconds=5)
        _rename(path, hidden)  # every write and every read of the recorder fails: the store is down
        attach_and_leave(f"{prefix}down")
        wait_until(lambda: "reconnecting in" in caplog.text, 30, 0.1, what="the recorder reconnecting")
        _rename(path, {new: old for old, new in hidden.items()})
        wait_until(lambda: sessions(registry, f"{prefix}down", since), 60, 0.2, what="the reader stored afterwards")
        assert recorder.report.parked == 0 and recorder.report.segments >= 2
        connection = open_connection(url_of("/"))
        try:
            assert passive_queue(connection, parked_queue(queue)) is None  # nothing was ever parked
        finally:
            close_quietly(connection)


def _rename(path: Path, names: dict[str, str]) -> None:
    with sqlite3.connect(path) as conn:
        for old, new in names.items():
            conn.execute(f"ALTER TABLE {old} RENAME TO {new}")

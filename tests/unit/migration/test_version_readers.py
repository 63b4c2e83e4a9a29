"""Readers per version over time (``migration.readers``): at each moment the distinct connections with a session
open on the version's consumer queues, as the broker activity recorder stored them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.support.ui_seed import record_reader_sessions

from contract_platform.catalog import Catalog
from contract_platform.evidence.records import ReaderSession
from contract_platform.migration.readers import readers_over_time, version_sessions
from contract_platform.store import SqlRegistry

START = datetime(2026, 11, 20, 0, 0, tzinfo=UTC)
END = START + timedelta(hours=10)
QUEUE = "accounting-service.billing.invoice-issued.v1"


def _at(hours: float) -> datetime:
    return START + timedelta(hours=hours)


def _session(
    connection: str | None,
    attached: datetime | None,
    detached: datetime | None,
    *,
    queue: str = QUEUE,
    channel: str = "c1",
) -> ReaderSession:
    return ReaderSession("/", queue, f"ctag-{channel}", channel, attached, detached, connection_name=connection)


def _steps(sessions: list[ReaderSession]) -> list[tuple[float, int]]:
    return [
        ((c.at - START) / timedelta(hours=1), c.readers) for c in readers_over_time(sessions, since=START, until=END)
    ]


def test_a_reader_between_two_samples_is_drawn_for_as_long_as_it_read() -> None:
    """A batch job that read from 02:00 to 03:00: no sampled count at 00:00 or 10:00 would ever show it."""
    assert _steps([_session("nightly-batch", _at(2), _at(3))]) == [(0, 0), (2, 0), (2, 1), (3, 1), (3, 0), (10, 0)]


def test_readers_are_connections_two_instances_count_twice_two_channels_of_one_once() -> None:
    sessions = [
        _session("billing-1", _at(1), _at(6), channel="a"),
        _session("billing-1", _at(2), _at(4), channel="b"),  # the same connection on a second channel
        _session("billing-2", _at(5), None, channel="c"),  # a second instance, still attached
        _session(None, None, _at(1), channel="d"),  # attached before the recorder saw it, unnamed
    ]

    # the unnamed reader hands over to billing-1 at 01:00 (no dip); billing-1's second channel adds no reader;
    # billing-2 joins at 05:00 and billing-1 leaves at 06:00
    assert _steps(sessions) == [(0, 1), (5, 1), (5, 2), (6, 2), (6, 1), (10, 1)]


def test_the_sessions_of_a_version_come_from_the_store_the_recorder_writes(catalog: Catalog, tmp_path: Path) -> None:
    v1 = catalog.contracts["billing.invoice-issued.v1"]
    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as registry:
        record_reader_sessions(
            registry,
            [
                (QUEUE, "accounting-1", _at(1), _at(4)),
                (f"notification-service.{v1.message_type}", "notify-1", _at(2), None),
                ("someone-else.queue", "adhoc", _at(1), None),  # not a consumer queue of v1
            ],
        )
        sessions = version_sessions(registry, v1, "/", since=START, until=END)

    assert sorted(s.connection_name or "" for s in sessions) == ["accounting-1", "notify-1"]
    assert [r for _, r in _steps(sessions)] == [0, 0, 1, 1, 2, 2, 1, 1]

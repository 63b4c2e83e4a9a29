"""The recorder never stalls on an event its store refuses, and never takes such a moment as clean."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from contract_platform.activity.recorder import ActivityRecorder, _Segment
from contract_platform.errors import StoreError
from contract_platform.evidence.records import BrokerEvent

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


class Store:
    """Refuses the events whose key is in ``poison``; refuses everything when ``down``."""

    url = "memory://"

    def __init__(self, poison: set[str], down: bool = False) -> None:
        self.poison, self.down = poison, down
        self.stored: list[str] = []
        self.gaps: list[tuple[datetime, datetime, str]] = []

    def store_broker_events(self, events: Sequence[BrokerEvent]) -> int:
        if self.down or any(e.key in self.poison for e in events):
            raise StoreError("registry store memory://: storing failed: value too long")
        self.stored += [e.key for e in events]
        return len(events)

    def record_gap(self, start: datetime, end: datetime, reason: str) -> None:
        if self.down:
            raise StoreError("registry store memory://: down")
        self.gaps.append((start, end, reason))


def segment(store: Store) -> _Segment:
    recorder = ActivityRecorder("amqp://guest:guest@127.0.0.1:5672/%2F", store)  # type: ignore[arg-type]
    part = _Segment(recorder, connection=None, broker="test")
    part.batch = [
        BrokerEvent(key, "consumer.created", T0 + timedelta(seconds=n), "/", {}) for n, key in enumerate("abc")
    ]
    return part


def test_an_event_the_store_refuses_becomes_a_gap_at_its_moment_and_the_rest_is_stored() -> None:
    store = Store({"b"})
    assert segment(store)._one_by_one(StoreError("batch refused")) == 2
    assert store.stored == ["a", "c"]
    [(start, end, reason)] = store.gaps
    assert start == end == T0 + timedelta(seconds=1) and "could not be stored" in reason


def test_a_store_that_refuses_everything_is_down_and_the_recorder_reconnects() -> None:
    store = Store(set(), down=True)
    with pytest.raises(StoreError):
        segment(store)._one_by_one(StoreError("batch refused"))
    assert store.stored == [] and store.gaps == []  # nothing acked: the broker redelivers the batch


def test_a_message_some_client_published_into_the_recorders_queue_is_neither_an_event_nor_coverage() -> None:
    from pika import BasicProperties
    from pika.spec import Basic

    store = Store(set())
    part = segment(store)
    part.batch = []
    forged = [
        BasicProperties(headers={"x-contract-platform-marker": f"{part.id}:guessed-nonce:{T0.isoformat()}"}),
        BasicProperties(headers={"queue": "q", "vhost": "/"}),  # an event's headers, not from the event exchange
        BasicProperties(headers=None),
    ]
    for tag, properties in enumerate(forged, 1):
        part._handle(Basic.Deliver(exchange="", routing_key="consumer.deleted", delivery_tag=tag), properties)
    assert part.report.ignored == 3 and part.batch == [] and part.report.covered_until is None

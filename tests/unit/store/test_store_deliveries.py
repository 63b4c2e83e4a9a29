"""Delivery tracing in the registry store, on SQLite and a real PostgreSQL: the watches the recording audits ask
for and the recorder confirms, and traced deliveries kept as reader sessions named by the connection's own
announcement (``store/activity.py``; docs/retirement-audit.md#every-delivery-traced)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.support.databases import BOTH_STORES, registry_on

from contract_platform.evidence.records import BrokerEvent, Delivery
from contract_platform.store import SqlRegistry

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
BROKER_NAME = "10.0.0.7:50412 -> 10.0.0.1:5672"  # the broker's name of a connection: chosen by no client
S = timedelta(seconds=1)


@pytest.fixture(params=BOTH_STORES)
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlRegistry]:
    with registry_on(request, tmp_path, "store_deliveries") as opened:
        yield opened


def delivered(after: timedelta, before: timedelta, count: int = 1, channel: str = "1") -> Delivery:
    return Delivery("/", "billing.v1", BROKER_NAME, channel, "cron", T0 + after, T0 + before, count)


def test_a_steady_reader_keeps_one_session_and_a_new_channel_another(registry: SqlRegistry) -> None:
    registry.store_deliveries([delivered(0 * S, 5 * S, 2)])
    registry.store_deliveries([delivered(5 * S, 10 * S, 3)])  # continues where the last ended
    registry.store_deliveries([delivered(20 * S, 25 * S, 1)])  # a later poll: a session of its own
    registry.store_deliveries([delivered(20 * S, 25 * S, 4, channel="2")])

    found = registry.reader_sessions([("/", "billing.v1")], since=T0, until=T0 + timedelta(minutes=1))

    assert [(s.attached_at, s.detached_at, s.deliveries, s.channel) for s in found] == [
        (T0, T0 + 10 * S, 5, "1"),
        (T0 + 20 * S, T0 + 25 * S, 1, "1"),
        (T0 + 20 * S, T0 + 25 * S, 4, "2"),
    ]
    assert {s.source for s in found} == {"delivery"}
    assert found[0].connection_name == BROKER_NAME and found[0].peer_host == "10.0.0.7"


def test_a_delivery_is_named_by_the_connection_the_broker_announced(registry: SqlRegistry) -> None:
    registry.store_deliveries([delivered(0 * S, 5 * S)])
    registry.store_broker_events(  # stored after the trace: the recorder reads two queues, in no set order
        [
            BrokerEvent(
                "k1",
                "connection.created",
                T0,
                "/",
                {
                    "pid": "<c.1>",
                    "name": BROKER_NAME,
                    "client_name": "month-end\x00poller \u202e",
                    "peer_host": "10.0.0.7",
                    "user": "cron",
                },
            )
        ]
    )

    (found,) = registry.reader_sessions([("/", "billing.v1")], since=T0, until=T0 + timedelta(minutes=1))

    assert found.connection_name == "month-end\x00poller \u202e"
    assert found.describe() == "month-end\x00poller \u202e from 10.0.0.7 as cron"


def test_watches_are_asked_for_confirmed_and_started_anew_when_their_trace_is_lost(registry: SqlRegistry) -> None:
    registry.request_delivery_watches([("/", "q1"), ("/", "q2"), ("other", "q1")], at=T0, traced_from=T0)
    registry.request_delivery_watches([("/", "q1")], at=T0 + 60 * S, traced_from=T0 + 60 * S)  # keeps its start
    registry.confirm_delivery_watches("/", until=T0 + 30 * S)
    registry.confirm_delivery_watches("other", until=None, problem="tracing is off")

    watches = {(w.vhost, w.queue): w for w in registry.delivery_watches()}
    assert watches[("/", "q1")].traced_from == T0 and watches[("/", "q1")].requested_at == T0 + 60 * S
    assert watches[("/", "q2")].confirmed_until == T0 + 30 * S and watches[("/", "q2")].problem is None
    assert watches[("other", "q1")].confirmed_until is None and watches[("other", "q1")].problem == "tracing is off"

    registry.restart_delivery_watches("/", traced_from=T0 + 90 * S, reason="the trace queue was not on the broker")
    (again,) = registry.delivery_watches([("/", "q2")])
    assert (again.traced_from, again.confirmed_until) == (T0 + 90 * S, None)
    assert again.problem == "the trace queue was not on the broker"

    registry.confirm_delivery_watches("/", until=T0 + 60 * S)  # before the trace started anew: confirms nothing
    assert registry.delivery_watches([("/", "q2")])[0].confirmed_until is None


def test_a_watch_no_audit_asked_for_within_the_retention_is_forgotten(registry: SqlRegistry) -> None:
    registry.request_delivery_watches([("/", "old")], at=T0, traced_from=T0)
    registry.request_delivery_watches([("/", "asked")], at=T0 + timedelta(days=100), traced_from=T0)

    registry.prune_broker_activity(T0 + timedelta(days=10))

    assert [w.queue for w in registry.delivery_watches()] == ["asked"]

"""``contractctl record-activity --status`` on the real broker: the events parked in ``<queue>.parked`` and the
delivery watches per virtual host, with what clients chose (vhost names, problems quoting names) escaped."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pika
import pytest
from tests.support import broker
from tests.support.cli import run_cli
from tests.support.waiting import wait_until

from contract_platform.activity.queues import parked_queue
from contract_platform.amqp import open_connection
from contract_platform.amqp.connection import close_quietly
from contract_platform.store import SqlRegistry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

HOSTILE = "evil\u202ename\x1b[31m"


def test_status_shows_the_parked_events_and_the_delivery_watches_escaped(capsys: Any, tmp_path: Any) -> None:
    queue = f"{broker.prefix()}recorder"
    registry_url = f"sqlite:///{tmp_path / 'registry.db'}"
    now = datetime.now(UTC)
    with SqlRegistry.open(registry_url) as registry:
        registry.request_delivery_watches(
            [("/", "orders.v1"), ("/", "orders.v1.audit"), (HOSTILE, "x")], at=now, traced_from=now
        )
        registry.confirm_delivery_watches("/", until=now + timedelta(seconds=1))
        registry.confirm_delivery_watches(HOSTILE, until=None, problem=f"queue {HOSTILE} is not there")
    connection = open_connection(broker.url_of())
    try:
        channel = connection.channel()
        channel.queue_declare(parked_queue(queue), durable=True)
        for _ in range(2):
            channel.basic_publish("", parked_queue(queue), b"{}", pika.BasicProperties(delivery_mode=2))

        def counted() -> dict[str, Any] | None:  # the management API counts after its statistics interval
            code, out, _ = run_cli(
                capsys, "record-activity", "--status", "--registry", registry_url, "--queue", queue, "--format", "json"
            )
            found: dict[str, Any] = json.loads(out)
            return found if code == 1 and found["parkedWaiting"] == 2 else None

        document = wait_until(counted, 30, 0.5, what="the parked events counted by --status")
        assert document is not None
        assert document["deliveryWatches"] == [
            {"vhost": "/", "queues": 2, "confirmedUntil": (now + timedelta(seconds=1)).isoformat(), "problem": None},
            {"vhost": HOSTILE, "queues": 1, "confirmedUntil": None, "problem": f"queue {HOSTILE} is not there"},
        ]
        code, text, _ = run_cli(capsys, "record-activity", "--status", "--registry", registry_url, "--queue", queue)
        assert code == 1  # nothing records
        assert f"queue {parked_queue(queue)}: 2 event(s) the store refused, parked" in text
        assert "delivery trace of vhost /: 2 queue(s) watched, confirmed until " in text
        escaped = "evil\\u202ename\\x1b[31m"
        assert (
            f"delivery trace of vhost {escaped}: 1 queue(s) watched, confirmed until not yet; "
            f"queue {escaped} is not there"
        ) in text
        assert "\u202e" not in text and "\x1b" not in text
    finally:
        broker.delete_names(broker.url_of(), queues=[parked_queue(queue)])
        close_quietly(connection)

"""Replay's in-flight messages when producers send what they should not, on the real broker (a vhost of its own).

What a user relies on: every queued message of the version is either judged or reported unreadable with a
reason, a version whose queues hold unreadable messages is never "confirmed" on them, and forged headers (a
table nested hundreds deep, an ``x-death`` whose ``exchange`` is a table) are bounded like bodies: replay
answers, it does not crash (docs/replay.md).
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import pika
import pytest
from tests.support import broker

from contract_platform.amqp import ManagementClient, open_connection, plan_topology
from contract_platform.amqp.connection import close_quietly
from contract_platform.amqp.topology import provision
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.envelope import amqp_properties
from contract_platform.replay.decision import Decision, StaticVerdict
from contract_platform.replay.inflight import in_flight_records
from contract_platform.replay.judge import ReplayJudge, ReplayPlan, Tally
from contract_platform.replay.run import ReplayResult, ReplayTarget, conclude, in_flight_part

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

ORDER = "order.order-created.v1"
FIXTURE = (
    Path(__file__).resolve().parents[3]
    / "contracts/order/order-created/v1/fixtures/valid/eur-open-order-from-quote-417.json"
)


def order_contract(catalog: Catalog) -> Contract:
    contract = catalog.contracts[ORDER]
    return replace(contract, topology=replace(contract.topology, queue_type="classic"))


def envelope(number: int) -> dict[str, Any]:
    document = json.loads(FIXTURE.read_text(encoding="utf-8"))
    document["metadata"]["messageId"] = f"m-{number}"
    return document


def good(number: int) -> tuple[bytes, dict[str, Any]]:
    document = envelope(number)
    return json.dumps(document).encode(), amqp_properties(document)


def replay_queued(catalog: Catalog, contract: Contract, url: str, bodies: list[tuple[bytes, dict[str, Any]]]) -> Any:
    """Publish ``bodies`` (body, properties) to the version's exchange, then replay what is in flight."""
    connection = open_connection(url)
    try:
        provision(connection, plan_topology(contract), management=ManagementClient.from_amqp_url(url))
        channel = connection.channel()
        channel.confirm_delivery()
        transport = contract.transport
        for body, properties in bodies:
            channel.basic_publish(transport.exchange, transport.routing_key, body, pika.BasicProperties(**properties))
        broker.wait_for_depth(url, contract.consumers[0].queue, len(bodies))
        found = in_flight_records(connection, contract, management=ManagementClient.from_amqp_url(url))
    finally:
        close_quietly(connection)
    plan = ReplayPlan(ORDER, ORDER, current_schema=contract.payload_schema)
    part = in_flight_part(ReplayJudge(catalog, plan), found)
    target = ReplayTarget(contract, plan, StaticVerdict.COMPATIBLE, False)
    return part, conclude(target, Tally(), date(2026, 11, 20), date(2026, 11, 21), part)


def test_unreadable_queued_messages_are_counted_with_their_reasons_and_the_version_is_not_confirmed(
    vhost: str, catalog: Catalog
) -> None:
    contract = order_contract(catalog)
    huge = envelope(2)
    huge["payload"]["note"] = "x" * 5_000_000
    typed = {"type": ORDER, "message_id": "m-bad", "delivery_mode": 2}
    bodies = [
        good(1),
        (json.dumps(huge).encode(), amqp_properties(huge)),
        (b"\xff\xfe not UTF-8", typed),
        (b"[" * 10_000 + b"]" * 10_000, typed),
        good(5),
    ]

    part, result = replay_queued(catalog, contract, broker.url_of(vhost), bodies)

    queue = contract.consumers[0].queue
    row = {q["queue"]: q for q in part.queues}[queue]
    judged, _rejected = part.rejected_by_queue[queue]
    assert (row["matching"], judged, row["unreadable"]) == (5, 3, 2)  # every message: judged or unreadable
    assert result.decision.decision is Decision.UNKNOWN
    assert any(f"2 messages in queue {queue} could not be read" in reason for reason in result.decision.reasons)
    reasons = " ".join(r["reason"] for r in result.figures()["in_flight"]["unreadable_reasons"])
    assert "not UTF-8" in reasons and "nested too deeply" in reasons


def test_forged_headers_are_bounded_and_replay_answers(vhost: str, catalog: Catalog) -> None:
    contract = order_contract(catalog)
    deep: Any = "leaf"
    for _ in range(300):
        deep = {"k": deep}
    forged_body, forged = good(2)
    forged["headers"] = {**forged.get("headers", {}), "x-trace": deep}
    death_body, death = good(3)
    death["headers"] = {
        **death.get("headers", {}),
        "x-death": [{"exchange": {"forged": "table"}, "routing-keys": [{"also": "a table"}], "queue": "q", "count": 1}],
    }

    part, result = replay_queued(
        catalog, contract, broker.url_of(vhost), [good(1), (forged_body, forged), (death_body, death)]
    )

    queue = contract.consumers[0].queue
    row = {q["queue"]: q for q in part.queues}[queue]
    judged, _rejected = part.rejected_by_queue[queue]
    assert (row["matching"], judged, row["unreadable"]) == (3, 2, 1)
    assert isinstance(result, ReplayResult) and result.decision.decision is Decision.UNKNOWN
    [reason] = [r["reason"] for r in result.figures()["in_flight"]["unreadable_reasons"]]
    assert "deeper than" in reason and "/properties/headers/x-trace" in reason

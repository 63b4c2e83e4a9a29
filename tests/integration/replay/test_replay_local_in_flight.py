"""In-process replay reads the broker's queues as the Spark job does (docs/replay.md#engines).

Real broker, a virtual host of its own, the scenario of test_replay_forward_in_flight.py: a FORWARD-compatible
narrowing that messages still queued would fail. ``contractctl check --replay`` runs it in its own process
when the archive is small; the in-flight part is the same code (``replay.run.replay_versions``).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pika
import pytest
from benchmarks.generate_archive import archive_record
from tests.integration.replay import test_replay_forward_in_flight as forward
from tests.support import broker

from contract_platform.amqp import ManagementClient, open_connection, plan_topology
from contract_platform.amqp.connection import close_quietly
from contract_platform.amqp.topology import provision
from contract_platform.catalog import load_catalog
from contract_platform.envelope import amqp_properties
from contract_platform.replay.decision import Decision
from contract_platform.replay.local import replay_locally
from contract_platform.replay.run import replay_targets

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def test_queued_messages_refuse_the_narrowing_in_process_with_the_queue_named(
    vhost: str, catalog_dir: Path, tmp_path: Path
):
    catalog_path, old = forward.forward_narrowing(catalog_dir, tmp_path / "contracts")
    catalog = load_catalog(catalog_path)
    contract = catalog.get(forward.ORDER)
    assert contract is not None
    url = broker.url_of(vhost)
    connection = open_connection(url)
    try:
        provision(connection, plan_topology(contract), management=ManagementClient.from_amqp_url(url))
        template = json.loads((catalog_path / forward.FIXTURE).read_text(encoding="utf-8"))
        channel = connection.channel()
        for quote in ["Q-2026-000417"] * 3 + ["Q-2025-000999"]:  # one quote from last year
            envelope = json.loads(json.dumps(template))
            envelope["metadata"]["messageId"] = str(uuid.uuid4())
            envelope["payload"]["quoteId"] = quote
            body = archive_record(contract, envelope, datetime.now(UTC).isoformat())["body"]
            properties = pika.BasicProperties(**amqp_properties(envelope))
            channel.basic_publish(
                contract.transport.exchange, contract.transport.routing_key, body.encode(), properties
            )
        queue = contract.consumers[0].queue
        broker.wait_for_depth(url, queue, 4)
    finally:
        close_quietly(connection)
    empty = tmp_path / "archive"
    empty.mkdir()
    targets = replay_targets(
        catalog, lambda c: [("1.2.0", old)] if c.message_type == forward.ORDER else [], [forward.ORDER]
    )

    (result,) = replay_locally(targets, str(empty), str(catalog_path), broker_url=url)

    assert result.decision.decision is Decision.REFUSED
    assert f"1 of 4 messages in queue {queue} rejected (25.00%)" in result.decision.reasons
    assert {q["queue"]: q["rejected"] for q in result.figures()["in_flight"]["queues"]}[queue] == 1
    assert broker.depth(url, queue)[0] == 4  # peeked, not taken

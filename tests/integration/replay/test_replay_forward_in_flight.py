"""A FORWARD-compatible narrowing that messages still queued would fail is refused, naming the queue.

Real broker, a virtual host of its own; no archive: the evidence is what waits in the consumer queues,
read with the non-destructive peek (docs/replay.md).
"""

from __future__ import annotations

import json
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pika
import pytest
import yaml
from benchmarks.generate_archive import archive_record
from tests.support import broker

from contract_platform.amqp import ManagementClient, open_connection, plan_topology
from contract_platform.amqp.connection import close_quietly
from contract_platform.amqp.topology import provision
from contract_platform.catalog import load_catalog
from contract_platform.envelope import amqp_properties
from contract_platform.replay.decision import Decision, StaticVerdict
from spark_jobs import replay as job

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ORDER = "order.order-created.v1"
FIXTURE = "order/order-created/v1/fixtures/valid/eur-open-order-from-quote-417.json"
QUOTE_PATTERN = "^Q-2026-[0-9]{6}$"  # only this year's quotes: FORWARD-compatible (pattern-added narrows)


def forward_narrowing(source: Path, target: Path) -> tuple[Path, dict[str, Any]]:
    """order.order-created.v1 1.3.0 under FORWARD with a quoteId pattern, classic queues; the 1.2.0 schema."""
    shutil.copytree(source, target)
    folder = target / "order" / "order-created" / "v1"
    old = json.loads((folder / "payload.schema.json").read_text(encoding="utf-8"))
    new = json.loads(json.dumps(old))
    new["properties"]["quoteId"]["pattern"] = QUOTE_PATTERN
    (folder / "payload.schema.json").write_text(json.dumps(new), encoding="utf-8")
    raw = yaml.safe_load((folder / "contract.yaml").read_text(encoding="utf-8"))
    raw.update(version="1.3.0", compatibility="FORWARD", topology={"queueType": "classic"})
    (folder / "contract.yaml").write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return target, old


def test_queued_messages_the_narrowed_schema_rejects_refuse_it_with_the_queue_named(
    spark, vhost: str, catalog_dir: Path, tmp_path: Path
):
    catalog_path, old = forward_narrowing(catalog_dir, tmp_path / "contracts")
    catalog = load_catalog(catalog_path)
    contract = catalog.get(ORDER)
    assert contract is not None
    url = broker.url_of(vhost)
    connection = open_connection(url)
    try:
        provision(connection, plan_topology(contract), management=ManagementClient.from_amqp_url(url))
        template = json.loads((catalog_path / FIXTURE).read_text(encoding="utf-8"))
        channel = connection.channel()
        for quote in ["Q-2026-000417"] * 5 + ["Q-2025-000999"] * 2:  # two quotes from last year
            envelope = json.loads(json.dumps(template))
            envelope["metadata"]["messageId"] = str(uuid.uuid4())
            envelope["payload"]["quoteId"] = quote
            record = archive_record(contract, envelope, datetime.now(UTC).isoformat())
            properties = amqp_properties(envelope)
            channel.basic_publish(
                contract.transport.exchange,
                contract.transport.routing_key,
                record["body"].encode("utf-8"),
                pika.BasicProperties(**properties),
            )
        queue = contract.consumers[0].queue
        broker.wait_for_depth(url, queue, 7)
    finally:
        close_quietly(connection)

    empty = tmp_path / "archive"  # nothing archived yet: the queues are the only traffic
    empty.mkdir()
    (result,) = job.replay_archive(
        spark,
        str(empty),
        str(catalog_path),
        catalog,
        lambda c: [("1.2.0", old)] if c.message_type == ORDER else [],
        only=[ORDER],
        broker_url=url,
    )

    assert result.target.static is StaticVerdict.COMPATIBLE
    assert result.decision.decision is Decision.REFUSED
    assert f"2 of 7 messages in queue {queue} rejected (28.57%)" in result.decision.reasons
    figures = result.figures()
    assert figures["in_flight"]["rejected"] == 2 * len(contract.consumers)
    assert {q["queue"]: q["rejected"] for q in figures["in_flight"]["queues"]}[queue] == 2
    assert figures["top_pointers"][0]["pointer"] == "/payload/quoteId"
    assert broker.depth(url, queue)[0] == 7  # peeked, not taken

"""The readers perspective on the real broker (docs/consumer-impact.md#the-readers-perspective).

order.order-created.v1 asks for ``compatibility: {mode: BACKWARD, perspective: readers}`` and narrows
``unitPrice``, which neither declared consumer reads. The broker activity recorder runs into the test's
registry. While a reader the catalogue does not declare (its own queue bound to the version's exchange) is
attached, the perspective refuses and names it; once it has left and an observation window has passed with
the declared consumers only, the same change is accepted.
"""

from __future__ import annotations

import copy
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pika
import pytest
from tests.support.broker import url_of, wait_for_consumer
from tests.support.contracts import with_prefix
from tests.support.waiting import wait_until

from contract_platform.amqp import open_connection, plan_topology, provision
from contract_platform.catalog.model import Catalog
from contract_platform.checks import compatibility_of
from contract_platform.impact import Condition
from contract_platform.retirement.readers_seen import ReadersSource
from contract_platform.store import SqlRegistry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

ORDER = "order.order-created.v1"
WINDOW = timedelta(seconds=3)  # the observation window the perspective looks back over


def _stranger(rabbitmq_url: str, queue: str) -> Any:
    """A reader the catalogue does not declare: a notebook consuming a queue of its own."""
    params = pika.URLParameters(rabbitmq_url)
    params.client_properties = {"connection_name": "pricing-notebook"}
    connection = pika.BlockingConnection(params)
    channel = connection.channel()
    channel.basic_consume(queue, on_message_callback=lambda *_: None, auto_ack=True)
    return connection


def test_an_undeclared_reader_refuses_the_readers_perspective_until_it_has_gone(
    catalog: Catalog, registry: SqlRegistry, recording: datetime, connection: Any, rabbitmq_url: str, prefix: str
) -> None:
    current = with_prefix(catalog.get(ORDER), prefix)
    narrowed = copy.deepcopy(current.payload_schema)
    narrowed["$defs"]["OrderLine"]["properties"]["unitPrice"]["maxLength"] = 40
    candidate = replace(
        current,
        version="1.3.0",
        payload_schema=narrowed,
        compatibility_perspective="readers",
        retirement=replace(current.retirement, observation_span=WINDOW),
    )
    provision(connection, plan_topology(candidate))
    adhoc = f"{prefix}pricing-adhoc.order-created"
    channel = connection.channel()
    channel.queue_declare(adhoc, durable=False, auto_delete=False)
    channel.queue_bind(adhoc, candidate.transport.exchange, routing_key=candidate.transport.routing_key)
    stranger = _stranger(url_of("/"), adhoc)
    wait_for_consumer("/", adhoc)
    wait_until(lambda: datetime.now(UTC) - recording > WINDOW, 30, 0.2, what="a recorded observation window")

    def judged() -> Any:
        with ReadersSource(registry, lambda: open_connection(rabbitmq_url)) as readers:
            return compatibility_of(candidate, [("1.2.0", current.payload_schema)], catalog=catalog, readers=readers)

    try:
        refused = judged()
    finally:
        stranger.close()

    assert not refused.ok and not refused.compatible
    undeclared = [f for f in refused.perspective.failures if f.condition == Condition.UNDECLARED_READER]
    assert undeclared, refused.perspective.message
    assert "pricing-notebook" in undeclared[0].message and adhoc in undeclared[0].message
    assert "publish them as a new major version 2.0.0" in refused.semver_problems[0]  # today's verdict stands

    time.sleep(WINDOW.total_seconds() + 1)  # the stranger's session ends before the next window starts
    accepted = judged()

    assert accepted.accepted_by_readers and accepted.ok, accepted.perspective.message
    assert accepted.impact is not None and accepted.impact.broken == []

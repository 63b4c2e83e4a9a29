"""The guarded publisher on the real broker: invalid envelopes never leave the service, valid ones arrive stamped
as the envelope standard says, confirmed in batches, and a refusal by the broker reaches the caller."""

from __future__ import annotations

import copy
import json

import pytest
from tests.support.broker import drain, ready

from contract_platform.amqp import open_connection
from contract_platform.amqp.connection import close_quietly
from contract_platform.client import ContractViolation, GuardedPublisher
from contract_platform.errors import BrokerUnavailable, PublishRefused

pytestmark = pytest.mark.integration

INVOICE_V2 = "billing.invoice-issued.v2"
QUEUE = "accounting-service.billing.invoice-issued.v2"


def valid(bundle, index: int = 0):
    return copy.deepcopy(list(bundle.fixtures(INVOICE_V2, valid=True))[index].document)


def test_valid_envelopes_arrive_with_the_properties_the_standard_mirrors(vhost_url, billing):
    envelopes = [f.document for f in billing.fixtures(INVOICE_V2, valid=True)]

    with GuardedPublisher(billing, vhost_url) as publisher:
        results = publisher.publish_many(envelopes)

    connection = open_connection(vhost_url)
    try:
        arrived = drain(connection, QUEUE)
    finally:
        close_quietly(connection)
    assert [r.message_id for r in results] == [e["metadata"]["messageId"] for e in envelopes]
    assert [json.loads(body) for _, body in arrived] == envelopes
    properties, _ = arrived[0]
    metadata = envelopes[0]["metadata"]
    assert (properties.message_id, properties.correlation_id, properties.type) == (
        metadata["messageId"],
        metadata["correlationId"],
        INVOICE_V2,
    )
    assert (properties.content_type, properties.delivery_mode) == ("application/json", 2)
    assert properties.timestamp == 1782900931  # publishedAt 2026-07-01T10:15:31Z
    assert {k: v for k, v in properties.headers.items() if not k.startswith("x-")} == {  # x-: the broker's
        "schema-version": 2,
        "message-version": metadata["messageVersion"],
        "producer": "billing-service",
        "tenant-id": metadata["tenantId"],
        "trace-id": metadata["traceId"],
    }


def test_an_invalid_envelope_fails_fast_and_nothing_reaches_the_broker(vhost_url, billing):
    broken = valid(billing)
    broken["payload"]["amountMinorUnits"] = "129.95"

    with GuardedPublisher(billing, vhost_url) as publisher:
        with pytest.raises(ContractViolation) as caught:
            publisher.publish_many([valid(billing, 1), broken])  # checked first: the valid one is not sent either
        assert publisher.stats.published == 0
        publisher.publish(valid(billing, 2)).result(timeout=30)

    assert (caught.value.pointer, caught.value.keyword, caught.value.reason) == (
        "/payload/amountMinorUnits",
        "type",
        "PAYLOAD_INVALID",
    )
    assert ready(vhost_url, QUEUE) == 1
    assert publisher.counters.peek()[INVOICE_V2].by_reason == {"PAYLOAD_INVALID": 1}


def test_many_publishes_are_in_flight_and_confirmed_in_batches(vhost_url, billing):
    template = valid(billing)
    envelopes = []
    for number in range(2000):
        envelope = copy.deepcopy(template)
        envelope["metadata"]["messageId"] = f"c0ffee00-0000-4000-8000-{number:012d}"
        envelopes.append(envelope)

    with GuardedPublisher(billing, vhost_url, max_in_flight=500) as publisher:
        futures = [publisher.publish(envelope) for envelope in envelopes]
        publisher.flush(timeout=120)

    assert all(f.result().routing_key == "billing.invoice.issued.v2" for f in futures)
    assert publisher.stats.confirmed == 2000
    assert publisher.stats.confirm_frames < 2000  # a confirm covers many messages: not one round trip each
    assert ready(vhost_url, QUEUE) == 2000


def test_a_message_no_queue_would_receive_is_refused_to_the_caller(vhost_url, billing):
    connection = open_connection(vhost_url)
    try:
        connection.channel().queue_unbind(QUEUE, "billing.events", "billing.invoice.issued.v2")
        channel = connection.channel()
        channel.queue_unbind(
            "notification-service.billing.invoice-issued.v2", "billing.events", "billing.invoice.issued.v2"
        )
        channel.queue_unbind("archive.billing.events", "billing.events", "#")
    finally:
        close_quietly(connection)

    with GuardedPublisher(billing, vhost_url) as publisher, pytest.raises(PublishRefused) as caught:
        publisher.publish_many([valid(billing)])

    assert "no queue is bound to billing.events with billing.invoice.issued.v2" in str(caught.value)
    assert "provision the topology first" in str(caught.value)


def test_a_publisher_that_cannot_reach_the_broker_says_so_at_start(billing):
    publisher = GuardedPublisher(billing, "amqp://guest:guest@127.0.0.1:1/%2F", open_timeout=10)

    with pytest.raises(BrokerUnavailable) as caught:
        publisher.start()

    assert "127.0.0.1:1" in str(caught.value) and "guest:guest" not in str(caught.value)


def test_a_missing_exchange_is_refused_and_the_publisher_recovers_once_it_exists(vhost_url, billing):
    connection = open_connection(vhost_url)
    try:
        connection.channel().exchange_delete("billing.events")
        with GuardedPublisher(billing, vhost_url) as publisher:
            with pytest.raises(PublishRefused, match="provision the topology first"):
                publisher.publish_many([valid(billing)])
            channel = connection.channel()
            channel.exchange_declare("billing.events", "topic", durable=True)
            channel.queue_bind(QUEUE, "billing.events", "billing.invoice.issued.v2")
            publisher.publish_many([valid(billing, 1)])
    finally:
        close_quietly(connection)

    assert ready(vhost_url, QUEUE) == 1

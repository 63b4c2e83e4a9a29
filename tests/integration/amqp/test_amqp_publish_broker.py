"""Publishing against the real broker: what arrives where, with which properties, and what is refused."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from tests.support import broker

from contract_platform.amqp import Publisher, archive_queue_name, plan_topology, provision
from contract_platform.amqp.inspection import passive_queue
from contract_platform.catalog.model import Contract
from contract_platform.envelope import EnvelopeValidator
from contract_platform.errors import BrokerUnavailable, EnvelopeError, PublishRefused

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

Envelope = Callable[..., dict[str, Any]]


def _get(connection: Any, queue: str, wait: float = 5.0) -> tuple[Any, Any, bytes]:
    """One message from ``queue`` (acked), waiting up to ``wait`` seconds for it to arrive."""
    return broker.get_one(connection, queue, wait)


def _depths(connection: Any, contract: Contract) -> dict[str, tuple[int, int] | None]:
    return {q.name: passive_queue(connection, q.name) for q in plan_topology(contract).queues}


@pytest.fixture
def provisioned(connection: Any, contract: Contract) -> Contract:
    provision(connection, plan_topology(contract))
    return contract


def test_valid_envelope_arrives_in_the_consumer_queue_and_the_archive_with_its_properties(
    connection: Any, provisioned: Contract, validator: EnvelopeValidator, envelope: Envelope
) -> None:
    message = envelope()
    result = Publisher(connection, validator).publish(message)

    assert (result.exchange, result.routing_key) == (provisioned.transport.exchange, provisioned.transport.routing_key)
    assert result.message_id == message["metadata"]["messageId"]
    expected_body = json.dumps(message, separators=(",", ":")).encode("utf-8")
    assert result.body_bytes == len(expected_body)
    for queue in (provisioned.consumers[0].queue, archive_queue_name(provisioned.transport.exchange)):
        method, props, body = _get(connection, queue)
        assert body == expected_body
        assert method.routing_key == provisioned.transport.routing_key
        assert method.exchange == provisioned.transport.exchange
        assert props.message_id == message["metadata"]["messageId"]
        assert props.correlation_id == message["metadata"]["correlationId"]
        assert props.type == "billing.invoice-issued.v1"
        assert props.content_type == "application/json"
        assert props.content_encoding == "utf-8"
        assert props.delivery_mode == 2
        assert props.timestamp == 1782900931  # 2026-07-01T10:15:31Z
        assert props.app_id == "billing-service"
        # quorum queues add x-delivery-count on delivery; the rest is exactly the envelope's
        assert {k: v for k, v in props.headers.items() if not k.startswith("x-")} == {
            "schema-version": 1,
            "message-version": "1.0.0",
            "producer": "billing-service",
            "tenant-id": "tnt-northwind",
            "trace-id": "4bf92f3577b34da6a3ce929d0e0e4736",
        }


def test_unroutable_message_is_refused_not_dropped(
    connection: Any, contract: Contract, validator: EnvelopeValidator, envelope: Envelope
) -> None:
    connection.channel().exchange_declare(contract.transport.exchange, exchange_type="topic", durable=True)

    with pytest.raises(PublishRefused) as caught:
        Publisher(connection, validator).publish(envelope())

    assert (
        f"no queue is bound to {contract.transport.exchange} with {contract.transport.routing_key}: "
        "provision the topology first"
    ) in str(caught.value)


def test_missing_exchange_is_refused_and_the_publisher_recovers_once_it_exists(
    connection: Any, contract: Contract, validator: EnvelopeValidator, envelope: Envelope
) -> None:
    publisher = Publisher(connection, validator)
    with pytest.raises(PublishRefused, match=f"exchange {contract.transport.exchange} does not exist"):
        publisher.publish(envelope())

    provision(connection, plan_topology(contract))
    publisher.publish(envelope())  # the channel the broker closed was replaced

    assert passive_queue(connection, contract.consumers[0].queue) == (1, 0)


def test_invalid_envelope_is_refused_and_nothing_is_published(
    connection: Any, provisioned: Contract, validator: EnvelopeValidator, envelope: Envelope
) -> None:
    before = _depths(connection, provisioned)
    bad = envelope(amount=129.95)

    with pytest.raises(EnvelopeError) as caught:
        Publisher(connection, validator).publish(bad)

    assert ("/payload/amount", "type: 129.95 is not of type 'string'") in caught.value.errors
    assert "nothing was published" in str(caught.value)
    assert _depths(connection, provisioned) == before


def test_publish_many_sends_all_or_none_validated_up_front(
    connection: Any, provisioned: Contract, validator: EnvelopeValidator, envelope: Envelope
) -> None:
    publisher = Publisher(connection, validator)
    queue = provisioned.consumers[0].queue

    with pytest.raises(EnvelopeError):
        publisher.publish_many([envelope(), envelope(currency="eur"), envelope()])
    assert passive_queue(connection, queue) == (0, 0)

    results = publisher.publish_many([envelope(invoiceId=f"inv-{i}") for i in range(5)])

    assert len({r.message_id for r in results}) == 5
    assert passive_queue(connection, queue) == (5, 0)


def test_publisher_from_url_opens_and_closes_its_own_connection(
    broker_url: str, provisioned: Contract, connection: Any, validator: EnvelopeValidator, envelope: Envelope
) -> None:
    with Publisher(broker_url, validator) as publisher:
        publisher.publish(envelope())
        owned = publisher._connection
        assert owned.is_open
    assert owned.is_closed
    assert passive_queue(connection, provisioned.consumers[0].queue) == (1, 0)


def test_publishing_on_a_closed_connection_is_broker_unavailable(
    broker_url: str, provisioned: Contract, validator: EnvelopeValidator, envelope: Envelope
) -> None:
    from contract_platform.amqp import open_connection

    own = open_connection(broker_url)
    publisher = Publisher(own, validator)
    publisher.publish(envelope())
    own.close()

    with pytest.raises(BrokerUnavailable, match="retry"):
        publisher.publish(envelope())


def test_retry_queue_dead_letters_back_to_the_consumer_queue_after_its_ttl(
    connection: Any, provisioned: Contract
) -> None:
    queue = provisioned.consumers[0].queue
    retry = f"{queue}.retry.1s"
    channel = connection.channel()
    channel.confirm_delivery()
    channel.basic_publish(f"{provisioned.transport.exchange}.dlx", retry, b'{"retry": 1}')
    assert passive_queue(connection, retry) == (1, 0)

    method, props, body = _get(connection, queue, wait=10)

    assert body == b'{"retry": 1}'
    assert props.headers["x-death"][0]["queue"] == retry
    assert props.headers["x-death"][0]["reason"] == "expired"
    assert passive_queue(connection, retry) == (0, 0)


def test_rejected_message_goes_to_the_dlq_of_its_queue(
    connection: Any, provisioned: Contract, validator: EnvelopeValidator, envelope: Envelope
) -> None:
    queue = provisioned.consumers[0].queue
    Publisher(connection, validator).publish(envelope())
    channel = connection.channel()
    method, _, _ = channel.basic_get(queue, auto_ack=False)
    assert method is not None

    channel.basic_reject(method.delivery_tag, requeue=False)

    _, props, _ = _get(connection, f"{queue}.dlq")
    assert props.headers["x-death"][0]["queue"] == queue
    assert props.headers["x-death"][0]["reason"] == "rejected"
    assert passive_queue(connection, queue) == (0, 0)

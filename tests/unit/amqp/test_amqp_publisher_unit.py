"""Publisher without a broker: properties, body, validation first, and how broker answers are mapped."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pika.exceptions as px
import pytest

from contract_platform.amqp import Publisher, basic_properties, encode_body
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.envelope import EnvelopeValidator
from contract_platform.errors import BrokerUnavailable, EnvelopeError, PublishRefused

ENVELOPE_SCHEMA = Path(__file__).resolve().parents[3] / "contracts" / "envelope" / "envelope.v1.schema.json"


def _envelope(**metadata: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "messageId": "c0ffee00-1234-4abc-8def-0123456789ab",
            "messageType": "billing.invoice-issued.v1",
            "schemaVersion": 1,
            "messageVersion": "1.2.0",
            "producer": "billing-service",
            "occurredAt": "2026-07-01T10:15:30Z",
            "publishedAt": "2026-07-01T10:15:31Z",
            "correlationId": "8c1d6f0e",
            "traceId": "4bf92f3577b34da6a3ce929d0e0e4736",
            "tenantId": "tnt-northwind",
        }
        | metadata,
        "payload": {"invoiceId": "inv-1", "amount": "12.50 €"},
    }


class FakeChannel:
    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error
        self.is_open = True
        self.confirms = False
        self.published: list[tuple[Any, ...]] = []

    def confirm_delivery(self) -> None:
        self.confirms = True

    def basic_publish(self, exchange: str, routing_key: str, body: bytes, properties: Any, mandatory: bool) -> None:
        if self.error is not None:
            raise self.error
        self.published.append((exchange, routing_key, body, properties, mandatory))

    def close(self) -> None:
        self.is_open = False


class FakeConnection:
    def __init__(self, channel: FakeChannel) -> None:
        self._channel = channel
        self.is_open = True
        credentials = SimpleNamespace(username="svc", password="hunter2-secret")
        self._impl = SimpleNamespace(
            params=SimpleNamespace(host="rabbit", port=5672, virtual_host="/", credentials=credentials)
        )

    def channel(self) -> FakeChannel:
        return self._channel


@pytest.fixture
def validator(make_contract: Callable[..., Contract], tmp_path: Path) -> EnvelopeValidator:
    contract = make_contract()
    schema = json.loads(ENVELOPE_SCHEMA.read_text())
    return EnvelopeValidator(Catalog(tmp_path, schema, {contract.message_type: contract}))


def test_basic_properties_mirror_the_envelope() -> None:
    props = basic_properties(_envelope())

    assert props.message_id == "c0ffee00-1234-4abc-8def-0123456789ab"
    assert props.correlation_id == "8c1d6f0e"
    assert props.type == "billing.invoice-issued.v1"
    assert (props.content_type, props.content_encoding) == ("application/json", "utf-8")
    assert props.delivery_mode == 2
    assert props.timestamp == 1782900931
    assert props.app_id == "billing-service"
    assert props.headers == {
        "schema-version": 1,
        "message-version": "1.2.0",
        "producer": "billing-service",
        "tenant-id": "tnt-northwind",
        "trace-id": "4bf92f3577b34da6a3ce929d0e0e4736",
    }


def test_optional_metadata_is_left_out_of_the_headers() -> None:
    envelope = _envelope()
    del envelope["metadata"]["tenantId"], envelope["metadata"]["traceId"]

    assert set(basic_properties(envelope).headers) == {"schema-version", "message-version", "producer"}


def test_body_is_compact_utf8_json() -> None:
    body = encode_body(_envelope())

    assert b", " not in body and b": " not in body
    assert "12.50 €".encode() in body
    assert json.loads(body) == _envelope()


def test_valid_envelope_goes_to_the_contract_exchange_with_mandatory_and_confirms(
    validator: EnvelopeValidator,
) -> None:
    channel = FakeChannel()

    result = Publisher(FakeConnection(channel), validator).publish(_envelope())

    assert channel.confirms
    [(exchange, routing_key, body, props, mandatory)] = channel.published
    assert (exchange, routing_key, mandatory) == ("billing.events", "billing.invoice.issued.v1", True)
    assert body == encode_body(_envelope())
    assert props.message_id == result.message_id == "c0ffee00-1234-4abc-8def-0123456789ab"
    assert result.body_bytes == len(body)


@pytest.mark.parametrize(
    ("envelope", "pointer"),
    [
        (_envelope(messageType="billing.unknown-thing.v1"), "/metadata/messageType"),
        (_envelope(publishedAt="yesterday"), "/metadata/publishedAt"),
        ({"metadata": {}, "payload": {}}, "/metadata"),
    ],
)
def test_invalid_envelope_raises_before_anything_is_sent(
    validator: EnvelopeValidator, envelope: dict[str, Any], pointer: str
) -> None:
    channel = FakeChannel()

    with pytest.raises(EnvelopeError) as caught:
        Publisher(FakeConnection(channel), validator).publish(envelope)

    assert pointer in [p for p, _ in caught.value.errors]
    assert channel.published == []


def test_oversize_body_is_refused_before_sending(make_contract: Callable[..., Contract], tmp_path: Path) -> None:
    contract = make_contract(max_body_bytes=100)
    validator = EnvelopeValidator(
        Catalog(tmp_path, json.loads(ENVELOPE_SCHEMA.read_text()), {contract.message_type: contract})
    )
    channel = FakeChannel()

    with pytest.raises(EnvelopeError, match="over the 100 bytes"):
        Publisher(FakeConnection(channel), validator).publish(_envelope())
    assert channel.published == []


@pytest.mark.parametrize(
    ("error", "expected", "text"),
    [
        (px.UnroutableError([]), PublishRefused, "no queue is bound to billing.events with billing.invoice.issued.v1"),
        (px.NackError([]), PublishRefused, "nacked"),
        (px.ChannelClosedByBroker(404, "NOT_FOUND - no exchange"), PublishRefused, "does not exist"),
        (px.StreamLostError("Transport indicated EOF"), BrokerUnavailable, "connection to the broker was lost"),
    ],
)
def test_broker_answers_are_mapped_and_name_the_broker_without_its_password(
    validator: EnvelopeValidator, error: BaseException, expected: type[Exception], text: str
) -> None:
    with pytest.raises(expected) as caught:
        Publisher(FakeConnection(FakeChannel(error)), validator).publish(_envelope())

    assert text in str(caught.value)
    assert "amqp://svc:***@rabbit:5672/%2F" in str(caught.value)
    assert "hunter2-secret" not in str(caught.value)

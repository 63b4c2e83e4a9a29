"""Translator: one v1 delivery becomes the v2 message, or a parked copy of itself with the reason."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pika
import pytest

from contract_platform.amqp import basic_properties, encode_body
from contract_platform.amqp.encoded import EncodedProperties, encode_properties
from contract_platform.bridge.translation import PUBLISHED, Migrated, ParkReason, Translator, Unmigratable
from contract_platform.envelope import EnvelopeValidator, amqp_properties

PARKING_LOT = "bridge.billing.invoice-issued.v1.parking-lot"
FAMILY = Path(__file__).resolve().parents[3] / "contracts" / "billing" / "invoice-issued"


def fixtures(major: str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((FAMILY / major / "fixtures" / "valid").glob("*.json"))]


def translate(translator: Translator, envelope: dict[str, Any]) -> Any:
    return translator(encode_body(envelope), basic_properties(envelope))


@pytest.mark.parametrize("index", range(3))
def test_each_v1_fixture_becomes_its_v2_fixture(translator: Translator, index: int) -> None:
    v1, v2 = fixtures("v1")[index], fixtures("v2")[index]

    outgoing = translate(translator, v1)

    assert (outgoing.exchange, outgoing.routing_key, outgoing.label) == (
        "billing.events",
        "billing.invoice.issued.v2",
        PUBLISHED,
    )
    assert json.loads(outgoing.body) == v2
    assert outgoing.message_id == v1["metadata"]["messageId"]
    expected = basic_properties(v2)
    for name in ("message_id", "correlation_id", "type", "timestamp", "headers", "delivery_mode", "app_id"):
        assert getattr(outgoing.properties, name) == getattr(expected, name), name


def test_the_published_body_is_a_valid_v2_envelope(translator: Translator, catalog: Any) -> None:
    outgoing = translate(translator, fixtures("v1")[0])
    contract, issues = EnvelopeValidator(catalog).issues(json.loads(outgoing.body))
    assert contract is not None and contract.message_type == "billing.invoice-issued.v2"
    assert issues == []


def test_an_amount_with_too_many_decimals_is_parked_with_reason_and_pointer(translator: Translator) -> None:
    envelope = copy.deepcopy(fixtures("v1")[0])
    envelope["payload"]["amount"] = "129.955"  # EUR has two decimals: never rounded
    body, properties = encode_body(envelope), basic_properties(envelope)

    outgoing = translator(body, properties)

    assert (outgoing.exchange, outgoing.routing_key, outgoing.label) == ("", PARKING_LOT, "not-migratable")
    assert outgoing.body == body
    headers = outgoing.properties.headers
    assert headers["x-park-reason"] == "not-migratable"
    assert headers["x-park-pointer"] == "/payload/amount"
    assert headers["x-park-source-type"] == "billing.invoice-issued.v1"
    assert headers["x-park-target-type"] == "billing.invoice-issued.v2"
    assert "3 decimal places" in headers["x-park-detail"]
    assert [name for name, value in headers.items() if name.startswith("x-park-") and "129.955" in value] == []
    assert headers["schema-version"] == 1  # the original headers stay
    assert (outgoing.properties.message_id, outgoing.properties.correlation_id) == (
        properties.message_id,
        properties.correlation_id,
    )
    assert "x-park-reason" not in properties.headers  # the delivery's own properties are not changed


def test_a_parked_copy_of_a_delivery_read_as_the_relay_reads_it_carries_the_park_headers(
    translator: Translator,
) -> None:
    envelope = copy.deepcopy(fixtures("v1")[0])
    envelope["payload"]["amount"] = "129.955"
    delivered = EncodedProperties(encode_properties(amqp_properties(envelope)))  # as DeferredPropertiesConnection

    outgoing = translator(encode_body(envelope), delivered)

    sent = pika.BasicProperties()
    sent.decode(b"".join(outgoing.properties.encode()))  # what goes on the wire
    assert sent.headers is not None
    assert sent.headers["x-park-reason"] == "not-migratable" and sent.headers["schema-version"] == 1
    assert sent.message_id == envelope["metadata"]["messageId"]


def test_a_body_that_is_not_json_is_parked(translator: Translator) -> None:
    properties = pika.BasicProperties(message_id="m-1")
    outgoing = translator(b"{not json", properties)
    assert outgoing.label == ParkReason.NOT_JSON
    assert outgoing.properties.headers["x-park-reason"] == "not-json"
    assert outgoing.body == b"{not json"


def test_a_migrated_message_that_is_not_valid_v2_is_parked_without_quoting_personal_data(
    translator: Translator,
) -> None:
    envelope = copy.deepcopy(fixtures("v1")[0])
    envelope["payload"]["billingEmail"] = "not-an-address-of-jane.doe"

    outgoing = translate(translator, envelope)

    headers = outgoing.properties.headers
    assert (headers["x-park-reason"], headers["x-park-pointer"]) == ("invalid-target", "/payload/billingEmail")
    assert "jane.doe" not in json.dumps(headers)
    assert "format" in headers["x-park-detail"]


def test_a_message_of_another_type_is_not_migrated(translator: Translator) -> None:
    envelope = copy.deepcopy(fixtures("v1")[0])
    envelope["metadata"]["messageType"] = "billing.invoice-issued.v2"
    outgoing = translate(translator, envelope)
    assert outgoing.properties.headers["x-park-pointer"] == "/metadata/messageType"


def test_a_large_integer_that_orjson_refuses_is_still_read(translator: Translator) -> None:
    envelope = copy.deepcopy(fixtures("v1")[0])
    envelope["payload"]["aggregateVersion"] = 2**70
    prepared = translator.prepare(encode_body(envelope))
    assert isinstance(prepared, Migrated)
    assert json.loads(prepared.body)["payload"]["aggregateVersion"] == 2**70


def test_prepared_results_survive_the_trip_to_another_process(translator: Translator) -> None:
    good = translator.prepare(encode_body(fixtures("v1")[1]))
    bad = translator.prepare(b"[")
    assert pickle.loads(pickle.dumps([good, bad])) == [good, bad]
    assert isinstance(bad, Unmigratable) and bad.reason is ParkReason.NOT_JSON

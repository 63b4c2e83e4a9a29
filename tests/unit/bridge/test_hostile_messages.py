"""A message that fails for any reason is parked with the reason in its headers; the bridge never stops on one."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pika
import pytest

from contract_platform.amqp import basic_properties, encode_body
from contract_platform.bridge.relay import Outgoing, Relay, RelaySettings
from contract_platform.bridge.translation import PUBLISHED, ParkReason, Translator
from contract_platform.limits import DEFAULT_DEPTH_LIMIT

FAMILY = Path(__file__).resolve().parents[3] / "contracts" / "billing" / "invoice-issued"


def v1_fixture() -> dict[str, Any]:
    return json.loads(sorted((FAMILY / "v1" / "fixtures" / "valid").glob("*.json"))[0].read_text())


def with_deep_metadata(depth: int) -> bytes:
    """A good v1 envelope whose metadata carries ``extra`` nested ``depth`` objects deep (written as text:
    the standard library cannot encode it)."""
    envelope = copy.deepcopy(v1_fixture())
    envelope["metadata"]["extra"] = "DEEP"
    return encode_body(envelope).replace(b'"DEEP"', b'{"d":' * depth + b'"leaf"' + b"}" * depth)


def test_metadata_nested_990_deep_is_parked_as_too_deep(translator: Translator) -> None:
    outgoing = translator(with_deep_metadata(990), basic_properties(v1_fixture()))

    headers = outgoing.properties.headers
    assert (outgoing.routing_key, outgoing.label) == (translator.parking_lot, "too-deep")
    assert headers["x-park-reason"] == "too-deep"
    assert headers["x-park-pointer"].startswith("/metadata/extra/d/d/")
    assert f"deeper than {DEFAULT_DEPTH_LIMIT} levels" in headers["x-park-detail"]
    assert headers["schema-version"] == 1  # the original headers stay


def test_whatever_raises_in_the_migration_is_parked_as_failed(translator: Translator, monkeypatch) -> None:
    # With the limit lifted as far as it goes, 990 levels reach the migration's deep copy: RecursionError.
    monkeypatch.setenv("CONTRACT_MAX_JSON_DEPTH", "1000")
    translator = Translator(translator.route, translator.validator, translator.parking_lot)  # reads the limit
    body = with_deep_metadata(990)

    prepared = translator.prepare(body)
    outgoing = translator.finish(prepared, basic_properties(v1_fixture()), body)

    assert prepared.reason is ParkReason.FAILED
    assert outgoing.properties.headers["x-park-reason"] == "failed"
    assert outgoing.properties.headers["x-park-detail"] == "translating it raised RecursionError"
    assert outgoing.body == body


def test_a_message_behind_a_hostile_one_is_still_published(translator: Translator) -> None:
    bodies = [with_deep_metadata(990), b"\xff\xfe not json", encode_body(v1_fixture())]

    labels = [translator(body, basic_properties(v1_fixture())).label for body in bodies]

    assert labels == ["too-deep", "not-json", PUBLISHED]


class _Channel:
    """Records publishes; refuses (as pika's marshalling would) any whose headers hold an object()."""

    def __init__(self) -> None:
        self.published: list[tuple[str, Any]] = []

    def basic_publish(self, exchange: str, routing_key: str, body: bytes, properties: Any, mandatory: bool) -> None:
        if any(type(value) is object for value in (properties.headers or {}).values()):
            raise TypeError("unsupported table value")
        self.published.append((routing_key, properties))


def test_the_relay_parks_a_message_whose_publication_raises_and_goes_on(translator: Translator) -> None:
    relay = Relay(RelaySettings(url="amqp://guest:guest@127.0.0.1:5672/%2F", queue="bridge.q"), translator)
    channel = _Channel()
    relay._channel = channel
    good = encode_body(v1_fixture())
    odd = pika.BasicProperties(message_id="m-odd", headers={"schema-version": 1, "odd": object()})

    relay._publish_one(1, translator.prepare(b"not json"), odd, b"not json")
    relay._publish_one(2, translator.prepare(good), basic_properties(v1_fixture()), good)

    (parking_lot, parked), (target, _) = channel.published
    assert parking_lot == translator.parking_lot and target == "billing.invoice.issued.v2"
    assert parked.message_id == "m-odd" and "odd" not in parked.headers
    assert parked.headers["x-park-reason"] == "failed"
    assert parked.headers["x-park-detail"].startswith("publishing it raised TypeError")
    assert relay._tracker.in_flight == 2


def test_failed_copies_keep_only_plain_properties(translator: Translator) -> None:
    properties = pika.BasicProperties(message_id="m-1", content_type="application/json", headers={"x": object()})

    outgoing = translator.failed(properties, b"body", ValueError("boom"))

    assert isinstance(outgoing, Outgoing)
    assert (outgoing.exchange, outgoing.routing_key, outgoing.body) == ("", translator.parking_lot, b"body")
    assert outgoing.properties.content_type == "application/json" and "x" not in outgoing.properties.headers
    assert "boom" not in json.dumps(outgoing.properties.headers)


@pytest.mark.parametrize("body", [b"", b"null", b"[]", b'"text"', b"{}", b'{"metadata": []}', b"1e999999"])
def test_odd_bodies_are_parked_never_raised(translator: Translator, body: bytes) -> None:
    outgoing = translator(body, pika.BasicProperties())
    assert outgoing.routing_key == translator.parking_lot
    assert outgoing.properties.headers["x-park-reason"] in {str(reason) for reason in ParkReason}

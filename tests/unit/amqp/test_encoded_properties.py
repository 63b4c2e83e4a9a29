"""Properties in their wire form: sent as encoded until read or changed, then exactly what their fields say."""

from __future__ import annotations

import copy
import pickle
import struct
from types import SimpleNamespace
from typing import Any

import pika
import pytest
from pika import frame, spec
from pika.exceptions import InvalidFrameError

from contract_platform.amqp.encoded import (
    DeferredPropertiesConnection,
    EncodedProperties,
    _EncodedMethod,
    encode_properties,
)

PROPERTIES: dict[str, Any] = {
    "message_id": "9f0c6a52-6f5b-4d7e-9d43-3a8c1d2e7b10",
    "correlation_id": "c-1",
    "type": "billing.invoice-issued.v2",
    "content_type": "application/json",
    "content_encoding": "utf-8",
    "delivery_mode": 2,
    "timestamp": 1_764_000_000,
    "app_id": "billing-service",
    "headers": {"schema-version": 2, "message-version": "2.0.0", "producer": "billing-service", "tenant-id": "é"},
}


def _decoded(wire: bytes) -> pika.BasicProperties:
    properties = pika.BasicProperties()
    properties.decode(wire)
    return properties


def _header_frame(properties: Any, body_size: int = 42) -> bytes:
    return frame.Header(1, body_size, properties).marshal()


def _read(data: bytes) -> tuple[int, Any]:
    return DeferredPropertiesConnection._read_frame(SimpleNamespace(_frame_buffer=data))  # type: ignore[arg-type]


def test_the_wire_form_decodes_to_the_same_fields() -> None:
    assert vars(_decoded(encode_properties(PROPERTIES))) == vars(pika.BasicProperties(**PROPERTIES))


def test_untouched_properties_are_sent_as_the_bytes_they_were_made_with() -> None:
    wire = encode_properties(PROPERTIES)
    properties = EncodedProperties(wire)
    assert _header_frame(properties) == _header_frame(pika.BasicProperties(**PROPERTIES))
    assert properties.encode() == [wire]


def test_fields_read_back_as_pika_decodes_them() -> None:
    properties = EncodedProperties(encode_properties(PROPERTIES))
    assert (properties.message_id, properties.headers, properties.timestamp) == (
        PROPERTIES["message_id"],
        PROPERTIES["headers"],
        PROPERTIES["timestamp"],
    )
    assert getattr(properties, "reply_to", "absent") is None
    assert "9f0c6a52" in repr(properties) and "_encoded" not in repr(properties)
    with pytest.raises(AttributeError):
        properties.no_such_field  # noqa: B018


def test_a_copy_whose_headers_were_replaced_carries_the_new_headers() -> None:
    original = EncodedProperties(encode_properties(PROPERTIES))
    parked = copy.copy(original)  # what the bridge does for the parking lot, before anything was read
    parked.headers = {"x-park-reason": "not-json"}

    sent = _decoded(b"".join(parked.encode()))

    assert sent.headers == {"x-park-reason": "not-json"}
    assert (sent.message_id, sent.app_id, sent.timestamp) == (
        "9f0c6a52-6f5b-4d7e-9d43-3a8c1d2e7b10",
        "billing-service",
        1_764_000_000,
    )
    assert original.headers == PROPERTIES["headers"]  # the delivery's own properties are left as they were


def test_they_survive_pickling() -> None:
    properties = pickle.loads(pickle.dumps(EncodedProperties(encode_properties(PROPERTIES))))
    assert properties.message_id == PROPERTIES["message_id"]


def test_the_relays_connection_reads_a_content_header_without_decoding_it() -> None:
    data = _header_frame(pika.BasicProperties(**PROPERTIES), body_size=748)

    used, header = _read(data + b"more")

    assert used == len(data) and header.body_size == 748 and header.channel_number == 1
    assert isinstance(header.properties, EncodedProperties)
    assert vars(_decoded(b"".join(header.properties.encode()))) == vars(pika.BasicProperties(**PROPERTIES))
    assert header.properties.headers == PROPERTIES["headers"]


def test_the_relays_connection_reads_other_frames_and_partial_ones_as_pika_does() -> None:
    method = frame.Method(1, spec.Basic.Deliver("ctag", 7, False, "billing.events", "rk")).marshal()
    used, deliver = _read(method)
    assert used == len(method) and deliver.method.delivery_tag == 7
    header = _header_frame(pika.BasicProperties(**PROPERTIES))
    assert _read(header[:-1]) == (0, None)  # not all there yet: wait for more
    with pytest.raises(InvalidFrameError):
        _read(header[:-1] + b"\x00")


def test_a_publish_method_encoded_once_marshals_as_pika_marshals_it() -> None:
    publish = spec.Basic.Publish(exchange="billing.events", routing_key="billing.invoice.issued.v2", mandatory=True)
    once: Any = _EncodedMethod(publish)  # duck-typed as a method: INDEX and encode()
    assert frame.Method(1, once).marshal() == frame.Method(1, publish).marshal()
    assert frame.Method(1, once).marshal() == frame.Method(1, publish).marshal()  # marshal must not consume it


def test_a_content_header_too_short_for_its_flags_is_refused_as_pika_refuses_it() -> None:
    stub = struct.pack(">BHL", spec.FRAME_HEADER, 1, 12) + struct.pack(">HHQ", 60, 0, 5) + bytes([spec.FRAME_END])
    with pytest.raises(struct.error):
        frame.decode_frame(stub)
    with pytest.raises(struct.error):
        _read(stub)

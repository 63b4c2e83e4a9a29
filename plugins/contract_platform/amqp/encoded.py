"""AMQP properties carried in their wire form: encoded once, where the CPU is cheapest, decoded only if read.

pika encodes a message's ``BasicProperties`` (its header table field by field) for every publish and decodes
every delivery's the same way; in the bridge's relay that is a third of its own work per message. Here:

::

    wire = encode_properties({"message_id": ..., "headers": {...}})   # bytes, picklable: made in a helper process
    channel.basic_publish(exchange, key, body, EncodedProperties(wire))  # sent as they are, never re-encoded
    connection = DeferredPropertiesConnection(...)  # deliveries' properties as EncodedProperties, decoded on read

``EncodedProperties`` is a real ``pika.BasicProperties``: reading any field decodes all of them (pika's own
``decode``), and from then on, or once any field is set, it encodes its fields again as pika does. The bytes
it was made with are sent only while nobody has looked at or changed it, so a copy whose headers a caller
replaced (the bridge's parked copies) always carries what the caller set.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import pika
from pika import frame, spec
from pika.exceptions import InvalidFrameError

from contract_platform.amqp.asynchronous import JoinedWritesConnection

__all__ = ["DeferredPropertiesConnection", "EncodedProperties", "encode_properties"]

_DECODED = "_decoded"
_ENCODED = "_encoded"


def encode_properties(properties: Mapping[str, Any]) -> bytes:
    """pika's wire form of ``pika.BasicProperties(**properties)``: what ``EncodedProperties`` sends.

    pika's own encoder, errors included (``ShortStringTooLong``, ``UnsupportedAMQPFieldException``,
    ``struct.error``). A hand-written one for an envelope's plain properties measured only 20% faster (about
    1.3 of 6 us): not worth a second copy of the AMQP encoding rules.
    """
    return b"".join(pika.BasicProperties(**properties).encode())


class EncodedProperties(pika.BasicProperties):
    """``pika.BasicProperties`` held as the bytes pika would encode them into (see the module docstring)."""

    def __init__(self, encoded: bytes) -> None:  # no fields yet: the first read or write decodes them
        self.__dict__[_ENCODED] = encoded

    def _decode(self) -> None:
        state = self.__dict__
        if _DECODED not in state:
            state[_DECODED] = True  # first: pika's decode sets every field through __setattr__
            pika.BasicProperties.decode(self, state[_ENCODED])

    def __getattr__(self, name: str) -> Any:  # only called for a name not set yet: a field before its decoding
        if name.startswith("_") or _DECODED in self.__dict__:
            raise AttributeError(name)
        self._decode()
        return getattr(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._decode()  # the other fields keep their values; encode() then writes them all again
        super().__setattr__(name, value)

    def __repr__(self) -> str:  # pika's repr of the fields, without the bytes
        self._decode()
        plain = pika.BasicProperties()
        plain.__dict__.update((name, value) for name, value in self.__dict__.items() if not name.startswith("_"))
        return repr(plain)

    def encode(self) -> list[bytes]:
        if _DECODED in self.__dict__:  # read or changed: encoded from its fields, as pika does
            return list(super().encode())
        return [self.__dict__[_ENCODED]]  # a fresh list: pika's Header.marshal inserts into it


_HEADER_START = spec.FRAME_HEADER_SIZE  # type (1), channel (2), size (4)
_PROPERTIES_START = _HEADER_START + 12  # class id (2), weight (2), body size (8)
_FRAME_END = bytes([spec.FRAME_END])
_SMALLEST_HEADER = 14  # class id, weight, body size and one 16-bit word of property flags


class _EncodedMethod:
    """A method frame's arguments as pika encodes them (``frame.Method.marshal`` asks only these two)."""

    __slots__ = ("INDEX", "_encoded")

    def __init__(self, method: Any) -> None:
        self.INDEX = method.INDEX
        self._encoded = b"".join(method.encode())

    def encode(self) -> list[bytes]:
        return [self._encoded]  # a fresh list: marshal inserts the method's index into it


_PUBLISH_FORMS = 64  # (exchange, routing key, flags) remembered per connection: a relay publishes to two


class DeferredPropertiesConnection(JoinedWritesConnection):
    """A ``JoinedWritesConnection`` whose deliveries carry ``EncodedProperties``: a consumer that republishes
    most messages without reading their properties never pays for decoding them. Its publishes' Basic.Publish
    arguments (ticket, exchange, routing key, mandatory, immediate: the same for every message to one place)
    are encoded once per place, not once per message.

    Every other frame, and a content header of another class than Basic's, is decoded by pika as always.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._publish_forms: dict[tuple[Any, ...], _EncodedMethod] = {}
        super().__init__(*args, **kwargs)

    def _send_message(self, channel_number: int, method_frame: Any, content: Any) -> None:
        if type(method_frame) is spec.Basic.Publish:
            method = method_frame
            key = (method.ticket, method.exchange, method.routing_key, method.mandatory, method.immediate)
            encoded = self._publish_forms.get(key)
            if encoded is None:
                if len(self._publish_forms) >= _PUBLISH_FORMS:
                    self._publish_forms.clear()
                encoded = self._publish_forms[key] = _EncodedMethod(method)
            method_frame = encoded
        super()._send_message(channel_number, method_frame, content)  # type: ignore[misc]  # pika's, not in its stubs

    def _read_frame(self) -> tuple[int, Any]:
        data = self._frame_buffer  # type: ignore[attr-defined]  # pika's private buffer, not in its stubs
        if len(data) >= _PROPERTIES_START and data[0] == spec.FRAME_HEADER:
            channel_number, size = struct.unpack_from(">HL", data, 1)
            end = _HEADER_START + size + spec.FRAME_END_SIZE
            class_id, _weight, body_size = struct.unpack_from(">HHQ", data, _HEADER_START)
            # a header too short for its own flags is left to pika, which refuses it at once as it always has
            if end <= len(data) and class_id == pika.BasicProperties.INDEX and size >= _SMALLEST_HEADER:
                if data[end - 1 : end] != _FRAME_END:
                    raise InvalidFrameError("Invalid FRAME_END marker")
                properties = EncodedProperties(bytes(data[_PROPERTIES_START : end - 1]))
                return end, frame.Header(channel_number, body_size, properties)
        return frame.decode_frame(data)

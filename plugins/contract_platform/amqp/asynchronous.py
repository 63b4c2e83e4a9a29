"""pika's asynchronous connection as the platform runs it: many publishes in flight, frames joined per loop turn.

pika's ``BlockingConnection`` waits for each confirm inside ``basic_publish`` (one round trip per message);
the bridge's relay (``bridge.relay``) and the service client's publisher and consumer
(``contract_platform.client``) run a ``SelectConnection`` instead and track confirms with
``amqp.confirms.ConfirmTracker``. Both open it here:

::

    params = async_parameters(url, "billing-service")    # the platform's timeouts and a connection name
    connection = JoinedWritesConnection(params, on_open_callback=..., on_open_error_callback=...,
                                        on_close_callback=...)
    connection.ioloop.start()
"""

from __future__ import annotations

from typing import Any

import pika

from contract_platform.amqp.connection import (
    DEFAULT_BLOCKED_TIMEOUT,
    DEFAULT_HEARTBEAT,
    DEFAULT_SOCKET_TIMEOUT,
    _url_parameters,
)

__all__ = ["JoinedWritesConnection", "async_parameters"]


def async_parameters(url: str, connection_name: str) -> Any:
    """``pika.URLParameters`` of ``url`` with the platform's defaults, named ``connection_name`` on the broker."""
    params = _url_parameters(url, DEFAULT_HEARTBEAT, DEFAULT_SOCKET_TIMEOUT, DEFAULT_BLOCKED_TIMEOUT)
    params.client_properties = {"connection_name": connection_name}
    return params


class JoinedWritesConnection(pika.SelectConnection):
    """pika sends every frame with its own ``send()`` (three per publish); this joins what one turn of the
    loop produced into one write, which is what makes thousands of publishes per second affordable."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._pending: list[bytes] = []
        self._flush_scheduled = False
        super().__init__(*args, **kwargs)

    def _adapter_emit_data(self, data: bytes) -> None:
        self._pending.append(data)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.ioloop.call_later(0, self._flush_writes)

    def _flush_writes(self) -> None:
        self._flush_scheduled = False
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            # pika's private transport and its write hook: neither is in pika's stubs
            if self._transport is not None:  # type: ignore[attr-defined]  # the stream may have gone since: then so has the data
                super()._adapter_emit_data(data)  # type: ignore[misc]

"""pika's ``SelectConnection`` as the publishing benchmarks drive it: a channel in confirm mode, confirms counted.

A subclass sends from ``start`` (called once the broker has turned confirms on), numbers each publish it makes in
``unconfirmed`` (``self.sent += 1; self.unconfirmed.add(self.sent)``) and hears in ``on_confirms`` how many one
confirm frame settled. The loop stops once the connection is closed (``stopped``).
"""

from __future__ import annotations

from typing import Any

import pika

from contract_platform.amqp.asynchronous import async_parameters

__all__ = ["ConfirmingPublisher", "stopped"]


def stopped(connection: Any, _reason: Any) -> None:
    """Stop the loop only once the connection is closed: a consumer left open would keep its prefetched messages."""
    connection.ioloop.stop()


class ConfirmingPublisher:
    def __init__(self, url: str, name: str, connection_class: Any = pika.SelectConnection) -> None:
        self.sent = 0
        self.unconfirmed: set[int] = set()
        self.connection = connection_class(
            async_parameters(url, name), on_open_callback=self._open, on_close_callback=stopped
        )

    def start(self) -> None:
        raise NotImplementedError

    def on_confirms(self, count: int) -> None:
        raise NotImplementedError

    def _open(self, connection: Any) -> None:
        connection.channel(on_open_callback=self._channel)

    def _channel(self, channel: Any) -> None:
        self.channel = channel
        channel.confirm_delivery(self._confirm, callback=lambda _frame: self.start())

    def _confirm(self, frame: Any) -> None:
        tag, multiple = frame.method.delivery_tag, frame.method.multiple
        done = {t for t in self.unconfirmed if t <= tag} if multiple else {tag}
        self.unconfirmed -= done
        self.on_confirms(len(done))

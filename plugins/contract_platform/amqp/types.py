"""What the platform asks of an open broker connection, as a type.

Code that is handed a connection (provisioning, inspection, peeking, the audit, the archiver's drain)
annotates it ``BrokerConnection`` rather than ``Any``: the members below are the ones the domain calls,
with pika's own signatures, so a ``pika.BlockingConnection`` (what ``open_connection`` and the Airflow
hook return) is one without a cast, and mypy checks that it still is when pika changes. A channel is
pika's ``BlockingChannel``: its surface is pika's, typed by pika's stubs (``types-pika-ts``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pika.adapters.blocking_connection import BlockingChannel

__all__ = ["BrokerConnection"]


class BrokerConnection(Protocol):
    """The blocking connection's members the domain uses (``git grep "connection\\."`` lists them)."""

    @property
    def is_open(self) -> bool: ...

    def channel(self, channel_number: int | None = None) -> BlockingChannel: ...

    def close(self, reply_code: int = 200, reply_text: str = "Normal shutdown") -> None: ...

    def process_data_events(self, time_limit: float | None = 0) -> None: ...

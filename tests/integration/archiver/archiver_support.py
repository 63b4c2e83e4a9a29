"""Helpers of the archiver's broker tests: a provisioned test topic, bulk publishing, reading the archive."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pika
import pika.exceptions

from contract_platform.amqp import archive_queue_name, basic_properties, encode_body, open_connection
from contract_platform.amqp.inspection import passive_queue
from contract_platform.catalog.model import Contract, Kind, Owner, Pii, Retention, Status, TopologySettings, Transport

MESSAGE_TYPE = "billing.invoice-issued.v1"
ROUTING_KEY = "billing.invoice.issued.v1"
PAYLOAD_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["invoiceId", "amount", "currency"],
    "properties": {
        "invoiceId": {"type": "string", "pattern": "^inv-[0-9]+$"},
        "amount": {"type": "string", "pattern": "^[0-9]+\\.[0-9]{2}$"},
        "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
    },
}


@dataclass(frozen=True)
class Topic:
    """A provisioned test exchange and its archive queue."""

    url: str
    contract: Contract
    exchange: str
    queue: str


def make_contract(prefix: str) -> Contract:
    """A contract whose exchange carries ``prefix``; no consumer queues, so only ``archive.<exchange>`` fills."""
    return Contract(
        message_type=MESSAGE_TYPE,
        kind=Kind.EVENT,
        version="1.0.0",
        status=Status.ACTIVE,
        description="An invoice has been issued.",
        owner=Owner(team="billing-platform", service="billing-service"),
        transport=Transport(exchange=f"{prefix}billing.events", routing_key=ROUTING_KEY),
        compatibility="BACKWARD",
        compatibility_policy="strict",
        idempotency_key="/metadata/messageId",
        pii=Pii(contains_pii=False, fields=()),
        retention=Retention(queue=timedelta(days=14), dlq=timedelta(days=14), archive=timedelta(days=90)),
        directory=Path("/nonexistent") / prefix,
        payload_schema=PAYLOAD_SCHEMA,
        consumers=(),
        topology=TopologySettings(queue_type="quorum", retry_delays=()),
    )


def make_envelope(n: int = 0) -> dict[str, Any]:
    return {
        "metadata": {
            "messageId": str(uuid.uuid4()),
            "messageType": MESSAGE_TYPE,
            "schemaVersion": 1,
            "messageVersion": "1.0.0",
            "producer": "billing-service",
            "producerVersion": "12.4.0",
            "occurredAt": "2026-07-01T10:15:30Z",
            "publishedAt": "2026-07-01T10:15:31Z",
            "correlationId": "8c1d6f0e-3b2a-4f5e-9d7c-1a2b3c4d5e6f",
            "traceId": "4bf92f3577b34da6a3ce929d0e0e4736",
            "tenantId": "tnt-northwind",
            "partitionKey": f"inv-{10000 + n}",
        },
        "payload": {"invoiceId": f"inv-{10000 + n}", "amount": "129.95", "currency": "EUR"},
    }


def delete_topic(url: str, exchange: str) -> None:
    connection = open_connection(url)
    try:
        for kind, name in (
            ("queue", archive_queue_name(exchange)),
            ("exchange", exchange),
            ("exchange", f"{exchange}.dlx"),
        ):
            channel = connection.channel()
            with contextlib.suppress(pika.exceptions.ChannelClosedByBroker):  # already gone is fine here
                (channel.queue_delete if kind == "queue" else channel.exchange_delete)(name)
                channel.close()
    finally:
        connection.close()


def ready(url: str, queue: str) -> int:
    connection = open_connection(url)
    try:
        counts = passive_queue(connection, queue)
    finally:
        connection.close()
    assert counts is not None, f"{queue} does not exist"
    return counts[0]


def wait_ready(url: str, queue: str, expected: int, timeout: float = 15.0) -> None:
    """Wait until ``queue`` holds exactly ``expected`` ready messages."""
    deadline = time.monotonic() + timeout
    while (count := ready(url, queue)) != expected:
        assert time.monotonic() < deadline, f"{queue}: {count} ready, expected {expected}"
        time.sleep(0.05)


def publish_raw(topic: Topic, count: int) -> list[str]:
    """``count`` valid envelopes with the AMQP properties of docs/design.md#amqp-properties, without per-message confirms (fast);
    returns their messageIds in publishing order once the archive queue holds them all.

    The publishing connection stays open until then: without confirms, messages still in flight when a
    connection closes can be dropped by the broker."""
    connection = pika.BlockingConnection(pika.URLParameters(topic.url))
    try:
        channel = connection.channel()
        ids = []
        for n in range(count):
            envelope = make_envelope(n)
            channel.basic_publish(topic.exchange, ROUTING_KEY, encode_body(envelope), basic_properties(envelope))
            ids.append(envelope["metadata"]["messageId"])
        wait_ready(topic.url, topic.queue, count)
    finally:
        connection.close()
    return ids


def lines_of(path: Path) -> list[bytes]:
    """The complete lines of a file (a trailing partial line is left out)."""
    data = path.read_bytes()
    return data[: data.rfind(b"\n") + 1].splitlines()


def archive_files(root: Path, exchange: str) -> list[Path]:
    return sorted((root / exchange).glob("date=*/*.jsonl"))


def records_of(paths: Iterable[Path]) -> Iterator[dict[str, Any]]:
    for path in paths:
        for line in lines_of(path):
            yield json.loads(line)


def assert_whole_lines(root: Path, exchange: str) -> None:
    """Every file ends with a newline and every line is one JSON object."""
    for path in archive_files(root, exchange):
        data = path.read_bytes()
        assert data == b"" or data.endswith(b"\n"), f"{path} ends in a partial line"
        for line in data.splitlines():
            assert isinstance(json.loads(line), dict)


class TcpProxy:
    """A TCP forwarder to the broker whose connections the test can cut, as a network failure would."""

    def __init__(self, host: str = "127.0.0.1", port: int = 5672) -> None:
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    def cut(self) -> int:
        """Drop every open connection; returns how many there were."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        return len(pairs)

    def close(self) -> None:
        self._listener.close()
        self.cut()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self._target)
            with self._lock:
                self._pairs.append((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

"""Helpers of the archiver's broker tests: a provisioned test topic, bulk publishing, reading the archive."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pika
from tests.support import broker
from tests.support.contracts import INVOICE_PAYLOAD_SCHEMA, V1, build_contract, invoice_envelope

from contract_platform.amqp import archive_queue_name, basic_properties, encode_body
from contract_platform.catalog.model import Contract

MESSAGE_TYPE = V1
ROUTING_KEY = "billing.invoice.issued.v1"


@dataclass(frozen=True)
class Topic:
    """A provisioned test exchange and its archive queue."""

    url: str
    contract: Contract
    exchange: str
    queue: str


def make_contract(prefix: str) -> Contract:
    """A contract whose exchange carries ``prefix``; no consumer queues, so only ``archive.<exchange>`` fills."""
    return build_contract(MESSAGE_TYPE, prefix=prefix, retry_delays=(), payload_schema=INVOICE_PAYLOAD_SCHEMA)


def make_envelope(n: int = 0) -> dict[str, Any]:
    return invoice_envelope(n, MESSAGE_TYPE)


def delete_topic(url: str, exchange: str) -> None:
    broker.delete_names(url, [archive_queue_name(exchange)], [exchange, f"{exchange}.dlx"])


def wait_ready(url: str, queue: str, expected: int, timeout: float = 15.0) -> None:
    """Wait until ``queue`` holds exactly ``expected`` ready messages."""
    broker.wait_for_depth(url, queue, expected, timeout)


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

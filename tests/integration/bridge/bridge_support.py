"""Helpers of the bridge's broker tests: a catalogue copy on unique exchange names, its topology, bulk I/O.

Other suites share the broker, so the copied catalogue publishes billing.invoice-issued v1 and v2 to
``t-<uuid8>.billing.events``, the tap queue is ``t-<uuid8>.bridge.billing.invoice-issued.v1`` and
everything a test declared is deleted by ``delete_all``.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support import broker
from tests.support.contracts import prefixed_catalog

from contract_platform.amqp import basic_properties, encode_body, open_connection
from contract_platform.bridge import prepare_tap
from contract_platform.bridge.translation import MigrationRoute, resolve_route
from contract_platform.catalog import load_catalog
from contract_platform.catalog.model import Catalog

REPO = Path(__file__).resolve().parents[3]
SOURCE, TARGET = "billing.invoice-issued.v1", "billing.invoice-issued.v2"
FAMILY = REPO / "contracts" / "billing" / "invoice-issued"


@dataclass
class Lane:
    """One test's bridge lane: catalogue copy, route and the names on the broker."""

    url: str
    prefix: str
    catalog_dir: Path
    catalog: Catalog
    route: MigrationRoute

    @property
    def exchange(self) -> str:
        return self.route.source.transport.exchange

    @property
    def source_key(self) -> str:
        return self.route.source.transport.routing_key

    @property
    def tap(self) -> str:
        return f"{self.prefix}bridge.{SOURCE}"

    @property
    def parking_lot(self) -> str:
        return f"{self.tap}.parking-lot"

    @property
    def v2_queue(self) -> str:
        return f"{self.prefix}accounting-service.{TARGET}"

    def queues(self) -> list[str]:
        return [self.tap, self.parking_lot, self.v2_queue]

    def bridge_command(self, *extra: str) -> list[str]:
        """``contractctl bridge`` on this lane, its report as JSON on stdout."""
        return [
            sys.executable, "-m", "contract_platform.cli.main", "bridge", TARGET,
            "--catalog", str(self.catalog_dir), "--tap-queue", self.tap, "--format", "json", *extra,
        ]  # fmt: skip

    def environment(self) -> dict[str, str]:
        return os.environ | {"CONTRACT_RABBITMQ_URL": self.url, "PYTHONWARNINGS": "ignore::RuntimeWarning"}


def make_lane(url: str, into: Path, prefix: str | None = None) -> Lane:
    prefix = prefix or broker.prefix()
    root = prefixed_catalog(into / "contracts", prefix)
    catalog = load_catalog(root)
    return Lane(url, prefix, root, catalog, resolve_route(catalog, TARGET))


def declare(lane: Lane, *, v2_bound: bool = True) -> None:
    """The v1/v2 exchange, the tap queue and its parking lot, and (``v2_bound``) one v2 consumer queue."""
    connection = open_connection(lane.url)
    try:
        channel = connection.channel()
        channel.exchange_declare(lane.exchange, "topic", durable=True)
        if v2_bound:
            channel.queue_declare(lane.v2_queue, durable=True, arguments={"x-queue-type": "quorum"})
            channel.queue_bind(lane.v2_queue, lane.exchange, lane.route.target.transport.routing_key)
        prepare_tap(connection, lane.route, lane.tap)
    finally:
        connection.close()


def delete_all(lane: Lane) -> None:
    broker.delete_names(lane.url, lane.queues(), [lane.exchange])


def v1_fixtures() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((FAMILY / "v1" / "fixtures" / "valid").glob("*.json"))]


def v2_fixtures() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((FAMILY / "v2" / "fixtures" / "valid").glob("*.json"))]


def v1_envelopes(count: int) -> list[dict[str, Any]]:
    """``count`` distinct valid v1 envelopes (new messageIds), cycling through the v1 fixtures."""
    templates = v1_fixtures()
    envelopes = []
    for number in range(count):
        envelope = copy.deepcopy(templates[number % len(templates)])
        envelope["metadata"]["messageId"] = str(uuid.uuid4())
        envelope["payload"]["invoiceId"] = f"inv-{number + 1}"
        envelopes.append(envelope)
    return envelopes


def publish(lane: Lane, envelopes: Iterable[dict[str, Any]], *, confirm: bool = True, timeout: float = 120.0) -> int:
    """Publish v1 envelopes to the v1 routing key, with confirms, or fast without them (``confirm=False``).

    Without confirms the connection stays open until the tap queue holds them all: closing it straight
    after a burst can lose the tail still on its way to a quorum queue (seen on 3.10.8).
    """
    connection = open_connection(lane.url)
    count = 0
    try:
        channel = connection.channel()
        before = int(channel.queue_declare(lane.tap, passive=True).method.message_count)
        if confirm:
            channel.confirm_delivery()
        for envelope in envelopes:
            channel.basic_publish(
                lane.exchange, lane.source_key, encode_body(envelope), basic_properties(envelope), mandatory=confirm
            )
            count += 1
        deadline = time.monotonic() + timeout
        while not confirm and channel.queue_declare(lane.tap, passive=True).method.message_count < before + count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{lane.tap} did not receive the {count} messages published in {timeout:.0f} s")
            connection.sleep(0.05)
    finally:
        connection.close()
    return count


def publish_raw(lane: Lane, body: bytes, properties: Any) -> None:
    connection = open_connection(lane.url)
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        channel.basic_publish(lane.exchange, lane.source_key, body, properties, mandatory=True)
    finally:
        connection.close()


def ready(url: str, queue: str) -> int:
    """Ready messages in ``queue`` (declare-ok's count; a quorum queue may lag a moment behind)."""
    return broker.ready(url, queue)


def wait_for(url: str, queue: str, count: int, timeout: float = 90.0) -> int:
    """Wait until ``queue`` holds ``count`` ready messages; returns the count (the failure names the last seen)."""
    return broker.wait_for_depth(url, queue, count, timeout)


def read_all(url: str, queue: str, *, idle: float = 2.0) -> list[tuple[Any, bytes]]:
    """Every message in ``queue`` (consumed and acknowledged), until none arrives for ``idle`` seconds."""
    return broker.consume_until_idle(url, queue, idle=idle)


def run_bridge(lane: Lane, *extra: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        lane.bridge_command(*extra), env=lane.environment(), capture_output=True, text=True, timeout=timeout
    )

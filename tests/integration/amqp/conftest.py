"""Fixtures for tests against the real RabbitMQ: unique names per test, and everything deleted after.

Other suites share the broker, so every exchange and queue a test declares starts with its own
``t-<uuid8>.`` prefix, and teardown deletes every queue and exchange carrying that prefix.
"""

from __future__ import annotations

import contextlib
import json
import socket
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pika.exceptions
import pytest

from contract_platform.amqp import ManagementClient, open_connection, plan_topology
from contract_platform.catalog.model import (
    Catalog,
    Consumer,
    Contract,
    Kind,
    Owner,
    Pii,
    Retention,
    Status,
    TopologySettings,
    Transport,
)
from contract_platform.envelope import EnvelopeValidator
from contract_platform.settings import rabbitmq_url

ENVELOPE_SCHEMA = Path(__file__).resolve().parents[3] / "contracts" / "envelope" / "envelope.v1.schema.json"
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

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def broker_url() -> str:
    url = rabbitmq_url()
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 5672
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError:
        pytest.skip(f"RabbitMQ not answering on {host}:{port} (start it with rabbitmq-server -detached)")
    return url


@pytest.fixture
def prefix() -> str:
    return f"t-{uuid.uuid4().hex[:8]}."


@pytest.fixture
def management(broker_url: str) -> ManagementClient:
    return ManagementClient.from_amqp_url(broker_url)


@pytest.fixture
def declared() -> list[str]:
    """Names (queues or exchanges) a test declared itself; deleted in teardown with the prefixed ones."""
    return []


@pytest.fixture
def connection(broker_url: str, prefix: str, management: ManagementClient, declared: list[str]) -> Iterator[Any]:
    """An open connection; afterwards every queue and exchange of the test is deleted."""
    conn = open_connection(broker_url)
    yield conn
    if conn.is_open:
        conn.close()
    exchanges = set(management.exchange_names(prefix) or []) | {n for n in declared if n.startswith(prefix)}
    queues = set(management.queue_names(prefix) or []) | set(declared)
    queues |= {f"archive.{x}" for x in exchanges if not x.endswith(".dlx")}
    _delete_all(broker_url, queues, exchanges)


def _delete_all(broker_url: str, queues: set[str], exchanges: set[str]) -> None:
    cleanup = open_connection(broker_url)
    try:
        for kind, names in (("queue", queues), ("exchange", exchanges)):
            for name in sorted(names):
                channel = cleanup.channel()
                with contextlib.suppress(pika.exceptions.ChannelClosedByBroker):  # already gone is fine here
                    (channel.queue_delete if kind == "queue" else channel.exchange_delete)(name)
                    channel.close()
    finally:
        cleanup.close()


def make_contract(
    prefix: str,
    *,
    queue_type: str = "quorum",
    retry_delays: tuple[timedelta, ...] = (timedelta(seconds=1),),
    consumers: tuple[str, ...] = ("accounting",),
) -> Contract:
    """A contract whose exchange and queues all carry ``prefix`` (the messageType stays canonical)."""
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
        consumers=tuple(Consumer(f"{c}-service", f"{prefix}{c}-service.{MESSAGE_TYPE}") for c in consumers),
        topology=TopologySettings(queue_type=queue_type, retry_delays=retry_delays),
    )


@pytest.fixture
def contract_factory(prefix: str, declared: list[str]) -> Callable[..., Contract]:
    """``make_contract`` bound to this test's prefix; the plan's names are cleaned up even without the API."""

    def build(**options: Any) -> Contract:
        contract = make_contract(prefix, **options)
        plan = plan_topology(contract)
        declared.extend([q.name for q in plan.queues] + [x.name for x in plan.exchanges])
        return contract

    return build


@pytest.fixture
def contract(contract_factory: Callable[..., Contract]) -> Contract:
    return contract_factory()


@pytest.fixture
def validator(contract: Contract, tmp_path: Path) -> EnvelopeValidator:
    catalog = Catalog(
        root=tmp_path,
        envelope_schema=json.loads(ENVELOPE_SCHEMA.read_text()),
        contracts={contract.message_type: contract},
    )
    return EnvelopeValidator(catalog)


@pytest.fixture
def envelope() -> Callable[..., dict[str, Any]]:
    """A valid envelope factory; keyword arguments replace payload fields."""

    def build(**payload: Any) -> dict[str, Any]:
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
                "partitionKey": "inv-10001",
            },
            "payload": {"invoiceId": "inv-10001", "amount": "129.95", "currency": "EUR"} | payload,
        }

    return build

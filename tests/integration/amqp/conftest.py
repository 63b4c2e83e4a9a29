"""Fixtures for tests against the real RabbitMQ: unique names per test, and everything deleted after.

Other suites share the broker, so every exchange and queue a test declares starts with its own
``t-<uuid8>.`` prefix, and teardown deletes every queue and exchange carrying that prefix.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from tests.support import broker
from tests.support.contracts import INVOICE_PAYLOAD_SCHEMA, V1, build_contract, catalog_of, invoice_envelope

from contract_platform.amqp import ManagementClient, open_connection, plan_topology
from contract_platform.catalog.model import Contract
from contract_platform.envelope import EnvelopeValidator
from contract_platform.settings import rabbitmq_url

MESSAGE_TYPE = V1
ROUTING_KEY = "billing.invoice.issued.v1"


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
    return broker.prefix()


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
    broker.delete_prefixed(broker_url, management, prefix, also=declared)


def make_contract(
    prefix: str,
    *,
    queue_type: str = "quorum",
    retry_delays: tuple[timedelta, ...] = (timedelta(seconds=1),),
    consumers: tuple[str, ...] = ("accounting",),
) -> Contract:
    """A contract whose exchange and queues all carry ``prefix`` (the messageType stays canonical)."""
    return build_contract(
        MESSAGE_TYPE,
        prefix=prefix,
        consumers=[f"{c}-service" for c in consumers],
        queue_type=queue_type,
        retry_delays=retry_delays,
        payload_schema=INVOICE_PAYLOAD_SCHEMA,
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
    return EnvelopeValidator(catalog_of(contract, root=tmp_path, envelope_schema=True))


@pytest.fixture
def envelope() -> Callable[..., dict[str, Any]]:
    """A valid envelope factory (invoice inv-10001); keyword arguments replace payload fields."""
    return lambda **payload: invoice_envelope(1, MESSAGE_TYPE, **payload)

"""The retirement audit against the real broker: the real v1/v2 contracts with every name prefixed ``t-<uuid8>.``.

The broker is shared with other suites: every queue and exchange a test declares carries its own
prefix, the dead-letter scan is scoped to that prefix, and teardown deletes everything under it.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pika.exceptions
import pytest
from retirement_broker import prefixed

from contract_platform.amqp import ManagementClient, open_connection
from contract_platform.amqp.connection import close_quietly
from contract_platform.catalog.model import Catalog
from contract_platform.store import Registry

pytestmark = pytest.mark.integration


@pytest.fixture
def prefix() -> str:
    return f"t-{uuid.uuid4().hex[:8]}."


@pytest.fixture
def management(rabbitmq_url: str) -> ManagementClient:
    client = ManagementClient.from_amqp_url(rabbitmq_url)
    if client.overview() is None:
        pytest.skip("the RabbitMQ management API is not answering on 15672")
    return client


@pytest.fixture
def connection(rabbitmq_url: str, prefix: str, management: ManagementClient) -> Iterator[Any]:
    """An open connection; afterwards every queue and exchange carrying the test's prefix is deleted."""
    conn = open_connection(rabbitmq_url)
    yield conn
    close_quietly(conn)
    cleanup = open_connection(rabbitmq_url)
    try:
        queues = set(management.queue_names(prefix) or []) | set(management.queue_names(f"archive.{prefix}") or [])
        for kind, names in (("queue", queues), ("exchange", set(management.exchange_names(prefix) or []))):
            for name in sorted(names):
                channel = cleanup.channel()
                with contextlib.suppress(pika.exceptions.ChannelClosedByBroker):  # already gone is fine
                    (channel.queue_delete if kind == "queue" else channel.exchange_delete)(name)
                    channel.close()
    finally:
        close_quietly(cleanup)


@pytest.fixture
def contracts(catalog: Catalog, prefix: str) -> Catalog:
    """The real catalogue, with the billing.invoice-issued family's exchange and queues prefixed."""
    changed = {
        mt: prefixed(c, prefix) if c.family == "billing.invoice-issued" else c for mt, c in catalog.contracts.items()
    }
    return replace(catalog, contracts=changed)


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    with Registry.open(f"sqlite:///{tmp_path / 'registry.db'}") as opened:
        yield opened

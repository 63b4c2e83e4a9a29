"""The retirement audit against the real broker: the real v1/v2 contracts with every name prefixed ``t-<uuid8>.``.

The broker is shared with other suites: every queue and exchange a test declares carries its own
prefix, the dead-letter scan is scoped to that prefix, and teardown deletes everything under it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tests.integration.retirement.reader_evidence_support import SHORT, Audits, Recorders
from tests.support import broker
from tests.support.broker import wait_for_stats
from tests.support.contracts import V1, with_prefix
from tests.support.retirement import delete_trace_queues, provision_family, running_recorder

from contract_platform.amqp import ManagementClient, open_connection, plan_topology
from contract_platform.amqp.connection import close_quietly
from contract_platform.amqp.topology import Role
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.store import SqlRegistry


@pytest.fixture
def prefix() -> str:
    return broker.prefix()


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
    broker.delete_prefixed(rabbitmq_url, management, prefix)


@pytest.fixture
def contracts(catalog: Catalog, prefix: str) -> Catalog:
    """The real catalogue, with the billing.invoice-issued family's exchange and queues prefixed."""
    changed = {
        mt: with_prefix(c, prefix) if c.family == "billing.invoice-issued" else c for mt, c in catalog.contracts.items()
    }
    return replace(catalog, contracts=changed)


@pytest.fixture
def registry(tmp_path: Path, rabbitmq_url: str) -> Iterator[SqlRegistry]:
    """The test's registry; afterwards the delivery trace queues its audits declared are deleted."""
    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as opened:
        yield opened
        delete_trace_queues(rabbitmq_url, opened)


@pytest.fixture
def recording(registry: SqlRegistry, rabbitmq_url: str, prefix: str, connection: Any) -> Iterator[datetime]:
    """The broker activity recorder running into the test's registry (its queue carries the prefix);
    yields the moment its coverage starts. Listed after ``connection`` so it stops before teardown."""
    with running_recorder(registry, rabbitmq_url, f"{prefix}broker-activity") as since:
        yield since


@pytest.fixture
def version(connection: Any, contracts: Catalog, management: ManagementClient) -> Contract:
    """v1 and v2 provisioned; v1 needs 3 audits spanning 4 s; the API has statistics for v1's queues."""
    provision_family(connection, contracts)
    v1 = contracts.contracts[V1]
    wait_for_stats(management, [q.name for q in plan_topology(v1).queues_of(Role.CONSUMER, Role.RETRY, Role.DLQ)])
    return replace(v1, retirement=SHORT)


@pytest.fixture
def audits(
    connection: Any, contracts: Catalog, registry: SqlRegistry, prefix: str, version: Contract, recording: datetime
) -> Audits:
    """Audits of ``version`` with the recorder running in a thread."""
    return Audits(connection, contracts, registry, prefix, version)


@pytest.fixture
def recorders(prefix: str, tmp_path: Path, connection: Any) -> Iterator[Recorders]:
    """``contractctl record-activity`` processes (killable) on the test's recorder queue into ``registry``'s
    database; afterwards every one is stopped and the queue and its companions are deleted."""
    started = Recorders(tmp_path, f"{prefix}activity")
    yield started
    started.close()

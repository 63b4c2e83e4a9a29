"""Fixtures of the archiver's broker tests: one provisioned test topic per test, deleted afterwards.

Other suites share the broker, so every exchange carries a ``t-<uuid8>.`` prefix; its archive queue
is ``archive.t-<uuid8>....``, and both (with the DLX) are deleted in teardown.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.integration.archiver.archiver_support import Topic, delete_topic, make_contract
from tests.support import broker
from tests.support.contracts import catalog_of

from contract_platform.amqp import archive_queue_name, open_connection, plan_topology, provision
from contract_platform.envelope import EnvelopeValidator


@pytest.fixture
def topic(rabbitmq_url: str) -> Iterator[Topic]:
    contract = make_contract(broker.prefix())
    exchange = contract.transport.exchange
    try:
        connection = open_connection(rabbitmq_url)
        try:
            provision(connection, plan_topology(contract))
        finally:
            connection.close()
        yield Topic(rabbitmq_url, contract, exchange, archive_queue_name(exchange))
    finally:
        delete_topic(rabbitmq_url, exchange)


@pytest.fixture
def validator(topic: Topic, tmp_path: Path) -> EnvelopeValidator:
    return EnvelopeValidator(catalog_of(topic.contract, root=tmp_path, envelope_schema=True))

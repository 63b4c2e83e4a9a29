"""A private virtual host on the local broker and a connection to it, as fixtures: a test module or a
``conftest.py`` imports them (``from tests.support.vhosts import connection, vhost``). A fixture that names its
vhost itself uses ``private_vhost``; one that wants a catalogue's topology in it, ``provision_catalog``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import pytest
from tests.support import broker

from contract_platform.amqp import open_connection, plan_topology, provision
from contract_platform.amqp.connection import close_quietly
from contract_platform.amqp.types import BrokerConnection
from contract_platform.catalog.model import Contract

__all__ = ["connection", "private_vhost", "provision_catalog", "vhost"]


@contextmanager
def private_vhost(name: str | None = None) -> Iterator[str]:
    """``broker.private_vhost``; the test is skipped when the management API, which makes it, does not answer."""
    if not broker.management_answers():
        pytest.skip("the RabbitMQ management API is not answering on 15672")
    with broker.private_vhost(name) as made:
        yield made


def provision_catalog(vhost: str, contracts: Iterable[Contract]) -> None:
    """Every exchange, queue and dead-letter queue of ``contracts`` in ``vhost``."""
    opened = open_connection(broker.url_of(vhost))
    try:
        for contract in contracts:
            provision(opened, plan_topology(contract))
    finally:
        close_quietly(opened)


@pytest.fixture
def vhost(rabbitmq_url: str) -> Iterator[str]:
    with private_vhost() as name:
        yield name


@pytest.fixture
def connection(vhost: str) -> Iterator[BrokerConnection]:
    opened = open_connection(broker.url_of(vhost))
    yield opened
    close_quietly(opened)

"""A private virtual host on the local broker and a connection to it, as fixtures: a test module or a
``conftest.py`` imports them (``from tests.support.vhosts import connection, vhost``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.support import broker

from contract_platform.amqp import open_connection
from contract_platform.amqp.connection import close_quietly
from contract_platform.amqp.types import BrokerConnection

__all__ = ["connection", "vhost"]


@pytest.fixture
def vhost(rabbitmq_url: str) -> Iterator[str]:
    if not broker.management_answers():
        pytest.skip("the RabbitMQ management API is not answering on 15672")
    with broker.private_vhost() as name:
        yield name


@pytest.fixture
def connection(vhost: str) -> Iterator[BrokerConnection]:
    opened = open_connection(broker.url_of(vhost))
    yield opened
    close_quietly(opened)

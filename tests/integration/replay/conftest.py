"""Fixtures of the in-flight replay tests: a private vhost on the local broker and a connection to it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.support import broker

from contract_platform.amqp import open_connection
from contract_platform.amqp.connection import close_quietly


@pytest.fixture
def vhost(rabbitmq_url: str) -> Iterator[str]:
    if not broker.management_answers():
        pytest.skip("the RabbitMQ management API is not answering on 15672")
    with broker.private_vhost() as name:
        yield name


@pytest.fixture
def connection(vhost: str) -> Iterator[Any]:
    conn = open_connection(broker.url_of(vhost))
    yield conn
    close_quietly(conn)

"""The end-to-end tests' broker: a RabbitMQ virtual host of the test's own, deleted afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from tests.support import broker


@pytest.fixture()
def vhost(rabbitmq_url: str) -> Iterator[str]:
    if not broker.management_answers():
        pytest.skip("RabbitMQ management API not answering on 15672; enable rabbitmq_management")
    with broker.private_vhost(f"t-e2e-{uuid.uuid4().hex[:8]}") as name:
        yield name

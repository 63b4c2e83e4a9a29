"""Queue inspection and connection errors against the real broker."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest

from contract_platform.amqp import (
    ManagementClient,
    Publisher,
    inspect_queue,
    open_connection,
    plan_topology,
    provision,
)
from contract_platform.catalog.model import Contract
from contract_platform.envelope import EnvelopeValidator
from contract_platform.errors import BrokerError, BrokerUnavailable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def test_inspect_queue_reports_ready_consumers_type_and_arguments(
    connection: Any, contract: Contract, validator: EnvelopeValidator, envelope: Callable[..., dict[str, Any]]
) -> None:
    plan = plan_topology(contract)
    provision(connection, plan)
    queue = contract.consumers[0].queue
    Publisher(connection, validator).publish_many([envelope(), envelope()])
    listener = connection.channel()
    listener.basic_qos(prefetch_count=1)
    listener.basic_consume(queue, lambda *args: None)
    connection.process_data_events(time_limit=0.5)  # let one delivery reach the consumer, unacked

    state = inspect_queue(connection, queue)

    assert state.exists
    assert (state.ready, state.consumers) == (1, 1)
    assert state.type == "quorum"
    assert state.arguments == dict(plan.queue(queue).arguments)
    assert state.unacked in (None, 1)  # the management API counts only after its stats interval
    assert state.empty is False


def test_inspect_queue_without_management_api_and_for_a_missing_queue(
    connection: Any, contract: Contract, caplog: pytest.LogCaptureFixture
) -> None:
    plan = plan_topology(contract)
    provision(connection, plan)
    dlq = f"{contract.consumers[0].queue}.dlq"

    amqp_only = inspect_queue(connection, dlq, management=None)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        missing = inspect_queue(connection, f"{dlq}.nope")
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]

    assert (amqp_only.exists, amqp_only.ready, amqp_only.consumers) == (True, 0, 0)
    assert (amqp_only.type, amqp_only.arguments, amqp_only.unacked) == (None, None, None)
    assert amqp_only.empty is None
    assert not missing.exists
    assert not [w for w in warnings if "Channel.Close" in w]  # the expected 404 of a passive declare is no warning


def test_management_client_answers_none_when_it_cannot_tell(broker_url: str, caplog: pytest.LogCaptureFixture) -> None:
    wrong_password = ManagementClient(user="guest", password="not-the-password")
    closed_port = ManagementClient("http://127.0.0.1:1", timeout=1)

    with caplog.at_level(logging.WARNING):
        assert wrong_password.overview() is None
        assert closed_port.queue("anything") is None
    assert ManagementClient.from_amqp_url(broker_url).overview() is not None
    assert "not-the-password" not in caplog.text and "401" in caplog.text


def test_unreachable_broker_is_unavailable_and_the_message_hides_the_password() -> None:
    url = "amqp://guest:s3cret-Passw0rd@127.0.0.1:1/%2F"

    with pytest.raises(BrokerUnavailable) as caught:
        open_connection(url)

    message = str(caught.value)
    assert "amqp://guest:***@127.0.0.1:1/%2F" in message
    assert "s3cret-Passw0rd" not in message and "s3cret-Passw0rd" not in repr(caught.value)


def test_wrong_password_is_a_broker_error_not_a_transient_one(broker_url: str) -> None:
    parts = urlsplit(broker_url)
    wrong = parts._replace(netloc=f"{parts.username or 'guest'}:wrong-pw-123@{parts.hostname}:{parts.port or 5672}")

    with pytest.raises(BrokerError) as caught:
        open_connection(wrong.geturl())

    assert not isinstance(caught.value, BrokerUnavailable)
    assert "refused the login" in str(caught.value)
    assert "wrong-pw-123" not in str(caught.value)

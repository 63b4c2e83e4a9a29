"""Every pika error is mapped once, explicitly, to a platform error that names the broker but never the password."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pika.exceptions as px
import pytest

from contract_platform.amqp import amqp_url, describe_broker, open_connection
from contract_platform.amqp.connection import ERROR_TABLE, broker_errors, broker_version, map_error
from contract_platform.amqp.http import ManagementClient
from contract_platform.errors import BrokerError, BrokerUnavailable, PublishRefused

SECRET = "pa55-w0rd-secret"
BROKER = "amqp://guest:***@rabbit:5672/%2F"
PIKA_ERRORS = [
    cls
    for _, cls in inspect.getmembers(px, inspect.isclass)
    if issubclass(cls, BaseException) and cls.__module__ == px.__name__
]


def _instance(cls: type[BaseException]) -> BaseException:
    """An instance carrying the password in its text, as a careless upstream message might."""
    if issubclass(cls, px.ConnectionClosed | px.ChannelClosed):
        return cls(320, f"CONNECTION_FORCED amqp://guest:{SECRET}@rabbit")
    if issubclass(cls, px.UnroutableError | px.NackError):
        return cls([])
    return cls(f"failed for amqp://guest:{SECRET}@rabbit and {SECRET}")


def test_pika_has_exceptions_to_check() -> None:
    assert len(PIKA_ERRORS) > 30


@pytest.mark.parametrize("cls", PIKA_ERRORS, ids=lambda cls: cls.__name__)
def test_every_pika_exception_is_mapped_explicitly(cls: type[BaseException]) -> None:
    assert cls in ERROR_TABLE, f"pika.exceptions.{cls.__name__} has no entry in ERROR_TABLE: add one"

    error = map_error(_instance(cls), BROKER, secret=SECRET)

    assert isinstance(error, BrokerError)
    assert BROKER in str(error)
    assert SECRET not in str(error)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (px.AMQPConnectionError("refused"), BrokerUnavailable),
        (px.StreamLostError("EOF"), BrokerUnavailable),
        (px.AMQPHeartbeatTimeout("missed"), BrokerUnavailable),
        (px.ConnectionClosedByBroker(320, "CONNECTION_FORCED - shutdown"), BrokerUnavailable),
        (ConnectionRefusedError(111, "Connection refused"), BrokerUnavailable),
        (TimeoutError("timed out"), BrokerUnavailable),
        (px.ProbableAuthenticationError("ACCESS_REFUSED"), BrokerError),
        (px.ProbableAccessDeniedError("NOT_ALLOWED"), BrokerError),
        (px.ConnectionClosedByBroker(530, "NOT_ALLOWED"), BrokerError),
        (px.ChannelClosedByBroker(406, "PRECONDITION_FAILED"), BrokerError),
        (px.UnroutableError([]), PublishRefused),
    ],
)
def test_transient_failures_are_unavailable_and_refusals_are_not(exc: BaseException, expected: type) -> None:
    assert type(map_error(exc, BROKER)) is expected


def test_mapping_refuses_errors_that_are_not_from_the_broker() -> None:
    with pytest.raises(TypeError):
        map_error(ValueError("not ours"), BROKER)


def test_broker_errors_chains_the_original() -> None:
    original = px.StreamLostError("EOF")
    with pytest.raises(BrokerUnavailable) as caught, broker_errors(BROKER):
        raise original
    assert caught.value.__cause__ is original


def test_unreachable_broker_message_has_the_redacted_url_only() -> None:
    with pytest.raises(BrokerUnavailable) as caught:
        open_connection(f"amqp://guest:{SECRET}@127.0.0.1:1/%2F", socket_timeout=1)

    assert "amqp://guest:***@127.0.0.1:1/%2F" in str(caught.value)
    assert SECRET not in str(caught.value)
    assert "retry" in str(caught.value)


def test_invalid_url_is_a_broker_error_without_the_password() -> None:
    with pytest.raises(BrokerError) as caught:
        open_connection(f"amqp://guest:{SECRET}@127.0.0.1:5672/%2F?heartbeat=soon")

    assert SECRET not in str(caught.value)
    assert "not valid" in str(caught.value)


@pytest.mark.parametrize(
    ("parts", "url"),
    [
        (("h", 5673, "u", "p", "vh"), "amqp://u:p@h:5673/vh"),
        (("h", None, "u", "p", "/"), "amqp://u:p@h/%2F"),
        (("h", 5672, "u", "p", None), "amqp://u:p@h:5672/%2F"),
        (("h", 5672, "us@r", "p:w/d%", "/prod"), "amqp://us%40r:p%3Aw%2Fd%25@h:5672/%2Fprod"),
        (("h", 5672, None, None, "vh"), "amqp://h:5672/vh"),
    ],
)
def test_amqp_url_encodes_every_part(parts: tuple, url: str) -> None:
    assert amqp_url(*parts) == url


def test_describe_broker_and_management_client_never_show_the_password() -> None:
    params = SimpleNamespace(
        host="rabbit", port=5672, virtual_host="/", credentials=SimpleNamespace(username="guest", password=SECRET)
    )
    connection = SimpleNamespace(_impl=SimpleNamespace(params=params, server_properties={"version": "3.10.8"}))

    assert describe_broker(connection) == BROKER
    assert broker_version(connection) == (3, 10, 8)
    client = ManagementClient.for_connection(connection)
    assert client is not None and SECRET not in repr(client)
    assert (client.base_url, client.user, client.vhost) == ("http://rabbit:15672", "guest", "/")
    from_url = ManagementClient.from_amqp_url(f"amqp://guest:{SECRET}@rabbit:5672/%2Fprod")
    assert (from_url.base_url, from_url.vhost) == ("http://rabbit:15672", "/prod")
    assert SECRET not in repr(from_url)

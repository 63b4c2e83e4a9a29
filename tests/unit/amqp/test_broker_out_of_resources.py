"""A broker out of file handles says so: what ran out, on which node, and how to raise the limit.

The management API's ``/api/nodes`` is answered by a fake transport (no broker needed)."""

from __future__ import annotations

from typing import Any

import httpx
import pika.exceptions as px
import pytest
from pika.adapters.utils.connection_workflow import AMQPConnectorStackTimeout

from contract_platform.amqp import connection as amqp_connection
from contract_platform.amqp.http import ManagementClient
from contract_platform.amqp.management import describe_resources, read_topology, resource_problem
from contract_platform.errors import BrokerOutOfResources, BrokerUnavailable, ManagementUnavailable

NODE = {
    "name": "rabbit@broker-1",
    "fd_used": 1010,
    "fd_total": 1024,
    "sockets_used": 3,
    "sockets_total": 829,
    "proc_used": 900,
    "proc_total": 1048576,
    "mem_alarm": False,
    "disk_free_alarm": False,
}


def answering(nodes: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch, *, listing_fails: bool = False) -> None:
    """``httpx.get`` as a broker whose /api/nodes answers ``nodes``; every other call times out, when asked."""

    def get(url: str, **_kwargs: Any) -> httpx.Response:
        request = httpx.Request("GET", url)
        if "/api/nodes" in url:
            return httpx.Response(200, json=nodes, request=request)
        if listing_fails:
            raise httpx.ReadTimeout("timed out", request=request)
        return httpx.Response(200, json=[], request=request)

    monkeypatch.setattr(httpx, "get", get)


def test_a_node_near_its_file_handle_limit_is_named_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    answering([NODE], monkeypatch)

    problem = resource_problem(ManagementClient("http://broker:15672"))

    assert problem is not None
    assert "rabbit@broker-1" in problem and "1,010 of its 1,024 file handles" in problem
    assert "ulimit -n" in problem and "LimitNOFILE" in problem


def test_a_healthy_node_or_an_alarm_free_answer_is_no_problem() -> None:
    healthy = NODE | {"fd_used": 40}
    assert describe_resources([healthy]) is None
    assert "memory alarm" in (describe_resources([healthy | {"mem_alarm": True}]) or "")
    assert "sockets" in (describe_resources([healthy | {"sockets_used": 820}]) or "")


def test_a_topology_read_that_times_out_says_the_broker_is_out_of_file_handles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answering([NODE], monkeypatch, listing_fails=True)

    with pytest.raises(ManagementUnavailable) as raised:
        read_topology(ManagementClient("http://broker:15672"), ["/"])

    assert "file handles" in str(raised.value) and "ulimit -n" in str(raised.value)


def test_an_amqp_handshake_that_times_out_on_an_exhausted_broker_is_out_of_resources(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answering([NODE], monkeypatch)

    def handshake(_params: Any) -> Any:
        raise px.AMQPConnectionError(AMQPConnectorStackTimeout("Timeout during AMQP handshake"))

    monkeypatch.setattr(amqp_connection.pika, "BlockingConnection", handshake)

    with pytest.raises(BrokerOutOfResources) as raised:
        amqp_connection.open_connection("amqp://guest:secret@broker:5672/%2F")

    assert isinstance(raised.value, BrokerUnavailable) and raised.value.exit_code == 3
    assert "1,010 of its 1,024 file handles" in str(raised.value) and "secret" not in str(raised.value)


def test_a_broker_that_is_simply_down_stays_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(url: str, **_kwargs: Any) -> httpx.Response:
        raise httpx.ConnectError("refused", request=httpx.Request("GET", url))

    monkeypatch.setattr(httpx, "get", refused)

    def handshake(_params: Any) -> Any:
        raise px.AMQPConnectionError(ConnectionRefusedError(111, "refused"))

    monkeypatch.setattr(amqp_connection.pika, "BlockingConnection", handshake)

    with pytest.raises(BrokerUnavailable) as raised:
        amqp_connection.open_connection("amqp://guest:secret@broker:5672/%2F")

    assert not isinstance(raised.value, BrokerOutOfResources)

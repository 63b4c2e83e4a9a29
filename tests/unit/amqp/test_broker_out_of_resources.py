"""A broker out of file handles says so: what ran out, on which node, and how to raise the limit.

The management API's ``/api/nodes`` is answered by a real local HTTP server (no broker needed), which
``CONTRACT_RABBITMQ_MANAGEMENT_URL`` points the platform at."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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
SLOW = 0.3  # the clients' timeout here: a listing that takes longer has timed out


def answering(
    nodes: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch, *, listing_fails: bool = False
) -> Iterator[str]:
    """A management API whose /api/nodes answers ``nodes`` and whose other listings answer ``[]``, or, with
    ``listing_fails``, too late; the platform's settings point at it. Yields its base URL."""

    class Api(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/api/nodes"):
                body = json.dumps(nodes).encode()
            elif listing_fails:
                time.sleep(SLOW * 4)
                body = b"[]"
            else:
                body = b"[]"
            try:
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the client gave up waiting
                pass

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("CONTRACT_RABBITMQ_MANAGEMENT_URL", url)
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture()
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    yield from answering([NODE], monkeypatch)


@pytest.fixture()
def slow_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    yield from answering([NODE], monkeypatch, listing_fails=True)


def test_a_node_near_its_file_handle_limit_is_named_with_the_fix(api: str) -> None:
    problem = resource_problem(ManagementClient(api))

    assert problem is not None
    assert "rabbit@broker-1" in problem and "1,010 of its 1,024 file handles" in problem
    assert "ulimit -n" in problem and "LimitNOFILE" in problem


def test_a_healthy_node_or_an_alarm_free_answer_is_no_problem() -> None:
    healthy = NODE | {"fd_used": 40}
    assert describe_resources([healthy]) is None
    assert "memory alarm" in (describe_resources([healthy | {"mem_alarm": True}]) or "")
    assert "sockets" in (describe_resources([healthy | {"sockets_used": 820}]) or "")


def test_a_topology_read_that_times_out_says_the_broker_is_out_of_file_handles(slow_api: str) -> None:
    with pytest.raises(ManagementUnavailable) as raised:
        read_topology(ManagementClient(slow_api, timeout=SLOW), ["/"])

    assert "file handles" in str(raised.value) and "ulimit -n" in str(raised.value)


def test_an_amqp_handshake_that_times_out_on_an_exhausted_broker_is_out_of_resources(
    api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def handshake(_params: Any) -> Any:
        raise px.AMQPConnectionError(AMQPConnectorStackTimeout("Timeout during AMQP handshake"))

    monkeypatch.setattr(amqp_connection.pika, "BlockingConnection", handshake)

    with pytest.raises(BrokerOutOfResources) as raised:
        amqp_connection.open_connection("amqp://guest:secret@broker:5672/%2F")

    assert isinstance(raised.value, BrokerUnavailable) and raised.value.exit_code == 3
    assert "1,010 of its 1,024 file handles" in str(raised.value) and "secret" not in str(raised.value)


def test_a_broker_that_is_simply_down_stays_unavailable(monkeypatch: pytest.MonkeyPatch, closed_port: int) -> None:
    # a port nobody listens on: the management API refuses, as the broker does
    monkeypatch.setenv("CONTRACT_RABBITMQ_MANAGEMENT_URL", f"http://127.0.0.1:{closed_port}")

    def handshake(_params: Any) -> Any:
        raise px.AMQPConnectionError(ConnectionRefusedError(111, "refused"))

    monkeypatch.setattr(amqp_connection.pika, "BlockingConnection", handshake)

    with pytest.raises(BrokerUnavailable) as raised:
        amqp_connection.open_connection("amqp://guest:secret@broker:5672/%2F")

    assert not isinstance(raised.value, BrokerOutOfResources)

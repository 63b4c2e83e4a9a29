"""``ManagementClient.get`` against a real local HTTP server: what each answer becomes, and that it stops asking."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from contract_platform.amqp.http import ManagementClient

ANSWERS = {
    "/api/overview": (200, b'{"rabbitmq_version": "4.1.0"}'),
    "/api/queues/%2F/missing": (404, b'{"error": "Object Not Found"}'),
    "/api/queues/%2F/moved": (301, b""),
    "/api/queues/%2F/broken": (500, b"oops"),
    "/api/queues/%2F/text": (200, b"not json"),
}


class Handler(BaseHTTPRequestHandler):
    seen: list[tuple[str, str]] = []

    def do_GET(self) -> None:
        Handler.seen.append((self.path, self.headers.get("Authorization", "")))
        expected = "Basic " + base64.b64encode(b"guest:s3cret").decode()
        status, body = (401, b"") if self.headers.get("Authorization") != expected else ANSWERS[self.path]
        self.send_response(status)
        if status == 301:
            self.send_header("Location", "/api/overview")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture()
def api() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Handler.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_answers_are_json_none_or_a_reason_to_stop_asking(api: str) -> None:
    client = ManagementClient(api, "guest", "s3cret")
    assert client.overview() == {"rabbitmq_version": "4.1.0"}
    assert client.queue("missing") is None
    assert client.queue("moved") is None  # a redirect is not followed
    assert client.queue("broken") is None and client.queue("text") is None
    assert not client._unavailable
    assert [path for path, _ in Handler.seen] == [
        "/api/overview",
        "/api/queues/%2F/missing",
        "/api/queues/%2F/moved",
        "/api/queues/%2F/broken",
        "/api/queues/%2F/text",
    ]


def test_refused_credentials_stop_the_client_asking(api: str, caplog: pytest.LogCaptureFixture) -> None:
    client = ManagementClient(api, "guest", "wrong")
    assert client.overview() is None and client.overview() is None
    assert len(Handler.seen) == 1
    assert "answered 401 for user 'guest'" in caplog.text and "wrong" not in caplog.text


def test_an_unreachable_api_stops_the_client_asking(caplog: pytest.LogCaptureFixture, closed_port: int) -> None:
    client = ManagementClient(f"http://127.0.0.1:{closed_port}", "guest", "s3cret", timeout=2)  # nothing listens
    assert client.overview() is None
    assert client._unavailable and "not reachable" in caplog.text
    assert client.get("overview") is None  # not asked again

"""tests/support/ports.py: who listens on a port, a port that stays closed, a port the kernel never hands out."""

from __future__ import annotations

import errno
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from tests.support.ports import Holder, closed_port, ephemeral_range, free_port, port_holder

LISTENER = "import socket, time; s = socket.create_server(('127.0.0.1', 0)); print(s.getsockname()[1], flush=True); time.sleep(120)"


@pytest.fixture()
def listening_child() -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A child in a session of its own listening on a port the kernel chose, and that port."""
    child = subprocess.Popen(
        [sys.executable, "-c", LISTENER], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert child.stdout is not None
        yield child, int(child.stdout.readline())
    finally:
        child.kill()
        child.wait(timeout=10)


def test_a_listener_in_a_session_the_test_started_is_its_own_and_any_other_is_another_s(
    listening_child: tuple[subprocess.Popen[str], int],
) -> None:
    child, port = listening_child

    assert port_holder(port, [child.pid]) is Holder.OURS
    assert port_holder(port, []) is Holder.ANOTHER  # the same socket, seen by a test that did not start it

    child.kill()
    child.wait(timeout=10)
    assert port_holder(port, [child.pid]) is None


def test_a_closed_port_refuses_connections_and_nobody_else_can_bind_it() -> None:
    with closed_port() as port:
        with socket.socket() as client:
            assert client.connect_ex(("127.0.0.1", port)) == errno.ECONNREFUSED
        for reuse in (False, True):
            with socket.socket() as other:
                other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, int(reuse))
                with pytest.raises(OSError) as taken:
                    other.bind(("127.0.0.1", port))
                assert taken.value.errno == errno.EADDRINUSE
        assert port_holder(port, []) is None  # bound, never listening


def test_a_free_port_is_one_the_kernel_never_hands_out_and_nobody_holds() -> None:
    low, _high = ephemeral_range()
    port = free_port()

    if low - 1024 >= 1000:
        assert port < low
    with socket.socket() as ours:
        ours.bind(("127.0.0.1", port))

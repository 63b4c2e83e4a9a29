"""Ports for the daemons the tests start, without a race between choosing a port and binding it.

A port read from a probe socket and closed again is free only until another process binds it. Under three
test workers that happened: a Spark master's UI port was taken in between, Spark moved its UI to the next
port, and the test read another Spark's page. So each daemon gets its port one of three ways:

- **it binds port 0 and the test reads back the port it got** (``logged_port``): the Spark master and
  worker, whose logs say which ports they bound;
- **it must be told its port** (Airflow's api-server, whose URL the task processes are given; a RabbitMQ
  node, whose clients reconnect to the same port after a restart): ``free_port`` chooses one below the
  kernel's ephemeral range, which no ``bind`` to port 0 and no outgoing connection is ever given, and
  ``port_holder`` says whether the process listening on it is one the test started. When another process
  holds it, the test starts its daemon again on another port; an answer counts only from its own daemon;
- **nothing may answer on it** (a broker or an API that is down): ``closed_port`` keeps the port bound,
  never listening, while the test runs, so connections are refused and no other process can bind it.
"""

from __future__ import annotations

import contextlib
import enum
import os
import random
import re
import socket
import subprocess
from collections.abc import Collection, Iterator
from pathlib import Path

from tests.support.waiting import wait_until

LISTEN = "0A"  # the TCP state of a listening socket in /proc/net/tcp
BELOW_EPHEMERAL = 10_000  # how many ports under the ephemeral range free_port chooses from


class Holder(enum.Enum):
    """Who listens on a port: a process the test started, or another one."""

    OURS = "ours"
    ANOTHER = "another"


def ephemeral_range() -> tuple[int, int]:
    """The ports the kernel hands out for ``bind`` to port 0 and outgoing connections (Linux's default if unread)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A port on 127.0.0.1 that no socket holds now, for a daemon that must be told its port before it starts.

    Chosen at random below the ephemeral range, so that only another explicit choice can take it before the
    daemon binds (the caller still checks, with ``port_holder``); where the range leaves no room below it,
    the kernel's choice.
    """
    low, _high = ephemeral_range()
    candidates = range(max(1024, low - BELOW_EPHEMERAL), low)
    for _ in range(200 if len(candidates) >= 1000 else 0):
        port = random.choice(candidates)  # random: parallel test workers seldom choose alike
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def free_ports(count: int) -> list[int]:
    """``count`` different ports, each as ``free_port`` chooses it."""
    chosen: list[int] = []
    while len(chosen) < count:
        if (port := free_port()) not in chosen:
            chosen.append(port)
    return chosen


@contextlib.contextmanager
def closed_port() -> Iterator[int]:
    """A port where nothing answers while the block runs: bound by this process, never listening.

    A connection to it is refused, as to a service that is down, and no other process can bind it meanwhile
    (the socket does not set ``SO_REUSEADDR``).
    """
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield int(held.getsockname()[1])


def logged_port(log: Path, pattern: str, process: subprocess.Popen[bytes], timeout: float = 90.0) -> int:
    """The port a daemon started on port 0 says it bound: the first group of ``pattern`` in its ``log``."""

    def found() -> int:
        if process.poll() is not None:
            raise AssertionError(f"{process.args!r} exited with {process.returncode}:\n{tail(log)}")
        match = re.search(pattern, log.read_text("utf-8", errors="replace")) if log.exists() else None
        return int(match.group(1)) if match else 0

    return wait_until(found, timeout, 0.2, what=f"{pattern!r} in {log}", diagnose=lambda: tail(log))


def tail(log: Path, characters: int = 3000) -> str:
    return log.read_text("utf-8", errors="replace")[-characters:] if log.exists() else "(no log)"


def port_holder(port: int, sessions: Collection[int]) -> Holder | None:
    """Who listens on TCP ``port`` (any address): a process of one of ``sessions`` (the session ids of the
    processes the test started with ``start_new_session=True``: they and all their children), another
    process, or nobody (None)."""
    listening = _listening_inodes(port)
    if not listening:
        return None
    ours = set().union(*(_socket_inodes(pid) for pid in _session_members(sessions)))
    return Holder.OURS if listening & ours else Holder.ANOTHER


def _listening_inodes(port: int) -> set[int]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(int(fields[9]))
    return inodes


def _session_members(sessions: Collection[int]) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[3]) in sessions:  # after the command name: state ppid pgrp session
            members.append(int(entry.name))
    return members


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    with contextlib.suppress(OSError), os.scandir(f"/proc/{pid}/fd") as descriptors:
        for descriptor in descriptors:
            with contextlib.suppress(OSError):
                target = os.readlink(descriptor.path)
                if target.startswith("socket:["):
                    inodes.add(int(target[8:-1]))
    return inodes

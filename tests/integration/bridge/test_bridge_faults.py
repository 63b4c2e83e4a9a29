"""Faults during a migration: kill -9 the bridge 10 times and restart the broker 3 times, lose nothing.

The broker restarts happen on a private RabbitMQ node started by this test (``private_node.py``): the
shared broker on 5672 is never stopped. 100,000 v1 messages are preloaded in the tap queue; a bridge
subprocess in follow mode migrates them while, at random points of progress, the harness kills it
with SIGKILL (and starts a new one) or restarts the broker's application. At the end every v1
messageId has a v2 twin, nothing else arrived on v2, and a messageId seen twice on v2 carries the
same message both times (a redelivery published again: the only duplicate allowed).

``BRIDGE_FAULT_SEED`` replays a schedule; ``BRIDGE_FAULT_MESSAGES`` changes the volume.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika
import pika.exceptions
import pytest
from tests.integration.bridge.bridge_support import Lane, declare, make_lane, publish, read_all, v1_envelopes
from tests.support.private_node import NodeUnavailable, PrivateNode

pytestmark = [pytest.mark.integration, pytest.mark.timeout(480)]

MESSAGES = int(os.environ.get("BRIDGE_FAULT_MESSAGES", "100000"))
KILLS = 10
BROKER_RESTARTS = 3
PROGRESS_TIMEOUT = 120.0  # seconds without any progress before the test gives up


@pytest.fixture
def node(tmp_path: Path) -> Iterator[PrivateNode]:
    try:
        private = PrivateNode(tmp_path / "node")
        private.start()
    except NodeUnavailable as exc:
        pytest.skip(f"cannot start a private RabbitMQ node here: {exc}")
    try:
        yield private
    finally:
        private.stop()


class Monitor:
    """Counts on the private node through a connection that survives broker restarts."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._connection: Any = None

    def ready(self, queue: str) -> int | None:
        counts = self.counts(queue)
        return None if counts is None else counts[0]

    def counts(self, queue: str) -> tuple[int, int] | None:
        """(ready messages, consumers) of ``queue``, or None while the broker is away."""
        try:
            if self._connection is None or not self._connection.is_open:
                parameters = pika.URLParameters(self.url + "?connection_attempts=1&socket_timeout=2")
                self._connection = pika.BlockingConnection(parameters)
            channel = self._connection.channel()
            ok = channel.queue_declare(queue, passive=True).method
            channel.close()
            return int(ok.message_count), int(ok.consumer_count)
        except (pika.exceptions.AMQPError, OSError):
            self._connection = None
            return None

    def close(self) -> None:
        if self._connection is not None and self._connection.is_open:
            self._connection.close()


class Bridges:
    """The bridge subprocess, restarted whenever it is killed or exits."""

    def __init__(self, lane: Lane, logs: Path) -> None:
        self.lane = lane
        self.logs = logs
        self.started = 0
        self.unexpected_exits: list[tuple[int, str]] = []
        self.process: subprocess.Popen[bytes] | None = None
        self.since = time.monotonic()

    def start(self, *extra: str) -> subprocess.Popen[bytes]:
        self.started += 1
        self.since = time.monotonic()
        log = (self.logs / f"bridge-{self.started}.log").open("wb")
        self.process = subprocess.Popen(
            self.lane.bridge_command(*extra), env=self.lane.environment(), stdout=log, stderr=subprocess.STDOUT
        )
        log.close()
        return self.process

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self.start("--follow")

    def keep_alive(self) -> None:
        """Restart a bridge that exited on its own (recorded: it should only happen on broker errors)."""
        assert self.process is not None
        if self.process.poll() is not None:
            log = (self.logs / f"bridge-{self.started}.log").read_text(errors="replace")
            self.unexpected_exits.append((self.process.returncode, log[-600:]))
            self.start("--follow")

    def stop(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=90)


def test_kill_9_and_broker_restarts_lose_nothing(node: PrivateNode, tmp_path: Path) -> None:
    seed = int(os.environ.get("BRIDGE_FAULT_SEED", random.randrange(1 << 30)))
    chooser = random.Random(seed)
    began = time.monotonic()
    lane = make_lane(node.url, tmp_path)
    declare(lane)
    envelopes = v1_envelopes(MESSAGES)
    expected = {e["metadata"]["messageId"] for e in envelopes}
    publish(lane, envelopes, confirm=False)
    del envelopes
    monitor = Monitor(node.url)
    _wait(lambda: monitor.ready(lane.tap) == MESSAGES, "the preloaded v1 messages")

    faults = ["kill"] * KILLS + ["broker"] * BROKER_RESTARTS
    chooser.shuffle(faults)
    # Random points of the migration (v2 messages), each at least MESSAGES / 200 after the end of the previous
    # fault, so that every fault hits a bridge in full flight (publishes in flight, acknowledgements pending).
    points = sorted(chooser.sample(range(MESSAGES // 50, MESSAGES * 85 // 100), len(faults)))
    bridges = Bridges(lane, tmp_path)
    history: list[str] = []
    bridges.start("--follow")
    migrating = time.monotonic()
    try:
        done = 0  # v2 messages when the previous fault was over
        for point, fault in zip(points, faults, strict=True):
            due = min(max(point, done + MESSAGES // 200), MESSAGES * 97 // 100)
            _wait(lambda due=due: (monitor.ready(lane.v2_queue) or 0) >= due, f"{due} on v2", bridges)
            history.append(f"{fault}@{due} (bridge up {time.monotonic() - bridges.since:.1f} s)")
            if fault == "kill":
                bridges.kill()
            else:
                node.restart_app()
            _wait(lambda: monitor.ready(lane.v2_queue) is not None, "the broker back", bridges)
            done = monitor.ready(lane.v2_queue) or due
        _wait(
            lambda: (monitor.ready(lane.v2_queue) or 0) >= MESSAGES and monitor.counts(lane.tap) == (0, 1),
            "the end (tap queue empty, its bridge consuming: SIGTERM finds its handler installed)",
            bridges,
        )
        assert bridges.stop() == 0
        finish = bridges.start("--idle-timeout", "3")  # whatever the last stop gave back (nothing, normally)
        assert finish.wait(timeout=120) == 0, (tmp_path / f"bridge-{bridges.started}.log").read_text()
        orphans = _processes_naming(lane.tap, wait=5.0)  # e.g. helpers of killed bridges
    finally:
        monitor.close()
        if bridges.process is not None and bridges.process.poll() is None:
            bridges.process.kill()
        for pid in _processes_naming(lane.tap, wait=0):
            os.kill(pid, signal.SIGKILL)  # our own leftovers only: the tap queue name is unique to this test
    migrated_in = time.monotonic() - migrating

    on_v2 = read_all(node.url, lane.v2_queue, idle=3.0)
    bodies: dict[str, set[str]] = collections.defaultdict(set)
    for _, body in on_v2:
        bodies[json.loads(body)["metadata"]["messageId"]].add(hashlib.sha256(body).hexdigest())
    duplicates = len(on_v2) - len(bodies)
    print(
        f"\nfault test: seed {seed}, {MESSAGES} messages, {len(on_v2)} on v2 ({duplicates} redelivered duplicates), "
        f"{bridges.started} bridge processes, {BROKER_RESTARTS} broker restarts, "
        f"unexpected exits {[code for code, _ in bridges.unexpected_exits]}, "
        f"migration {migrated_in:.0f} s, whole test {time.monotonic() - began:.0f} s; faults: {', '.join(history)}"
    )
    assert bodies.keys() == expected, (
        f"seed {seed}: missing {len(expected - bodies.keys())}, extra {len(bodies.keys() - expected)}"
    )
    assert all(len(versions) == 1 for versions in bodies.values()), "a messageId arrived twice with different bodies"
    assert read_all(node.url, lane.tap, idle=1.0) == []
    assert read_all(node.url, lane.parking_lot, idle=1.0) == []
    for code, log in bridges.unexpected_exits:  # a bridge may only give up when the broker was away
        assert code == 3, log
    assert orphans == [], "processes of killed bridges outlived them"


def _processes_naming(marker: str, wait: float) -> list[int]:
    """Live processes whose command line names ``marker``, once none is left or after ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                named = marker.encode() in (entry / "cmdline").read_bytes()
                if named and (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z":  # not a zombie
                    found.append(int(entry.name))
            except OSError:  # it exited meanwhile
                continue
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.2)


def _wait(condition: Any, what: str, bridges: Bridges | None = None) -> None:
    deadline = time.monotonic() + PROGRESS_TIMEOUT
    while not condition():
        if bridges is not None:
            bridges.keep_alive()
        if time.monotonic() > deadline:
            raise AssertionError(f"no progress towards {what} in {PROGRESS_TIMEOUT:.0f} s")
        time.sleep(0.05)

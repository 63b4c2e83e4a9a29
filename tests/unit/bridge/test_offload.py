"""OffloadWorker: batches translated in a forked helper, in order; a failure there is reported, not hidden."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.support.waiting import wait_until

from contract_platform.bridge.offload import OffloadWorker, WorkerFailed


def shout(body: bytes) -> bytes:
    if body == b"boom":
        raise ValueError("boom")
    return body.upper()


def test_a_batch_comes_back_translated_and_in_order() -> None:
    worker = OffloadWorker(shout)
    worker.start()
    try:
        worker.send([b"a", b"b", b"c"])
        assert worker.receive() == [b"A", b"B", b"C"]
        worker.send([b"d"])
        assert worker.receive() == [b"D"]
    finally:
        worker.close()


def test_an_exception_in_the_helper_is_raised_in_the_parent() -> None:
    worker = OffloadWorker(shout)
    worker.start()
    try:
        worker.send([b"ok", b"boom"])
        with pytest.raises(WorkerFailed, match="ValueError"):
            worker.receive()
    finally:
        worker.close()


def test_a_dead_helper_is_reported() -> None:
    worker = OffloadWorker(shout)
    worker.start()
    assert worker.pid is not None
    os.kill(worker.pid, signal.SIGKILL)  # the helper dies (e.g. out of memory)
    wait_until(lambda: not _alive(worker.pid), 5, what="the helper gone")  # type: ignore[arg-type]
    with pytest.raises(WorkerFailed, match="died|gone"):
        worker.send([b"a"])
        worker.receive()
    worker.close()


def _translate_in_a_daemonic_process(results: Any) -> None:
    worker = OffloadWorker(shout)
    worker.start()
    try:
        worker.send([b"a", b"b"])
        results.put(worker.receive())
    finally:
        worker.close()
    results.put(worker.pid)


def test_the_helper_starts_from_a_daemonic_process_as_a_celery_prefork_task_runs() -> None:
    """Celery's default pool runs each task in a daemonic process, from which multiprocessing refuses children."""
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    task = context.Process(target=_translate_in_a_daemonic_process, args=(results,), daemon=True)
    task.start()
    try:
        assert results.get(timeout=30) == [b"A", b"B"]
        assert results.get(timeout=30) is None  # closed: the helper was reaped
        task.join(30)
        assert task.exitcode == 0
    finally:
        if task.is_alive():
            task.kill()


HOLDER = """
import sys, time
from contract_platform.bridge.offload import OffloadWorker

def slow(body):
    time.sleep(0.5)
    return body * 100_000  # a result far larger than a pipe buffer: the helper blocks writing it

worker = OffloadWorker(slow)
worker.start()
worker.send([b"x"] * 4)
print(worker.pid, flush=True)
time.sleep(60)
"""


def test_the_helper_does_not_outlive_a_parent_killed_with_sigkill() -> None:
    parent = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True)
    helper = 0
    try:
        assert parent.stdout is not None
        helper = int(parent.stdout.readline())
        # The scenario under test: the helper has finished slow() (0.5 s) and is blocked writing a result
        # larger than the pipe. Nothing outside the helper shows that moment, so the test gives it the time.
        time.sleep(1.0)
        parent.kill()
        parent.wait(10)
        wait_until(lambda: not _alive(helper), 5, what=f"the helper {helper} gone after its parent was killed")
    finally:
        if parent.poll() is None:
            parent.kill()
        if helper and _alive(helper):  # the test failed: do not leave the helper behind
            os.kill(helper, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has exited

"""A helper process for the CPU-heavy half of a relay: the AMQP loop and the translation run side by side.

The relay's own process decodes deliveries, publishes and settles confirms; parsing, migrating,
validating and encoding a message costs about as much again, so it runs here, in a process forked
from the relay (it inherits the translator as it is: nothing is pickled but bodies and results).

::

    worker = OffloadWorker(prepare)      # prepare(body: bytes) -> picklable result
    worker.start()                       # fork; the pipe's fileno() goes into the relay's IO loop
    worker.send([body, ...])             # one batch at a time
    worker.receive()                     # -> [prepare(body), ...] in the same order

One batch is in flight at a time, so neither side can block the other on a full pipe. The helper
exits when it is sent ``None``, when the pipe closes, or when its parent is gone, even after a
``kill -9``: the kernel kills it (``PR_SET_PDEATHSIG`` on Linux), its writes fail (it closes its copy
of the parent's end of the pipe), and it checks its parent every second. It never outlives the relay.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["OffloadWorker", "WorkerFailed"]

_PARENT_CHECK_SECONDS = 1.0
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class WorkerFailed(RuntimeError):
    """The helper process died or raised; the batch it held was not translated."""


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when the process that forked it dies (elsewhere the checks below remain)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _serve(connection: Any, parents_end: Any, prepare: Callable[[bytes], Any], parent: int) -> None:
    parents_end.close()  # else a dead parent's end stays open here and a write to it blocks forever
    with contextlib.suppress(ValueError):  # the fork's one thread is its main thread; this is belt and braces
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent's handlers were inherited by the fork
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the parent, which then stops us
    _die_with_parent()
    if os.getppid() != parent:  # it died before the line above
        return
    try:
        while True:
            if not connection.poll(_PARENT_CHECK_SECONDS):
                if os.getppid() != parent:
                    return
                continue
            batch = connection.recv()
            if batch is None:
                return
            try:
                connection.send([prepare(body) for body in batch])
            except Exception as exc:  # a bug in prepare: report it, the parent stops
                connection.send(WorkerFailed(f"the translation helper failed: {exc!r}"))
    except (EOFError, OSError):
        return


class OffloadWorker:
    def __init__(self, prepare: Callable[[bytes], Any]) -> None:
        self.prepare = prepare
        self._connection: Any = None
        self._pid: int | None = None
        self._exit_code: int | None = None

    def start(self) -> None:
        """Fork the helper with ``os.fork`` (see the module docstring for why not ``multiprocessing.Process``)."""
        ours, theirs = multiprocessing.Pipe(duplex=True)
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the helper: serve, then leave without running the parent's atexit handlers or finalizers
            code = 0
            try:
                _serve(theirs, ours, self.prepare, parent)
            except BaseException:  # noqa: B036 - whatever happens, the helper must not return into the relay's code
                code = 1
            finally:
                os._exit(code)
        theirs.close()
        self._connection = ours
        self._pid = pid
        self._exit_code = None

    @property
    def pid(self) -> int | None:
        """The helper's process id while it runs (None before ``start`` and after ``close``)."""
        return self._pid

    def fileno(self) -> int:
        return int(self._connection.fileno())

    def send(self, bodies: list[bytes]) -> None:
        try:
            self._connection.send(bodies)
        except OSError as exc:
            raise WorkerFailed(f"the translation helper is gone ({self._describe()}): {exc}") from exc

    def receive(self) -> list[Any]:
        try:
            results = self._connection.recv()
        except (EOFError, OSError) as exc:
            raise WorkerFailed(f"the translation helper died ({self._describe()})") from exc
        if isinstance(results, WorkerFailed):
            raise results
        return list(results)

    def close(self, timeout: float = 5.0) -> None:
        """Ask the helper to exit and wait for it; kill it if it does not."""
        if self._connection is not None:
            with contextlib.suppress(OSError):
                self._connection.send(None)
            self._connection.close()
            self._connection = None
        if self._pid is not None:
            if not self._wait(timeout):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self._pid, signal.SIGKILL)
                self._wait(timeout)
            self._pid = None

    def _wait(self, timeout: float) -> bool:
        """Reap the helper within ``timeout`` seconds; True when it has exited (and its exit code is kept)."""
        if self._pid is None:
            return True
        deadline = time.monotonic() + timeout
        while True:
            try:
                pid, status = os.waitpid(self._pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere (a SIGCHLD handler of the host process)
                return True
            if pid:
                self._exit_code = os.waitstatus_to_exitcode(status)
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    def _describe(self) -> str:
        if self._pid is None:
            return "not started"
        self._wait(0)
        return f"pid {self._pid}, exit code {self._exit_code}"

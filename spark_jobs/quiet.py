"""A quiet JVM for ``contractctl``'s Spark-backed verbs: the platform's lines on the terminal, Spark's in a file.

A JVM that pyspark launches inherits the process's standard output and error, and writes to them for
its whole life: the JVM's own warnings (incubator modules), log4j's start-up lines ("Using Spark's
default log4j profile"), Spark's warnings (host name, native-hadoop library) and, through it, the
Python workers' output. In a pull request's log that chatter hides the lines that matter.

``quiet_spark(verb, verbose=...)`` wraps a verb's run: while it is active, a driver JVM launched by
``build_session`` (``jvm_output``) gets ``<data>/logs/cli/<verb>-<UTC time>-<pid>.log`` as both its
standard output and error (file descriptors 1 and 2 point there during the launch only, so the
platform's own lines still reach the terminal), and pyspark's and py4j's Python log records and
Python warnings go to the same file. The log's path is printed on stderr when the verb fails (an
exception or a non-zero exit code) or always with ``--verbose``; a verb that never launched a JVM (a
session already active, bad input found first) has no log and prints nothing, nor does a verb whose
reader left (``contractctl quality ... | head -1``: a closed pipe is no failure).

``spark_jobs.session.local_session`` is the one start-Spark/stop-Spark block of the verbs' runners (``spark_jobs/runners.py``)
and the benchmarks: a session, stopped at the end when it was created here (``spark_jobs/session.py``).
Nothing here imports pyspark at module level.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contract_platform import settings

if TYPE_CHECKING:
    pass

__all__ = ["PYTHON_LOGGERS", "SparkLog", "jvm_output", "log_path", "quiet_spark", "run_quietly"]

PYTHON_LOGGERS = ("py4j", "pyspark")  # their records go to the log while a verb is quiet


def log_path(verb: str, now: datetime | None = None) -> Path:
    """``<data>/logs/cli/<verb>-<UTC time>-<pid>.log``: one file per run, never shared by two processes."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    folder = settings.data_dir() / "logs" / "cli"
    path = folder / f"{verb}-{stamp}-{os.getpid()}.log"
    again = 1
    while path.exists():  # a second run in the same process and second
        again += 1
        path = folder / f"{verb}-{stamp}-{os.getpid()}-{again}.log"
    return path


@dataclass
class SparkLog:
    """The log of one quiet verb run; ``exit_code`` is set by the verb (non-zero: its path is printed)."""

    verb: str
    path: Path
    verbose: bool = False
    exit_code: int | None = None
    deferred: bool = False  # the verb announces the path itself, once its verdict is known (``announce``)
    announced: bool = False

    def write(self, text: str) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8", errors="backslashreplace") as handle:
                handle.write(text if text.endswith("\n") else text + "\n")
        except OSError:  # a log that cannot be written must not fail the verb
            pass

    def announce(self, *, failed: bool) -> None:
        """Print the log's path on stderr when the run failed or is verbose, and the log exists (once)."""
        if self.announced or not (failed or self.verbose) or not self.path.exists():
            return
        self.announced = True
        sys.stderr.write(f"contractctl: Spark and JVM log: {self.path}\n")


_active: SparkLog | None = None


@contextmanager
def quiet_spark(verb: str, *, verbose: bool = False, defer: bool = False) -> Iterator[SparkLog]:
    """While active, a JVM launched here and pyspark's Python logs and warnings write to the verb's log file.

    On an exception the path is printed; otherwise when ``exit_code`` is non-zero or ``verbose``. With
    ``defer`` the caller prints it (``SparkLog.announce``) once it knows its verdict."""
    global _active
    log = SparkLog(verb, log_path(verb), verbose=verbose, deferred=defer)
    previous, _active = _active, log
    handler = _LogHandler(log)
    saved = [(logging.getLogger(name), logging.getLogger(name).propagate) for name in PYTHON_LOGGERS]
    for logger, _ in saved:
        logger.addHandler(handler)
        logger.propagate = False
    failed = True
    try:
        with warnings.catch_warnings():  # restores showwarning and the filters afterwards

            def to_log(
                message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None
            ) -> None:
                log.write(warnings.formatwarning(message, category, filename, lineno, line))

            warnings.showwarning = to_log
            yield log
        failed = log.exit_code not in (None, 0)
    except BrokenPipeError:  # the reader of the output left (``| head``): no failure, and nothing more is said
        log.announced = True
        raise
    finally:
        for logger, propagate in saved:
            logger.removeHandler(handler)
            logger.propagate = propagate
        _active = previous
        if failed or not defer:
            log.announce(failed=failed)


def run_quietly(verb: str, verbose: bool, body: Callable[[], int]) -> int:
    """``body()`` (a verb's run) inside ``quiet_spark``; its exit code decides whether the log's path is printed."""
    with quiet_spark(verb, verbose=verbose) as log:
        log.exit_code = body()
        return log.exit_code


class _LogHandler(logging.Handler):
    def __init__(self, log: SparkLog) -> None:
        super().__init__(logging.INFO)
        self.log = log
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.log.write(self.format(record))
        except Exception:  # logging must never fail the verb
            self.handleError(record)


@contextmanager
def jvm_output() -> Iterator[None]:
    """Around the launch of a driver JVM: while a verb is quiet, the JVM's stdout and stderr are its log.

    File descriptors 1 and 2 point to the log while the JVM starts (it inherits them and keeps them),
    and are restored afterwards, so the process's own output goes where it went before."""
    log = _active
    if log is None:
        yield
        return
    try:
        log.path.parent.mkdir(parents=True, exist_ok=True)
        target = os.open(log.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError:  # no writable data folder: the JVM talks to the terminal, as before
        yield
        return
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = (os.dup(1), os.dup(2))
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with suppress(OSError, ValueError):
                stream.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)

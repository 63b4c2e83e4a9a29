"""Waiting on a condition with a deadline, never for a fixed time (docs/contributing.md#test-support)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T],
    timeout: float = 30.0,
    interval: float = 0.1,
    *,
    what: str,
    diagnose: Callable[[], str] | None = None,
) -> T:
    """Call ``condition`` until it returns something truthy, and return that.

    Fails the test with ``not within <timeout> s: <what> (last seen: <value>)`` when the deadline
    passes, so the message says what the test waited for, not only that it waited; ``diagnose``
    adds what would explain it (a log's tail, say).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            extra = f"\n{diagnose()}" if diagnose is not None else ""
            raise AssertionError(f"not within {timeout:g} s: {what} (last seen: {value!r}){extra}")
        time.sleep(interval)


def wait_for_value(read: Callable[[], T], expected: T, timeout: float = 30.0, interval: float = 0.1, *, what: str) -> T:
    """Read until the value equals ``expected``; the failure names the last value read."""
    seen: list[T] = []

    def equal() -> bool:
        seen[:] = [read()]
        return seen[0] == expected

    try:
        wait_until(equal, timeout, interval, what=what)
    except AssertionError:
        raise AssertionError(f"not within {timeout:g} s: {what}: {seen[0]!r}, expected {expected!r}") from None
    return seen[0]

"""Timing the benchmarks share: the best of repeated passes, per item."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

__all__ = ["best_us"]


def best_us(
    action: Callable[[], Any], count: int, repeat: int, clock: Callable[[], float] = time.perf_counter
) -> float:
    """Microseconds per item of the fastest of ``repeat`` runs of ``action``, which handles ``count`` items."""
    times = []
    for _ in range(repeat):
        started = clock()
        action()
        times.append(clock() - started)
    return round(min(times) / count * 1e6, 2)

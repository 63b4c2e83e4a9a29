"""Readers per version over time, from the reader sessions the broker activity recorder stores.

A consumer count sampled when a DAG happens to run misses every reader that came and went in between (a
batch job, a service that read for a minute), so a migration's cutover is drawn from what the recorder saw
continuously (``contractctl record-activity``, docs/retirement-audit.md#continuous-reader-evidence-readers-check):

- a **reader** is one connection reading one of the version's consumer queues (``consumers[].queue``, in the
  platform's virtual host): two channels of one connection on one queue are one reader, two connections (two
  instances of a service) two;
- at every moment, the version has as many readers as distinct readers with a session open then: attached at
  or before it (a session the recorder found already attached counts from the window's start) and not yet
  detached (a session still attached counts until the end);
- ``readers_over_time`` is that count as a step series over a window: its value at the window's start, then
  at each moment the count changes the count before and the count after (so a line through the points draws
  the steps), and its value at the end.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from contract_platform.catalog.model import Contract
from contract_platform.evidence.records import ReaderSession
from contract_platform.evidence.registry import Registry

__all__ = ["ReaderCount", "reader_of", "readers_over_time", "version_sessions"]


@dataclass(frozen=True)
class ReaderCount:
    at: datetime
    readers: int


def reader_of(session: ReaderSession) -> tuple[str, str, str]:
    """Who reads: the connection (its name, else its channel when the broker named none) on one queue."""
    return (session.vhost, session.queue, session.connection_name or session.channel)


def version_sessions(
    registry: Registry, contract: Contract, vhost: str, *, since: datetime, until: datetime
) -> list[ReaderSession]:
    """The recorded sessions on ``contract``'s consumer queues in ``vhost`` that overlap ``since``..``until``."""
    queues = [(vhost, consumer.queue) for consumer in contract.consumers]
    return registry.reader_sessions(queues, since=since, until=until) if queues else []


def readers_over_time(sessions: Iterable[ReaderSession], *, since: datetime, until: datetime) -> list[ReaderCount]:
    """The distinct readers of ``sessions`` over ``since``..``until`` as a step series (this module's docstring)."""
    spans: dict[tuple[str, str, str], list[tuple[datetime, datetime]]] = {}
    for session in sessions:
        start = max(session.attached_at or since, since)
        end = min(session.detached_at or until, until)
        if start < end:  # a session of no length is no step
            spans.setdefault(reader_of(session), []).append((start, end))
    changes: Counter[datetime] = Counter()
    for found in spans.values():
        for start, end in _merged(found):  # one reader counts once, however many sessions it held at a time
            changes[start] += 1
            if end < until:
                changes[end] -= 1
    count = changes.pop(since, 0)
    points = [ReaderCount(since, count)]
    for moment in sorted(changes):
        if changes[moment]:
            points.append(ReaderCount(moment, count))
            count += changes[moment]
            points.append(ReaderCount(moment, count))
    points.append(ReaderCount(until, count))
    return points


def _merged(spans: Iterable[tuple[datetime, datetime]]) -> list[tuple[datetime, datetime]]:
    """Overlapping or touching spans joined, in time order."""
    joined: list[tuple[datetime, datetime]] = []
    for start, end in sorted(spans):
        if joined and start <= joined[-1][1]:
            joined[-1] = (joined[-1][0], max(joined[-1][1], end))
        else:
            joined.append((start, end))
    return joined

"""The recording audit puts the queues of a version under retirement under delivery tracing, and judges what the
trace saw (docs/retirement-audit.md#every-delivery-traced; the mechanism: ``contract_platform.amqp.tracing``).

``retirement.watch.watch_deliveries`` (pika): before its own peek, the audit binds each queue of the version to its registry's trace
queue in the queue's virtual host, switches tracing on there and asks the recorder (through the store) to
trace them. From then on every message any client takes from those queues is seen, whatever it is named and
however briefly it stays connected.

``delivery_obstacles``: what the trace says of each queue over the span:

- a queue not traced before some moment (or not at all): UNKNOWN until then; before it only the delivery
  counters judged, which miss a poller whose channel closed before the broker's statistics interval;
- a trace the recorder has not confirmed up to now (its canary did not come back, the recorder is behind or
  stopped): UNKNOWN from the last confirmed moment, with the reason;
- deliveries: each is a reader (FAIL) naming its connection, peer, user, the interval and the count, except
  those the platform's own peek took: each recording audit stores how many messages its peek took from each
  queue and when (``QueueCounters.own_deliver_get`` from ``observed_at`` to ``own_until``); deliveries whose
  interval meets that window are explained up to that count, the connections named like the platform's first.
  A client that reads during the audit's own peek therefore still shows: the deliveries in the window exceed
  what the peek took.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from contract_platform.amqp.tracing import untraceable
from contract_platform.evidence import Verdict
from contract_platform.evidence.records import DeliveryWatch, QueueCounters, ReaderSession
from contract_platform.evidence.registry import Registry
from contract_platform.retirement.model import Obstacle, iso

__all__ = ["OWN_CONNECTION_PREFIX", "TRACE_TOLERANCE", "delivery_obstacles", "explained", "wait_for_trace"]

OWN_CONNECTION_PREFIX = "contract-platform"  # the platform's connections are named so (amqp.connection)
TRACE_TOLERANCE = timedelta(seconds=1)


def wait_for_trace(
    registry: Registry, queues: Sequence[tuple[str, str]], *, now: datetime, wait: timedelta
) -> list[DeliveryWatch]:
    """The watches of ``queues``, once the recorder has confirmed each up to ``now`` (or ``wait`` has passed)."""
    deadline = time.monotonic() + wait.total_seconds()
    while True:
        watches = registry.delivery_watches(queues)
        behind = [w for w in watches if w.confirmed_until is None or w.confirmed_until < now]
        if not behind or time.monotonic() >= deadline:
            return watches
        time.sleep(0.2)


def explained(sessions: Sequence[ReaderSession], counters: Sequence[QueueCounters]) -> list[ReaderSession]:
    """The traced deliveries (``source`` "delivery") the platform's own peeks do not explain, per queue.

    Each recording audit's peek took ``own_deliver_get`` messages from a queue between ``observed_at`` and
    ``own_until``; that many deliveries whose interval meets the window are the peek's, those of connections named
    like the platform's first. A session holding more deliveries than are explained stays, with the rest."""
    windows: dict[tuple[str, str], list[list[Any]]] = {}
    for row in counters:
        if row.own_deliver_get > 0 and row.own_until is not None:
            windows.setdefault((row.vhost, row.queue), []).append([row.observed_at, row.own_until, row.own_deliver_get])
    left: list[ReaderSession] = []
    ordered = sorted(
        (s for s in sessions if s.source == "delivery"),
        key=lambda s: (not (s.connection_name or "").startswith(OWN_CONNECTION_PREFIX), s.attached_at or s.detached_at),
    )
    for session in ordered:
        count = session.deliveries or 1
        for window in windows.get((session.vhost, session.queue), []):
            start, end, budget = window
            if budget <= 0 or not _meets(session, start, end):
                continue
            used = min(budget, count)
            window[2] -= used
            count -= used
            if count == 0:
                break
        if count > 0:
            left.append(_with_count(session, count))
    return left


def _meets(session: ReaderSession, start: datetime, end: datetime) -> bool:
    after = session.attached_at
    before = session.detached_at
    return (after is None or after <= end + TRACE_TOLERANCE) and (before is None or before >= start - TRACE_TOLERANCE)


def _with_count(session: ReaderSession, count: int) -> ReaderSession:
    return replace(session, deliveries=count)


def delivery_obstacles(
    labels: dict[tuple[str, str], str], watches: Sequence[DeliveryWatch], *, now: datetime
) -> list[Obstacle]:
    """What the trace leaves unknown of each queue, for the ``readers`` check."""
    by_key = {(w.vhost, w.queue): w for w in watches}
    found: list[Obstacle] = []

    def unknown(start: datetime | None, end: datetime, text: str, label: str) -> None:
        found.append(Obstacle("untraced", Verdict.UNKNOWN, start, end, text, label))

    for key, label in labels.items():
        watch = by_key.get(key)
        why = untraceable(key[1])
        if why is not None:
            unknown(
                None,
                now,
                f"{label}: its deliveries cannot be traced: {why} (a reader polling it with basic.get could go "
                "unseen); rename the queue, or delete it if nothing needs it",
                label,
            )
            continue
        if watch is None or watch.traced_from is None:
            unknown(
                None,
                now,
                f"{label}: its deliveries are not traced (a reader polling with basic.get could go unseen): run the "
                "audit with --record, which traces them",
                label,
            )
            continue
        unknown(
            None,
            watch.traced_from,
            f"{label}: its deliveries were not traced before {iso(watch.traced_from)} (only the delivery counters "
            "judged a reader polling with basic.get then)",
            label,
        )
        confirmed = watch.confirmed_until
        if confirmed is None or confirmed < now:  # no tolerance: a poller in the last second must not pass
            since = f"since {iso(confirmed)}" if confirmed else "at all"
            why = watch.problem or (
                "is the broker activity recorder running? (contractctl record-activity; it stores the trace)"
            )
            unknown(
                confirmed or watch.traced_from,
                now,
                f"{label}: the deliveries traced from it are not confirmed stored {since}: {why}",
                label,
            )
    return found

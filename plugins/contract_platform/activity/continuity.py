"""Whether a recorder that starts, or takes over, continues from the last confirmed moment or leaves a gap.

While no recorder reads it, the recorder's durable queue keeps every event the broker emits, with the
broker's own timestamps. A recorder that starts later stores them and loses nothing, provided three things
held since the last moment the store confirmed (docs/retirement-audit.md#restarts-standby-and-the-buffer):

- **the queue is the same one**: its identity (the ``x-contract-platform-incarnation`` argument it was
  created with; RabbitMQ keeps an argument it does not know, and a later declaration does not change it)
  is the one the last confirmation was made on, which the sentinel below carries;
- **the broker did not restart**: no node's start time (the management API's ``uptime``) is after that
  moment, and the *sentinel* is still there: a transient message the active recorder renews at every
  confirmation in ``<queue>.alive``. RabbitMQ drops transient messages when it restarts, whether the
  whole node restarted (which ``uptime`` shows) or only its application (``rabbitmqctl stop_app`` /
  ``start_app``, which ``uptime`` does not show);
- **nothing was dropped**: the queue is bounded (``x-max-length``, ``x-max-length-bytes``) and drops its
  oldest messages beyond the limit into ``<queue>.dropped``, which keeps the latest of them. The events
  lost are those from the last confirmed moment to that message's moment.

``decide`` judges these facts (gathered by the recorder) and says where the new coverage starts and
which gap, if any, to record. It is pure: the same facts give the same decision.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = [
    "INCARNATION",
    "MARGIN",
    "RESTART_TOLERANCE",
    "Decision",
    "Drop",
    "Found",
    "Sentinel",
    "decide",
    "drop_reason",
    "dropped",
    "moment",
]

MARGIN = timedelta(milliseconds=500)  # an event reaches the queue this long after its action, at most
RESTART_TOLERANCE = timedelta(seconds=1)  # a node's start time is now less its uptime: API latency, clocks
MARKER_HEADER = "x-contract-platform-marker"
INCARNATION = "x-contract-platform-incarnation"  # the queue's identity: RabbitMQ keeps an argument it does not know
_LONGEST_SENTINEL = 4096


def moment(value: datetime) -> str:
    """How gap reasons name a moment: UTC, to the millisecond."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Sentinel:
    """What the active recorder leaves in ``<queue>.alive`` at every confirmation (a transient message)."""

    segment: str
    incarnation: str
    confirmed: datetime

    def encode(self) -> bytes:
        body = {"segment": self.segment, "incarnation": self.incarnation, "confirmed": self.confirmed.isoformat()}
        return json.dumps(body).encode("utf-8")

    @classmethod
    def decode(cls, body: bytes) -> Sentinel | None:
        """The sentinel in ``body``, or None for anything else (any client may publish into the queue)."""
        if not isinstance(body, bytes) or len(body) > _LONGEST_SENTINEL:
            return None
        try:
            data = json.loads(body.decode("utf-8"))
            confirmed = datetime.fromisoformat(data["confirmed"])
            segment, incarnation = data["segment"], data["incarnation"]
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            return None
        if not isinstance(segment, str) or not isinstance(incarnation, str) or confirmed.tzinfo is None:
            return None
        return cls(segment, incarnation, confirmed)


@dataclass(frozen=True)
class Drop:
    """A message the broker dropped from the recorder's queue at its limit: when it happened, and what it was."""

    at: datetime
    what: str


def dropped(properties: Any, found_at: datetime) -> Drop:
    """The moment of a dead-lettered message: a broker event's own time, a marker's send time, else when the
    broker dropped it (``x-death``), else ``found_at``. Every later moment is a safe end of what was lost."""
    headers = getattr(properties, "headers", None)
    headers = headers if isinstance(headers, dict) else {}
    deaths = headers.get("x-death")
    death = deaths[0] if isinstance(deaths, list) and deaths and isinstance(deaths[0], dict) else {}
    keys = death.get("routing-keys")
    key = keys[0] if isinstance(keys, list) and keys else None
    key = key.decode("utf-8", "replace") if isinstance(key, bytes) else key
    millis = headers.get("timestamp_in_ms")
    if isinstance(millis, int) and not isinstance(millis, bool) and 0 < millis < 32_503_680_000_000:
        kind = key if isinstance(key, str) and len(key) <= 64 else "broker"
        return Drop(datetime.fromtimestamp(millis / 1000, UTC), f"a {kind} event")
    marker = headers.get(MARKER_HEADER)
    marker = marker.decode("utf-8", "replace") if isinstance(marker, bytes) else marker
    if isinstance(marker, str) and marker.count(":") >= 2:
        try:
            sent = datetime.fromisoformat(marker.split(":", 2)[2])
        except ValueError:
            sent = None
        if sent is not None and sent.tzinfo is not None:
            return Drop(sent, "a recorder's marker")
    when = death.get("time")
    if isinstance(when, datetime):
        return Drop(when if when.tzinfo else when.replace(tzinfo=UTC), "a message (the time it was dropped)")
    return Drop(found_at, "a message (the time it was found)")


@dataclass(frozen=True)
class Found:
    """What a recorder about to read its queue found on the broker."""

    queue: str
    limits: tuple[int, int]  # x-max-length, x-max-length-bytes
    existed: bool  # the queue was on the broker before this recorder declared it
    incarnation: str | None  # its identity; None: the management API did not say
    sentinel: Sentinel | None
    node_starts: Mapping[str, datetime] | None  # running node -> start time; None: the management API did not say
    drop: Drop | None  # the latest message dropped while nobody read the queue
    problems: Sequence[str] = field(default_factory=tuple)  # what else broke: a companion missing, a queue replaced

    @property
    def sentinel_queue(self) -> str:
        return f"{self.queue}.alive"


@dataclass(frozen=True)
class Decision:
    """Where the new coverage starts; ``gap_reason``: a gap from the last confirmed moment to there."""

    covered_from: datetime
    gap_reason: str | None
    continued: bool  # the coverage goes on from the last confirmed moment (nothing, or only a drop, in between)


def drop_reason(queue: str, limits: tuple[int, int], drop: Drop, *, running: bool) -> str:
    """Why an interval is lost when the recorder's queue overflowed."""
    when = "while the recorder fell behind" if running else "while no recorder read it"
    return (
        f"the recorder's queue {queue} reached its limit ({limits[0]:,} messages or {limits[1]:,} bytes) {when}: "
        f"the broker dropped its oldest events, the latest of them {drop.what} at {moment(drop.at)}"
    )


def decide(last_id: str | None, last: datetime | None, found: Found, start: datetime) -> Decision:
    """Continue from ``last`` (the segment ``last_id`` confirmed it) or record a gap from it to ``start``.

    No previous confirmation: the coverage simply starts at ``start``."""
    if last is None:
        return Decision(start, None, False)
    failures = list(found.problems)
    sentinel = found.sentinel
    same_queue = sentinel is not None and bool(found.incarnation) and sentinel.incarnation == found.incarnation
    if not same_queue:
        if not found.existed:
            failures.append(
                f"its queue {found.queue} was not on the broker (deleted, or expired after a week without a recorder)"
            )
        elif found.incarnation is None:
            failures.append(f"the management API did not say which queue {found.queue} is")
        elif not found.incarnation:
            failures.append(f"{found.queue} carries no {INCARNATION} argument: which queue it is cannot be told")
        elif sentinel is not None:
            failures.append(f"{found.queue} was deleted and declared again since")
    if sentinel is None:
        failures.append(
            f"its sentinel in {found.sentinel_queue} is gone: the broker restarted (a restart drops it) or the "
            "sentinel was taken"
        )
    elif sentinel.segment != last_id or abs(sentinel.confirmed - last) > timedelta(milliseconds=1):
        failures.append(
            f"its sentinel was last renewed at {moment(sentinel.confirmed)}, not at the last confirmed moment (the "
            "broker or the recorder went away before it was renewed, or another queue was recorded from)"
        )
    if found.node_starts is None:
        failures.append("the management API did not give the broker nodes' start times")
    else:
        for node, started in sorted(found.node_starts.items()):
            if started > last - RESTART_TOLERANCE:
                failures.append(f"broker node {node} restarted at {moment(started)}")
    if failures:
        reason = f"the recorder could not prove that no broker event was lost after {moment(last)}: " + "; ".join(
            failures
        )
        return Decision(start, reason, False)
    if found.drop is not None:
        end = min(max(last, found.drop.at + MARGIN), start)
        return Decision(end, drop_reason(found.queue, found.limits, found.drop, running=False), True)
    return Decision(last, None, True)

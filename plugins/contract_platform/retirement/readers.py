"""The ``readers`` check: nobody read any queue of the version during the whole observation span.

Replaces sampling consumers at audit time (a nightly batch job between two daily audits was never seen).
Three kinds of evidence, each complete or said to be unknown (docs/retirement-audit.md#continuous-reader-evidence):

- **reader sessions**, stored by the broker activity recorder from RabbitMQ's event exchange as they
  happen: every consumer that attached to a queue of the version, whoever it was and however briefly;
- **coverage**: the recorder's segments. Where it was not recording (stopped, killed, the broker
  restarting) nothing is known: a *gap*, which is never proof of "no reader";
- **delivery counters** of every queue, stored by each audit: a reader polling with ``basic.get`` makes
  no consumer, only the counters see it. A counter that moved between two audits, beyond what the
  audit's own peek did, means someone read; one that went backwards (queue recreated, node restarted)
  means that interval is unknown. A queue's history starts at its first counted audit.

Each finding is an *obstacle* with an interval; the clean stretch starts after the latest one. The check
passes when the clean stretch spans ``retirement.observationSpan`` and holds ``retirement.observations``
audits. Otherwise a reader in the stretch the check needs fails it, naming the reader; a gap there
makes it unknown, saying where the gap was and when the check can pass at the earliest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from contract_platform.catalog.model import Contract
from contract_platform.durations import format_duration
from contract_platform.evidence import Verdict
from contract_platform.evidence.figures import (
    CoverageSpanFigures,
    ReaderSessionFigures,
    ReadersFigures,
)
from contract_platform.evidence.records import (
    BrokerChange,
    CoverageGap,
    CoverageSegment,
    DeliveryWatch,
    QueueCounters,
    ReaderSession,
)
from contract_platform.evidence.registry import Registry
from contract_platform.retirement.deliveries import delivery_obstacles, explained
from contract_platform.retirement.model import CheckName, CheckResult, Obstacle, iso, require_aware

__all__ = [
    "DEFAULT_CADENCE",
    "RecorderHealth",
    "recorder_health",
    "TAIL_TOLERANCE",
    "TOUCH_TOLERANCE",
    "Obstacle",
    "ReaderEvidence",
    "VersionQueue",
    "check_readers",
    "confirmed_until",
    "counter_obstacles",
    "history_since",
    "merged_coverage",
    "coverage_obstacles",
]

DEFAULT_CADENCE = timedelta(days=1)  # the retirement_audit DAG runs daily
TAIL_TOLERANCE = timedelta(seconds=1)  # the recorder confirms coverage up to its marker less its margin
TOUCH_TOLERANCE = timedelta(seconds=1)  # the broker marks a queue idle a moment after its last operation
_COUNTERS = ("deliver_get", "get_empty", "ack", "redeliver")
_SHOWN = 20


@dataclass(frozen=True)
class VersionQueue:
    """A queue of the version: where it lives and how reports name it."""

    vhost: str
    queue: str
    label: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.vhost, self.queue)


@dataclass(frozen=True)
class ReaderEvidence:
    """What the store holds for the version's queues since ``since``."""

    since: datetime
    segments: Sequence[CoverageSegment]
    gaps: Sequence[CoverageGap]
    sessions: Sequence[ReaderSession]
    changes: Sequence[BrokerChange]
    counters: Sequence[QueueCounters]
    watches: Sequence[DeliveryWatch]  # the delivery trace of the version's queues (retirement.deliveries)


@dataclass(frozen=True)
class RecorderHealth:
    """What the broker activity recorder has recorded into one store over the last day: how far its coverage
    is confirmed, whether that is fresh (within three heartbeats), which recorder is active, what it stored,
    and the gaps. ``contractctl record-activity --status`` and the Contracts page both show it."""

    now: datetime
    covered_until: datetime | None
    fresh: bool
    active_host: str | None
    active_since: datetime | None
    active_covered_from: datetime | None
    events_last_day: int
    newest_event: datetime | None
    gaps: tuple[CoverageGap, ...]

    @property
    def lag_seconds(self) -> float | None:
        return round((self.now - self.covered_until).total_seconds(), 3) if self.covered_until else None


def recorder_health(registry: Registry, *, heartbeat: timedelta, now: datetime) -> RecorderHealth:
    """The recorder's health in ``registry`` at ``now`` (see ``RecorderHealth``)."""
    now = require_aware(now)
    day = now - timedelta(days=1)
    segments, gaps = registry.coverage(day)
    covered = confirmed_until(segments)
    running = [segment for segment in segments if segment.ended_at is None]
    active = max(running, key=lambda segment: segment.started_at) if running else None
    events, newest = registry.broker_events_since(day)
    return RecorderHealth(
        now=now,
        covered_until=covered,
        fresh=covered is not None and now - covered <= 3 * heartbeat,
        active_host=active.host if active is not None else None,
        active_since=active.started_at if active is not None else None,
        active_covered_from=active.covered_from if active is not None else None,
        events_last_day=events,
        newest_event=newest,
        gaps=tuple(gaps),
    )


HISTORY_AT_LEAST = timedelta(days=30)


def history_since(contract: Contract, now: datetime) -> datetime:
    """How far back reader evidence is read (the readers check, who moved): four observation spans, at least 30
    days (the recorder keeps 90)."""
    return now - max(HISTORY_AT_LEAST, 4 * contract.retirement.observation_span)


def confirmed_until(segments: Iterable[CoverageSegment]) -> datetime | None:
    """Up to when the recorder has confirmed that every broker event is stored (None: never)."""
    return max((s.covered_until for s in segments if s.covered_until is not None), default=None)


# -- obstacles ------------------------------------------------------------------------------------------------


def merged_coverage(segments: Iterable[CoverageSegment]) -> list[tuple[datetime, datetime]]:
    """The stretches the recorder's segments confirmed, merged, oldest first: what lies between two is a gap."""
    merged: list[tuple[datetime, datetime]] = []
    for start, end in sorted(
        (s.covered_from, s.covered_until)
        for s in segments
        if s.covered_from is not None and s.covered_until is not None
    ):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def coverage_obstacles(
    segments: Iterable[CoverageSegment], gaps: Iterable[CoverageGap], since: datetime, now: datetime
) -> list[Obstacle]:
    """Every stretch of ``since``..``now`` no segment covered, with the recorded reason where there is one."""
    merged = merged_coverage(s for s in segments if s.covered_until is not None and s.covered_until > since)
    known = list(gaps)
    found: list[Obstacle] = []
    cursor = since
    for start, end in merged:
        if start > cursor:
            found.append(_uncovered(cursor, start, known, head=cursor == since and not found))
        cursor = max(cursor, end)
    # a gap inside a segment's coverage (events the broker dropped at the recorder's queue limit, an event the
    # store refused) is unknown all the same; one that lies in an uncovered stretch is named there already
    for gap in known:
        if gap.end >= since and any(gap.start < end and gap.end > start for start, end in merged):
            text = f"a gap in the broker activity evidence from {iso(gap.start)} to {iso(gap.end)}: {gap.reason}"
            found.append(Obstacle("gap", Verdict.UNKNOWN, gap.start, gap.end, text))
        elif gap.end >= since and gap.start == gap.end and any(start <= gap.start <= end for start, end in merged):
            text = f"a gap in the broker activity evidence at {iso(gap.start)}: {gap.reason}"
            found.append(Obstacle("gap", Verdict.UNKNOWN, gap.start, gap.end, text))
    if now - cursor > TAIL_TOLERANCE:
        if merged:
            text = (
                f"the broker activity recorder has confirmed nothing since {iso(cursor)}: is it running? "
                "(contractctl record-activity)"
            )
        else:
            text = (
                "the broker activity recorder has not recorded anything yet: start it (contractctl record-activity) "
                "and let it run for the whole observation span"
            )
        found.append(Obstacle("uncovered", Verdict.UNKNOWN, None if not merged else cursor, now, text))
    return found


def _uncovered(start: datetime, end: datetime, gaps: Sequence[CoverageGap], *, head: bool) -> Obstacle:
    reasons = sorted({gap.reason for gap in gaps if gap.start < end and gap.end > start})
    if reasons:
        text = f"a gap in the broker activity evidence from {iso(start)} to {iso(end)}: {'; '.join(reasons)}"
        return Obstacle("gap", Verdict.UNKNOWN, start, end, text)
    if head:
        text = f"the broker activity recorder was not recording before {iso(end)}: nothing is known of readers then"
        return Obstacle("uncovered", Verdict.UNKNOWN, None, end, text)
    text = f"a gap in the broker activity evidence from {iso(start)} to {iso(end)}: the recorder was not recording"
    return Obstacle("gap", Verdict.UNKNOWN, start, end, text)


def session_obstacle(session: ReaderSession, label: str, now: datetime) -> Obstacle:
    who: dict[str, Any] = {"connection": session.connection_name, "peerHost": session.peer_host, "user": session.user}
    if session.source == "delivery":
        count = session.deliveries or 1
        who["deliveries"] = count
        text = (
            f"{label} handed {count} message{'s' if count != 1 else ''} to {session.describe()} (channel "
            f"{session.channel}) between {iso(session.attached_at)} and {iso(session.detached_at)}: a reader the "
            "delivery trace saw (basic.get or a consumer)"
        )
    else:
        since = f"from {iso(session.attached_at)}" if session.attached_at else "since before the recorder saw it"
        until = f"until {iso(session.detached_at)}" if session.detached_at else "and is still attached"
        text = f"{label} was read by {session.describe()} (consumer {session.consumer_tag!r}) {since} {until}"
    return Obstacle("reader", Verdict.FAIL, session.attached_at, session.detached_at or now, text, label, who)


def counter_obstacles(queue: VersionQueue, series: Sequence[QueueCounters]) -> list[Obstacle]:
    """What the counters of one queue say between consecutive audits (oldest first)."""
    if not series:
        return []
    first = series[0]
    found = [
        Obstacle(
            "counters",
            Verdict.UNKNOWN,
            None,
            first.observed_at,
            f"{queue.label}: no delivery counters before the audit at {iso(first.observed_at)} (a reader polling "
            "with basic.get before it would not be seen)",
            queue.label,
        )
    ]
    for before, after in zip(series, series[1:], strict=False):
        obstacle = _between(queue.label, before, after)
        if obstacle is not None:
            found.append(obstacle)
    return found


def _between(label: str, before: QueueCounters, after: QueueCounters) -> Obstacle | None:
    start, end = before.observed_at, after.observed_at
    between = f"between the audits at {iso(start)} and {iso(end)}"
    if not after.present:
        if before.present:
            return Obstacle(
                "deleted",
                Verdict.UNKNOWN,
                start,
                end,
                f"{label} was deleted {between}: what was read of it is unknown",
                label,
            )
        return None
    values_after = [getattr(after, name) for name in _COUNTERS]
    if any(value is None for value in values_after):
        return Obstacle(
            "counters",
            Verdict.UNKNOWN,
            start,
            end,
            f"{label}: the broker collected no delivery counters {between} (statistics are off)",
            label,
        )
    if before.present:
        values_before = [getattr(before, name) for name in _COUNTERS]
        if any(value is None for value in values_before):
            return Obstacle(
                "counters", Verdict.UNKNOWN, start, end, f"{label}: no delivery counters at {iso(start)}", label
            )
        own = {
            "deliver_get": before.own_deliver_get,
            "get_empty": before.own_get_empty,
            "redeliver": before.own_redeliver,
        }
    else:
        values_before, own = [0, 0, 0, 0], {}
    moved: list[str] = []
    for name, old, new in zip(_COUNTERS, values_before, values_after, strict=True):
        if new < old:
            return Obstacle(
                "counters",
                Verdict.UNKNOWN,
                start,
                end,
                f"{label}: its {name} counter went back from {old} to {new} {between} (the queue was recreated or its "
                "node restarted): what was read then is unknown",
                label,
            )
        delta = new - old - own.get(name, 0)
        if delta < 0:
            return Obstacle(
                "counters",
                Verdict.UNKNOWN,
                start,
                end,
                f"{label}: the broker's statistics had not caught up with the audit's own peek {between} (audits "
                "closer together than the statistics interval)",
                label,
            )
        if delta:
            moved.append(f"{name} +{delta}")
    if moved:
        return Obstacle(
            "counters",
            Verdict.FAIL,
            start,
            end,
            f"{label} was read {between} ({', '.join(moved)}): a reader polling with basic.get, or one the recorder "
            "did not see",
            label,
        )
    return _touched(label, before, after, between)


def _touched(label: str, before: QueueCounters, after: QueueCounters, between: str) -> Obstacle | None:
    """A ``basic.get`` that finds the queue empty moves no counter, only the queue's last activity."""
    if after.idle_since is None or before.own_until is None or not before.present:
        return None
    if after.idle_since <= before.own_until + TOUCH_TOLERANCE:
        return None
    published = (after.publish or 0) > (before.publish or 0)
    if published:
        return Obstacle(
            "counters",
            Verdict.UNKNOWN,
            before.observed_at,
            after.observed_at,
            f"{label}: messages were published to it {between}, so whether a reader also polled it while it was "
            "empty cannot be told",
            label,
        )
    return Obstacle(
        "counters",
        Verdict.FAIL,
        before.observed_at,
        after.observed_at,
        f"{label} was touched at {iso(after.idle_since)}, {between}, without a message moving: a reader polling it "
        "with basic.get while it was empty (or a passive declare)",
        label,
    )


def _change_obstacles(changes: Iterable[BrokerChange], labels: dict[tuple[str, str], str]) -> list[Obstacle]:
    found = []
    for change in changes:
        if change.kind != "queue.deleted":
            continue
        label = labels.get((change.vhost, change.name), change.name)
        found.append(
            Obstacle(
                "deleted",
                Verdict.UNKNOWN,
                change.at,
                change.at,
                f"{label} was deleted at {iso(change.at)}: what was read of it since the audit before is unknown",
                label,
            )
        )
    return found


# -- the check ------------------------------------------------------------------------------------------------


def check_readers(
    contract: Contract,
    queues: Sequence[VersionQueue],
    evidence: ReaderEvidence,
    *,
    now: datetime,
    cadence: timedelta = DEFAULT_CADENCE,
) -> CheckResult:
    """Judge the whole observation span of ``contract`` from the stored evidence (this audit's counters included)."""
    now = require_aware(now)
    needed, span_needed = contract.retirement.observations, contract.retirement.observation_span
    required = ReadersFigures(required_observations=needed, required_span=format_duration(span_needed))
    if not queues:
        return CheckResult(
            CheckName.READERS,
            Verdict.PASS,
            replace(required, note="the version has no queues: nothing can read it").to_json(),
        )
    labels = {queue.key: queue.label for queue in queues}
    obstacles = coverage_obstacles(evidence.segments, evidence.gaps, evidence.since, now)
    sessions = [s for s in evidence.sessions if s.source != "delivery"]
    sessions += explained([s for s in evidence.sessions if s.source == "delivery"], evidence.counters)
    obstacles += [
        session_obstacle(session, labels.get((session.vhost, session.queue), session.queue), now)
        for session in sessions
    ]
    obstacles += delivery_obstacles(labels, evidence.watches, now=now)
    obstacles += _change_obstacles(evidence.changes, labels)
    by_queue: dict[tuple[str, str], list[QueueCounters]] = {}
    for row in sorted(evidence.counters, key=lambda r: r.observed_at):
        by_queue.setdefault((row.vhost, row.queue), []).append(row)
    for queue in queues:
        series = by_queue.get(queue.key, [])
        if not series:
            obstacles.append(
                Obstacle(
                    "counters",
                    Verdict.UNKNOWN,
                    None,
                    now,
                    f"{queue.label}: no delivery counters recorded yet (run the audit with --record)",
                    queue.label,
                )
            )
        obstacles += counter_obstacles(queue, series)
    audits = sorted({row.observed_at for row in evidence.counters if (row.vhost, row.queue) in labels}, reverse=True)
    clean_since = max(o.end for o in obstacles) if obstacles else evidence.since
    streak = [at for at in audits if at >= clean_since]
    clean_for = now - clean_since
    # the stretch a pass needs: the span, and back to the oldest of the audits it needs
    oldest_needed = audits[min(needed, len(audits)) - 1] if audits else evidence.since
    window_start = min(now - span_needed, oldest_needed)
    relevant = sorted((o for o in obstacles if o.end > window_start), key=lambda o: o.end, reverse=True)
    segments, gaps = _coverage_figures(evidence, window_start, now)
    seen = replace(
        required,
        clean_since=iso(clean_since),
        clean_seconds=int(max(clean_for, timedelta(0)).total_seconds()),
        audits=len(streak),
        window_start=iso(window_start),
        window_end=iso(now),
        segments=segments,
        gaps=gaps,
        sessions=tuple(_session_figures(s, labels) for s in evidence.sessions if _overlaps(s, window_start, now))[
            :_SHOWN
        ],
        obstacles=tuple(o.figures() for o in relevant[:_SHOWN]),
        queues=tuple(queue.label for queue in queues),
        empty_polls_not_visible=tuple(_empty_polls_not_visible(queues, by_queue)),
    )
    if clean_for >= span_needed and len(streak) >= needed:
        return CheckResult(
            CheckName.READERS, Verdict.PASS, replace(seen, passed_at=iso(clean_since + span_needed)).to_json()
        )
    missing = max(0, needed - len(streak))
    clears_at = max(clean_since + span_needed, now + cadence * missing if missing else now)
    figures = replace(seen, passes_at=iso(clears_at)).to_json()
    requirement = f"{needed} audits spanning at least {format_duration(span_needed)} with no reader"
    readers = [o for o in relevant if o.verdict is Verdict.FAIL]
    unknowns = [o for o in relevant if o.verdict is Verdict.UNKNOWN]
    earliest = f"it can pass from {iso(clears_at)} at the earliest"
    if readers:
        shown = "; ".join(o.text for o in readers[:5]) + (f"; and {len(readers) - 5} more" if len(readers) > 5 else "")
        return CheckResult(
            CheckName.READERS,
            Verdict.FAIL,
            figures,
            f"{shown}. Retirement needs {requirement}: once they have moved to the successor, {earliest} "
            "if nobody reads the version again",
            clears_at,
        )
    if unknowns:
        latest = unknowns[0]
        others = len(unknowns) - 1
        more = f" (and {others} more unknown interval{'s' if others != 1 else ''})" if others else ""
        return CheckResult(
            CheckName.READERS,
            Verdict.UNKNOWN,
            figures,
            f"{latest.text}{more}. A span with a gap is never proof that nobody read the version: {earliest}, "
            "with the recorder running and the audit recording",
            clears_at,
        )
    return CheckResult(
        CheckName.READERS,
        Verdict.FAIL,
        figures,
        f"only {len(streak)} audit{'s' if len(streak) != 1 else ''} and {format_duration(max(clean_for, timedelta(0)))} "
        f"without readers since {iso(clean_since)}; retirement needs {requirement}: {earliest} if nobody reads it",
        clears_at,
    )


def _empty_polls_not_visible(
    queues: Sequence[VersionQueue], by_queue: dict[tuple[str, str], list[QueueCounters]]
) -> list[str]:
    """Queues whose latest look reported no last activity (quorum queues, streams): on them a reader that
    polls with basic.get and only ever finds them empty moves nothing the broker reports. Said, not hidden."""
    latest = {key: series[-1] for key, series in by_queue.items() if series}
    return [
        queue.label
        for queue in queues
        if (row := latest.get(queue.key)) is not None and row.present and row.idle_since is None
    ]


def _overlaps(session: ReaderSession, start: datetime, end: datetime) -> bool:
    return (session.attached_at is None or session.attached_at <= end) and (
        session.detached_at is None or session.detached_at >= start
    )


def _session_figures(session: ReaderSession, labels: dict[tuple[str, str], str]) -> ReaderSessionFigures:
    return ReaderSessionFigures(
        queue=labels.get((session.vhost, session.queue), session.queue),
        vhost=session.vhost,
        consumer_tag=session.consumer_tag,
        connection=session.connection_name,
        peer_host=session.peer_host,
        user=session.user,
        attached_at=iso(session.attached_at),
        detached_at=iso(session.detached_at),
    )


def _coverage_figures(
    evidence: ReaderEvidence, start: datetime, end: datetime
) -> tuple[tuple[CoverageSpanFigures, ...], tuple[CoverageSpanFigures, ...]]:
    segments = [
        CoverageSpanFigures(iso(s.covered_from), iso(s.covered_until), s.end_reason)
        for s in evidence.segments
        if s.covered_from is not None and s.covered_until is not None and s.covered_until >= start
    ]
    gaps = [
        CoverageSpanFigures(iso(g.start), iso(g.end), g.reason)
        for g in evidence.gaps
        if g.end >= start and g.start <= end
    ]
    return tuple(segments[-_SHOWN:]), tuple(gaps[-_SHOWN:])

"""The reader timeline of the Contracts page: the latest retirement audit's ``readers`` check as sessions, coverage, gaps and obstacles."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from contract_platform.evidence import EvidenceKind, Registry
from contract_platform_airflow.ui.views.evidence import (
    count_of,
    evidence_item,
    mapping_of,
    mappings_of,
    moment_of,
    text_of,
)

__all__ = ["ObstacleView", "ReaderSessionView", "ReadersView", "Span", "latest_readers", "readers_view"]


@dataclass(frozen=True)
class Span:
    """A stretch of time with what it was: a recorder segment (``note``: why it ended) or a gap (its reason)."""

    start: datetime
    end: datetime
    note: str | None


@dataclass(frozen=True)
class ReaderSessionView:
    """One consumer on one queue of the version, as the broker activity recorder saw it."""

    queue: str  # the label the audit gives the queue
    vhost: str | None
    consumer_tag: str | None
    connection: str | None
    peer_host: str | None
    user: str | None
    attached_at: datetime | None  # None: already attached when the recorder first saw it
    detached_at: datetime | None  # None: still attached


@dataclass(frozen=True)
class ObstacleView:
    """What kept the span from being clean: a reader (fail) or something not known (unknown)."""

    kind: str  # reader | counters | gap | uncovered | deleted
    verdict: str
    start: datetime | None  # None: since before anything was known
    end: datetime | None
    text: str
    queue: str | None


@dataclass(frozen=True)
class ReadersView:
    """The ``readers`` check of the latest retirement audit: who read the version's queues over its window.

    ``window_start``/``window_end`` are None when the check judged no window (the management API was
    missing, or the version has no queues): then only ``queues``, ``verdict`` and ``blocker`` say anything.
    """

    collected_at: str | None
    verdict: str
    blocker: str | None
    clears_at: datetime | None
    window_start: datetime | None
    window_end: datetime | None
    queues: tuple[str, ...]
    sessions: tuple[ReaderSessionView, ...]
    segments: tuple[Span, ...]
    gaps: tuple[Span, ...]
    obstacles: tuple[ObstacleView, ...]
    clean_since: datetime | None
    audits: int | None  # audits in the clean stretch
    required_observations: int | None
    required_span: str | None
    passes_at: datetime | None  # the earliest it can pass, when it did not
    passed_at: datetime | None
    note: str | None


def readers_view(figures: Mapping[str, Any], collected_at: str | None = None) -> ReadersView | None:
    """The ``readers`` check of a ``retirement_audit``'s figures; None for an audit without one (older audits).

    Entries whose times cannot be read are left out rather than drawn somewhere they never were.
    """
    check = mapping_of(figures.get("checks")).get("readers")
    if not isinstance(check, Mapping):
        return None
    shown = mapping_of(check.get("figures"))
    window, coverage, required = (mapping_of(shown.get(key)) for key in ("window", "coverage", "required"))
    sessions = tuple(
        ReaderSessionView(
            queue=str(s.get("queue") or ""),
            vhost=text_of(s.get("vhost")),
            consumer_tag=text_of(s.get("consumerTag")),
            connection=text_of(s.get("connection")),
            peer_host=text_of(s.get("peerHost")),
            user=text_of(s.get("user")),
            attached_at=moment_of(s.get("attachedAt")),
            detached_at=moment_of(s.get("detachedAt")),
        )
        for s in mappings_of(shown.get("sessions"))
    )
    segments = tuple(
        Span(start, end, text_of(s.get("endReason")))
        for s in mappings_of(coverage.get("segments"))
        if (start := moment_of(s.get("from"))) is not None and (end := moment_of(s.get("until"))) is not None
    )
    gaps = tuple(
        Span(start, end, text_of(g.get("reason")))
        for g in mappings_of(coverage.get("gaps"))
        if (start := moment_of(g.get("start"))) is not None and (end := moment_of(g.get("end"))) is not None
    )
    obstacles = tuple(
        ObstacleView(
            kind=str(o.get("kind") or ""),
            verdict=str(o.get("verdict") or "unknown"),
            start=moment_of(o.get("start")),
            end=moment_of(o.get("end")),
            text=str(o.get("text") or ""),
            queue=text_of(o.get("queue")),
        )
        for o in mappings_of(shown.get("obstacles"))
    )
    queues = shown.get("queues")
    return ReadersView(
        collected_at=collected_at,
        verdict=str(check.get("verdict") or "unknown"),
        blocker=text_of(check.get("blocker")),
        clears_at=moment_of(check.get("clears_at")),
        window_start=moment_of(window.get("start")),
        window_end=moment_of(window.get("end")),
        queues=tuple(str(q) for q in queues) if isinstance(queues, list) else (),
        sessions=sessions,
        segments=segments,
        gaps=gaps,
        obstacles=obstacles,
        clean_since=moment_of(shown.get("cleanSince")),
        audits=count_of(shown.get("audits")),
        required_observations=count_of(required.get("observations")),
        required_span=text_of(required.get("span")),
        passes_at=moment_of(shown.get("passesAt")),
        passed_at=moment_of(shown.get("passedAt")),
        note=text_of(shown.get("note")),
    )


def latest_readers(registry: Registry, message_type: str) -> ReadersView | None:
    latest = registry.latest_evidence(message_type, EvidenceKind.RETIREMENT_AUDIT)
    if latest is None:
        return None
    return readers_view(latest.figures, evidence_item(latest).collected_at)

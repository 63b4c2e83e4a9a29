"""The reader timeline of the Contracts page: the latest retirement audit's ``readers`` check as sessions, coverage, gaps and obstacles."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from datetime import datetime
from typing import Any

from pydantic import Field

from contract_platform.evidence import EvidenceKind, Registry
from contract_platform.evidence.figures import ReadersFigures, RetirementAuditFigures
from contract_platform_airflow.ui.views.evidence import (
    ViewModel,
    evidence_item,
    moment_of,
    text_of,
)

__all__ = ["ObstacleView", "ReaderSessionView", "ReadersView", "Span", "latest_readers", "readers_view"]


class Span(ViewModel):
    """A stretch of time with what it was: a recorder segment (``note``: why it ended) or a gap (its reason)."""

    start: datetime
    end: datetime
    note: str | None = Field(description="A gap's reason, or why a recorder segment ended.")


class ReaderSessionView(ViewModel):
    """One consumer on one queue of the version, as the broker activity recorder saw it."""

    queue: str  # the label the audit gives the queue
    vhost: str | None
    consumer_tag: str | None
    connection: str | None
    peer_host: str | None
    user: str | None
    attached_at: datetime | None = Field(description="None: already attached when the recorder first saw it.")
    detached_at: datetime | None = Field(description="None: still attached.")


class ObstacleView(ViewModel):
    """What kept the span from being clean: a reader (fail) or something not known (unknown)."""

    kind: str = Field(description="reader | counters | gap | uncovered | deleted")
    verdict: str = Field(description="fail | unknown")
    start: datetime | None = Field(description="None: since before anything was known.")
    end: datetime | None
    text: str
    queue: str | None


class ReadersView(ViewModel):
    """The ``readers`` check of the latest retirement audit: who read the version's queues over its window.

    ``window_start``/``window_end`` are None when the check judged no window (the management API was
    missing, or the version has no queues): then only ``queues``, ``verdict`` and ``blocker`` say anything.
    """

    collected_at: str | None
    verdict: str = Field(description="pass | fail | unknown")
    blocker: str | None
    clears_at: datetime | None
    window_start: datetime | None = Field(description="None when the check judged no window.")
    window_end: datetime | None
    queues: tuple[str, ...]
    sessions: tuple[ReaderSessionView, ...]
    segments: tuple[Span, ...] = Field(description="When the broker activity recorder was recording.")
    gaps: tuple[Span, ...] = Field(description="When nothing is known of readers.")
    obstacles: tuple[ObstacleView, ...] = Field(description="What kept the window from being clean, latest first.")
    clean_since: datetime | None
    audits: int | None = Field(description="Audits in the clean stretch.")
    required_observations: int | None
    required_span: str | None
    passes_at: datetime | None = Field(description="The earliest the check can pass, when it did not.")
    passed_at: datetime | None
    note: str | None


def readers_view(figures: Mapping[str, Any], collected_at: str | None = None) -> ReadersView | None:
    """The ``readers`` check of a ``retirement_audit``'s figures, read through the typed figures the audit writes
    them with (``RetirementAuditFigures``, ``ReadersFigures``); None for an audit without one (older audits).

    Entries whose times cannot be read are left out rather than drawn somewhere they never were.
    """
    check = RetirementAuditFigures.from_json(figures).checks.get("readers")
    if not isinstance(check, Mapping):
        return None
    shown = ReadersFigures.from_json(check.get("figures"))
    sessions = tuple(
        ReaderSessionView.model_validate(
            {**asdict(s), "attached_at": moment_of(s.attached_at), "detached_at": moment_of(s.detached_at)}
        )
        for s in shown.sessions
    )
    segments, gaps = (
        tuple(
            Span(start=start, end=end, note=span.note)
            for span in spans
            if (start := moment_of(span.start)) is not None and (end := moment_of(span.end)) is not None
        )
        for spans in (shown.segments, shown.gaps)
    )
    obstacles = tuple(
        ObstacleView(
            kind=o.kind, verdict=o.verdict, start=moment_of(o.start), end=moment_of(o.end), text=o.text, queue=o.queue
        )
        for o in shown.obstacles
    )
    return ReadersView(
        collected_at=collected_at,
        verdict=str(check.get("verdict") or "unknown"),
        blocker=text_of(check.get("blocker")),
        clears_at=moment_of(check.get("clears_at")),
        window_start=moment_of(shown.window_start),
        window_end=moment_of(shown.window_end),
        queues=shown.queues,
        sessions=sessions,
        segments=segments,
        gaps=gaps,
        obstacles=obstacles,
        clean_since=moment_of(shown.clean_since),
        audits=shown.audits,
        required_observations=shown.required_observations,
        required_span=shown.required_span,
        passes_at=moment_of(shown.passes_at),
        passed_at=moment_of(shown.passed_at),
        note=shown.note,
    )


def latest_readers(registry: Registry, message_type: str) -> ReadersView | None:
    latest = registry.latest_evidence(message_type, EvidenceKind.RETIREMENT_AUDIT)
    if latest is None:
        return None
    return readers_view(latest.figures, evidence_item(latest).collected_at)

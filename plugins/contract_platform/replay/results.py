"""What a replay of one version found, and what it records: the archive and in-flight parts, the decision
(``replay.decision``), the ``replay`` evidence, and the summary a report shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

import orjson

from contract_platform import evidence
from contract_platform.durations import format_duration
from contract_platform.evidence import Registry, Verdict
from contract_platform.evidence.figures import CompatibilityFigures, ReplayFigures
from contract_platform.replay.decision import (
    Decision,
    Rejections,
    ReplayDecision,
    StaticVerdict,
    decide,
)
from contract_platform.replay.judge import ReplayJudge, Tally
from contract_platform.replay.targets import ReplayTarget

__all__ = [
    "InFlightPart",
    "ReplayResult",
    "conclude",
    "in_flight_part",
    "not_checked",
    "problems_after_replay",
    "record_result",
    "replay_summary",
]


@dataclass
class InFlightPart:
    """What the broker's queues held of the version, judged like the archive (None counts: not checked)."""

    tally: Tally = field(default_factory=Tally)
    queues: list[dict[str, Any]] = field(default_factory=list)
    rejected_by_queue: dict[str, tuple[int, int]] = field(default_factory=dict)  # queue -> (checked, rejected)
    unreadable_by_queue: dict[str, Tally] = field(default_factory=dict)  # queue -> its tally, when some unread
    note: str | None = None
    checked: bool = True

    def figures(self) -> dict[str, Any]:
        return {
            "inspected": self.tally.replayed if self.checked else None,
            "rejected": self.tally.rejected if self.checked else None,
            "unreadable": self.tally.unreadable if self.checked else None,
            "unreadable_reasons": self.tally.unreadable_shown(),
            "queues": self.queues,
            "note": self.note,
        }


def in_flight_part(judge: ReplayJudge, in_flight: Any) -> InFlightPart:
    """Judge the records of ``in_flight`` (``replay.inflight.InFlight``) per queue; every message of the version
    is judged or counted unreadable with its reason (``InFlight.unreadable``: what the reader could not bound)."""
    part = InFlightPart(note=in_flight.note)
    counts: dict[str, Tally] = {}
    for queue, record in in_flight.records:
        tally = counts.setdefault(queue, Tally())
        try:
            line = orjson.dumps(record)
        except (orjson.JSONEncodeError, TypeError) as exc:  # the reader bounds records; this is the last guard
            tally.unread(f"MALFORMED: the message cannot be written as a record: {exc}")
            continue
        judge.replay(line, tally)
    for queue, reason in getattr(in_flight, "unreadable", ()):
        counts.setdefault(queue, Tally()).unread(reason)
    for looked in in_flight.queues:
        tally = counts.get(looked.queue, Tally())
        part.tally.merge(tally)
        part.rejected_by_queue[looked.queue] = (tally.replayed, tally.rejected)
        if tally.unreadable:
            part.unreadable_by_queue[looked.queue] = tally
        part.queues.append({**looked.to_dict(), "rejected": tally.rejected, "unreadable": tally.unreadable})
    return part


def not_checked(why: str) -> InFlightPart:
    """In-flight messages were not looked at: said so, never counted as clean."""
    return InFlightPart(note=f"in-flight messages not checked: {why}", checked=False)


@dataclass(frozen=True)
class ReplayResult:
    target: ReplayTarget
    since: date
    until: date
    archive: Tally
    in_flight: InFlightPart
    decision: ReplayDecision
    deleted_until: date | None = None  # the window's days before it are past retention.archive: deleted, not read

    @property
    def message_type(self) -> str:
        return self.target.contract.message_type

    @property
    def verdict(self) -> Verdict:
        if self.decision.decision is Decision.REFUSED:
            return Verdict.FAIL
        if self.decision.decision in (Decision.CONFIRMED, Decision.ACCEPTED_ON_EVIDENCE):
            return Verdict.PASS
        return Verdict.UNKNOWN

    @property
    def compatibility_ok(self) -> bool:
        """The version's compatibility once replay is taken into account."""
        if self.decision.refuses:
            return False
        if self.decision.lifts_breaking:
            return True
        return self.target.static is StaticVerdict.COMPATIBLE and not self.target.static_problems

    def problems(self) -> list[str]:
        """What the compatibility step reports for this version, replay included (one line each)."""
        if self.decision.lifts_breaking:
            return []
        return [f"{self.message_type}: {p}" for p in self.target.static_problems] + self.replay_problems()

    def replay_problems(self) -> list[str]:
        """Replay's own problem: the refusal, with the pointers, keywords and counts (none otherwise)."""
        if not self.decision.refuses:
            return []
        top = Tally().merge(self.archive).merge(self.in_flight.tally).top_pointers(3)
        where = "; ".join(f"{p['pointer'] or '/'} ({p['keyword']}) in {p['count']} messages" for p in top)
        return [f"{self.message_type}: replay refuses it: {'; '.join(self.decision.reasons)}; {where}"]

    def figures(self) -> dict[str, Any]:
        settings = self.target.contract.replay
        combined = Tally().merge(self.archive).merge(self.in_flight.tally)
        return {
            "window_days": (self.until - self.since).days,
            "since": self.since.isoformat(),
            "until": self.until.isoformat(),
            "min_messages": settings.min_messages,
            "threshold": settings.threshold,
            "tightening": settings.tightening,
            "source_type": self.target.plan.source_type,
            "migrated": self.target.plan.migrated,
            "replayed": self.archive.replayed,
            "rejected": self.archive.rejected,
            "rejection_rate": round(self.archive.rejection_rate, 6),
            "already_invalid": self.archive.already_invalid,
            "top_pointers": combined.top_pointers(),
            "sample_message_ids": combined.samples,
            "in_flight": self.in_flight.figures(),
            "consumers": self.consumer_figures(),
            "source_consumers": self.source_consumer_figures(),
            "static_verdict": str(self.target.static),
            "narrowing_only": self.target.narrowing_only,
            "decision": str(self.decision.decision),
            "reasons": [
                *self.decision.reasons,
                *([self.in_flight.note] if self.in_flight.note else []),
                *([self.retention_note()] if self.deleted_until is not None else []),
            ],
            "archive_retention": self.retention_figures(),
        }

    def retention_figures(self) -> dict[str, Any]:
        """The window's days archive retention deleted (none: ``{}``): which, and under which window."""
        if self.deleted_until is None:
            return {}
        window = self.target.archive_window
        return {
            "exchange": self.target.exchange,
            "window": format_duration(window) if window is not None else None,
            "deleted_since": self.since.isoformat(),
            "deleted_until": self.deleted_until.isoformat(),
            "deleted_days": (self.deleted_until - self.since).days,
            "replayed_days": (self.until - self.deleted_until).days,
        }

    def retention_note(self) -> str:
        """What the window lacks, said plainly: known deleted, never counted as replayed or as unknown."""
        shown = self.retention_figures()
        last = self.deleted_until - timedelta(days=1) if self.deleted_until is not None else self.since
        return (
            f"archive: the window's {shown['deleted_days']} days from {shown['deleted_since']} to {last.isoformat()} "
            f"are past the archive's retention ({shown['window']} on {shown['exchange']}) and deleted by archive "
            f"retention (its archive_retention evidence names each partition), so they were not replayed: the "
            f"figures are those of the {shown['replayed_days']} days from {shown['deleted_until']} on"
        )

    def consumer_figures(self) -> list[dict[str, Any]]:
        """Per consumer of the candidate: the archived and in-flight messages it would see rejected within what
        it reads (docs/consumer-impact.md; a consumer without ``reads`` sees every rejection)."""
        in_flight = self.in_flight.tally.consumers if self.in_flight.checked else None
        return [
            {
                "service": consumer.service,
                "reads": "declared" if consumer.reads is not None else "everything",
                "archived_rejected": self.archive.consumers.get(consumer.service, 0),
                "in_flight_rejected": None if in_flight is None else in_flight.get(consumer.service, 0),
            }
            for consumer in self.target.contract.consumers
        ]

    def source_consumer_figures(self) -> list[dict[str, Any]]:
        """For a migration: per consumer of the old major, the messages whose fields it reads the migration
        renames, transforms or drops (what it must re-read after moving; docs/consumer-impact.md)."""
        if not self.target.plan.migrated:
            return []
        in_flight = self.in_flight.tally.changed if self.in_flight.checked else None
        services = sorted({*self.archive.changed, *(in_flight or ())})
        return [
            {
                "service": service,
                "archived_changed": self.archive.changed.get(service, 0),
                "in_flight_changed": None if in_flight is None else in_flight.get(service, 0),
            }
            for service in services
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "messageType": self.message_type,
            "version": self.target.contract.version,
            "verdict": str(self.verdict),
            "compatible": self.compatibility_ok,
            "figures": self.figures(),
        }


def conclude(
    target: ReplayTarget,
    archive: Tally,
    since: date,
    until: date,
    in_flight: InFlightPart,
    *,
    retained_since: date | None = None,
) -> ReplayResult:
    """The decision for ``target`` from the archive's tally and the in-flight part; ``retained_since``: the first
    day of the window the archive still keeps, when archive retention deleted the earlier ones."""
    seen = [Rejections("the archive", archive.replayed, archive.rejected)]
    for queue, (checked, rejected) in in_flight.rejected_by_queue.items():
        unread = in_flight.unreadable_by_queue.get(queue)
        if checked or unread is not None:
            reasons = unread.unreadable_shown() if unread is not None else []
            why = reasons[0]["reason"] if reasons else ""
            seen.append(Rejections(f"queue {queue}", checked, rejected, unread.unreadable if unread else 0, why))
    decision = decide(target.contract.replay, target.static, target.narrowing_only, seen)
    deleted_until = retained_since if retained_since is not None and retained_since > since else None
    return ReplayResult(target, since, until, archive, in_flight, decision, deleted_until)


def record_result(registry: Registry, result: ReplayResult, *, run_id: str | None = None) -> None:
    """``replay`` evidence; when replay changes the version's compatibility, a compatibility record saying so."""
    contract = result.target.contract
    replay = ReplayFigures.from_json(result.figures())
    evidence.record(registry, contract.message_type, contract.version, replay, verdict=result.verdict, run_id=run_id)
    if not (result.decision.refuses or result.decision.lifts_breaking):
        return
    decided = CompatibilityFigures(
        decided_by="replay",
        decision=replay.decision,
        static_verdict=replay.static_verdict,
        replayed=replay.replayed,
        rejected=replay.rejected,
        top_pointers=replay.top_pointers,
        reasons=replay.reasons,
    )
    verdict = Verdict.PASS if result.compatibility_ok else Verdict.FAIL
    evidence.record(registry, contract.message_type, contract.version, decided, verdict=verdict, run_id=run_id)
    if result.compatibility_ok:
        registry.snapshot_schema(contract.message_type, contract.version, contract.payload_schema)


def problems_after_replay(summaries: Sequence[Any]) -> list[str]:
    """Every step's problems, with replay applied: a version replay accepted on evidence (a step summary's
    ``lifted``) no longer carries the compatibility step's problems; replay's own problems are kept."""
    steps = [s for s in summaries if isinstance(s, dict)]
    lifted = {name for s in steps for name in s.get("lifted", [])}
    return [
        problem
        for s in steps
        for problem in s.get("problems", [])
        if not (s.get("step") == "compatibility" and problem.split(":", 1)[0] in lifted)
    ]


def replay_summary(report: Mapping[str, Any]) -> dict[str, Any]:
    """The replay job's report as a change step's summary (``ChangeSummary.to_dict`` plus ``lifted``)."""
    return {
        "step": "replay",
        "ok": bool(report.get("ok", True)),
        "results": {
            r["messageType"]: {"decision": r["figures"]["decision"], "verdict": r["verdict"]}
            for r in report.get("results", [])
        },
        "problems": list(report.get("problems", [])),
        "lifted": list(report.get("lifted", [])),
    }

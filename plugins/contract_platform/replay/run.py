"""One replay from start to evidence: which versions, which window, in-flight messages, figures, verdicts.

::

    targets = replay_targets(catalog, history_of)          # each new or changed version with what to replay
    results = replay_versions(targets, archive, catalog_dir, tally_of, in_flight=True)
        # per target: since, until = window_of(...); tally = tally_of(archive, target, bundle, since, until);
        # the in-flight part (broker_in_flight); conclude(target, tally, since, until, in_flight)
    record_result(registry, result, run_id=...)            # ``replay`` evidence; compatibility when it changes

``tally_of`` is the archive engine (``TallyOf``): the Spark job's (``spark_jobs/replay.py``, the DAG and
large windows) or the in-process one (``replay.local``, a small local window for ``contractctl check``).
Both judge every line with ``judge_for(bundle, plan)``; everything else is here, once.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import orjson

from contract_platform import evidence
from contract_platform.amqp.types import BrokerConnection
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.checks import CompatibilityResult, History, compatibility_of
from contract_platform.errors import BrokerError, ContractPlatformError, UsageError
from contract_platform.evidence import Registry, Verdict
from contract_platform.evidence.figures import CompatibilityFigures, ReplayFigures
from contract_platform.replay.decision import (
    Decision,
    Rejections,
    ReplayDecision,
    StaticVerdict,
    breaks_only_by_narrowing,
    decide,
)
from contract_platform.replay.judge import ReplayJudge, ReplayPlan, Tally, judge_for
from contract_platform.validation.bundle import CatalogBundle

__all__ = [
    "InFlightOf",
    "InFlightPart",
    "ReplayResult",
    "ReplayTarget",
    "TallyOf",
    "broker_in_flight",
    "conclude",
    "in_flight_part",
    "missing_archive",
    "problems_after_replay",
    "record_result",
    "replay_summary",
    "replay_targets",
    "replay_versions",
    "replay_window",
    "window_of",
]

log = logging.getLogger(__name__)
_MESSAGE_ID = "/metadata/messageId"


@dataclass(frozen=True)
class ReplayTarget:
    """A version to replay, what it is replayed with, and the engine's verdict on it."""

    contract: Contract
    plan: ReplayPlan
    static: StaticVerdict
    narrowing_only: bool
    static_problems: tuple[str, ...] = ()

    @property
    def exchange(self) -> str:
        """The exchange whose archive partitions hold the replayed records (the previous major's for a migration)."""
        return self.plan.source_exchange or self.contract.transport.exchange


def replay_targets(
    catalog: Catalog,
    history_of: Callable[[Contract], History],
    only: Iterable[str] | None = None,
    *,
    compatibility: Iterable[CompatibilityResult] | None = None,
) -> list[ReplayTarget]:
    """Every version with an earlier version of its major (``history_of``), and every new major with a migration.

    ``compatibility``: the verdicts ``check`` already reached (``CheckReport.compatibility``); a version found
    there is not compared again, so the replay judges what the check judged (its readers perspective too)."""
    from contract_platform.compat import Mode

    judged = {result.message_type: result for result in compatibility or ()}
    wanted = set(only) if only is not None else None
    found = []
    for contract in catalog:
        if wanted is not None and contract.message_type not in wanted:
            continue
        mask = _MESSAGE_ID in contract.pii.fields
        history = list(history_of(contract))
        result = judged.get(contract.message_type)
        if result is None:
            result = compatibility_of(contract, history, default_dialect=catalog.default_dialect)
        if result is not None and history:
            latest = history[-1][1]
            static = StaticVerdict.COMPATIBLE if result.compatible else StaticVerdict.BREAKING
            problems = [f"{c['message']} ({c['path']})" for c in result.changes if not c["compatible"]]
            problems += list(result.semver_problems)
            plan = ReplayPlan(contract.message_type, contract.message_type, current_schema=latest, mask_ids=mask)
            narrowing = breaks_only_by_narrowing(result.latest_changes, Mode(contract.compatibility))
            found.append(ReplayTarget(contract, plan, static, narrowing, tuple(problems)))
            continue
        predecessor = catalog.predecessor(contract)
        if contract.migration is not None and predecessor is not None:
            plan = ReplayPlan(
                contract.message_type,
                predecessor.message_type,
                migration=contract.migration,
                mask_ids=mask,
                source_exchange=predecessor.transport.exchange,
            )
            found.append(ReplayTarget(contract, plan, StaticVerdict.COMPATIBLE, False))
    return found


def window_of(contract: Contract, now: datetime | None = None) -> tuple[date, date]:
    """The date partitions replayed: ``since <= date < until``, the window's days up to and including today."""
    today = (now or datetime.now(UTC)).astimezone(UTC).date()
    days = max(1, math.ceil(contract.replay.window / timedelta(days=1)))
    return today - timedelta(days=days - 1), today + timedelta(days=1)


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
            "reasons": [*self.decision.reasons, *([self.in_flight.note] if self.in_flight.note else [])],
        }

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


def conclude(target: ReplayTarget, archive: Tally, since: date, until: date, in_flight: InFlightPart) -> ReplayResult:
    """The decision for ``target`` from the archive's tally and the in-flight part."""
    seen = [Rejections("the archive", archive.replayed, archive.rejected)]
    for queue, (checked, rejected) in in_flight.rejected_by_queue.items():
        unread = in_flight.unreadable_by_queue.get(queue)
        if checked or unread is not None:
            reasons = unread.unreadable_shown() if unread is not None else []
            why = reasons[0]["reason"] if reasons else ""
            seen.append(Rejections(f"queue {queue}", checked, rejected, unread.unreadable if unread else 0, why))
    decision = decide(target.contract.replay, target.static, target.narrowing_only, seen)
    return ReplayResult(target, since, until, archive, in_flight, decision)


# An archive engine: the tally of the records of ``target``'s source type in the date partitions
# ``since <= date < until`` of its exchange under the archive root (``archive``), each line judged by
# ``judge_for(bundle, target.plan)``. ``spark_jobs.replay.spark_tally`` and ``replay.local.tally_local``.
TallyOf = Callable[[str, ReplayTarget, CatalogBundle, date, date], Tally]
# The in-flight part of a target, its records judged by the judge given (``broker_in_flight``, ``not_checked``).
InFlightOf = Callable[[ReplayTarget, ReplayJudge], InFlightPart]


def missing_archive(archive: str) -> UsageError:
    """What a replay of an archive root that does not exist says, whichever engine looked."""
    return UsageError(f"no archive at {archive}: give the archive root (ARCHIVE) or set CONTRACT_ARCHIVE_DIR")


def replay_window(
    targets: Sequence[ReplayTarget],
    archive: str,
    bundle: CatalogBundle,
    tally_of: TallyOf,
    *,
    in_flight_of: InFlightOf | None = None,
    now: datetime | None = None,
) -> list[ReplayResult]:
    """Replay every target: its window's archived records by ``tally_of``, its in-flight part, the decision."""
    results = []
    for target in targets:
        since, until = window_of(target.contract, now)
        tally = tally_of(archive, target, bundle, since, until)
        judge = judge_for(bundle, target.plan)
        in_flight = in_flight_of(target, judge) if in_flight_of is not None else not_checked("no broker given")
        results.append(conclude(target, tally, since, until, in_flight))
    return results


def replay_versions(
    targets: Sequence[ReplayTarget],
    archive: str,
    catalog_dir: str,
    tally_of: TallyOf,
    *,
    in_flight: bool = True,
    broker_url: str | None = None,
    now: datetime | None = None,
) -> list[ReplayResult]:
    """What ``contractctl check --replay`` and the Spark job run once the targets are known: the archive by
    ``tally_of``, the in-flight messages when a broker answers (said, never counted clean, when none does)."""
    if not targets:
        return []
    bundle = CatalogBundle.read(catalog_dir)
    if not in_flight:
        return replay_window(targets, archive, bundle, tally_of, now=now)
    from contract_platform.amqp.connection import close_quietly, open_connection
    from contract_platform.amqp.management import management_client

    try:
        connection = open_connection(broker_url)
    except ContractPlatformError as exc:
        why = f"no broker: {exc}"
        return replay_window(targets, archive, bundle, tally_of, in_flight_of=lambda _t, _j: not_checked(why), now=now)
    try:
        reader = broker_in_flight(connection, management_client(connection))
        return replay_window(targets, archive, bundle, tally_of, in_flight_of=reader, now=now)
    finally:
        close_quietly(connection)


def broker_in_flight(connection: BrokerConnection, management: Any) -> InFlightOf:
    """In-flight messages of each target read through ``connection`` (the version's own queues and the DLQs
    discovery attributes to it), over one read of the broker's topology shared by the targets."""
    from contract_platform.amqp.management import probe_management
    from contract_platform.replay.inflight import in_flight_records
    from contract_platform.retirement.snapshot import TopologySnapshot

    shared: list[Any] = []  # the snapshot, read at the first target that needs it (None: each reads its own)

    def snapshot() -> Any:
        if not shared:
            try:
                usable = management is not None and probe_management(management) is None
                shared.append(TopologySnapshot.read(management, vhosts=[], keep_alive=connection) if usable else None)
            except BrokerError:
                shared.append(None)  # each target then says why other DLQs were not looked for
        return shared[0]

    def read(target: ReplayTarget, judge: ReplayJudge) -> InFlightPart:
        contract = target.contract
        if target.plan.migrated:
            return not_checked("a new major's queues hold its own messages, not the previous major's")
        try:
            found = in_flight_records(connection, contract, management=management, snapshot=snapshot())
            return in_flight_part(judge, found)
        except BrokerError as exc:
            return not_checked(str(exc))

    return read


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

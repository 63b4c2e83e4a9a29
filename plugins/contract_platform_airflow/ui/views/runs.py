"""What one DAG run, or a DAG's recent runs, did to each contract: transitions, refusals and evidence, by run id."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, cast

from contract_platform.catalog.model import Catalog
from contract_platform.evidence import EvidenceKind, Registry
from contract_platform.evidence.records import EvidenceMark, EvidenceRecord, RefusalRecord, TransitionRecord
from contract_platform_airflow.ui.views.evidence import EVIDENCE_DAGS, MANY, ViewModel

__all__ = ["RUNS_PER_PAGE", "RunActivity", "RunReads", "RunTouch", "dag_activity", "run_activity"]


class RunTouch(ViewModel):
    """What one run did to one contract."""

    message_type: str
    transitions: tuple[str, ...]
    refusals: tuple[str, ...]
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class RunActivity:
    dag_id: str
    run_id: str
    contracts: tuple[RunTouch, ...]


class RunReads(Registry, Protocol):
    """What the run pages read in one query each, whatever the number of types (the SQL store has them)."""

    def transitions_by(self, actor: str, run_ids: Iterable[str] | None = None) -> list[TransitionRecord]: ...

    def refusals_by(self, actor: str, run_ids: Iterable[str] | None = None) -> list[RefusalRecord]: ...

    def evidence_of_runs(
        self, kinds: Iterable[EvidenceKind | str], run_ids: Iterable[str] | None = None
    ) -> list[EvidenceMark]: ...

    def run_times(self, actor: str, kinds: Iterable[EvidenceKind | str]) -> dict[str, datetime]: ...


@dataclass(frozen=True)
class _Touch:
    run_id: str
    at: datetime
    message_type: str
    what: str  # transition | refusal | evidence
    text: str


def _claimed_kinds(dag_id: str) -> list[EvidenceKind]:
    return [kind for kind in EvidenceKind if EVIDENCE_DAGS.get(kind, dag_id) == dag_id]


def _run_reads(registry: Registry) -> RunReads | None:
    names = ("transitions_by", "refusals_by", "evidence_of_runs", "run_times")
    return cast(RunReads, registry) if all(hasattr(registry, name) for name in names) else None


def _touches(
    catalog: Catalog, registry: Registry, dag_id: str, run_id: str | None, *, run_ids: Sequence[str] | None = None
) -> list[_Touch]:
    """Every transition, refusal and evidence ``dag_id`` recorded (in run ``run_id`` only, if given).

    The SQL store answers in three queries (``RunReads``), for the runs ``run_ids`` only when given; a
    registry without them is asked per type.
    """
    known = {c.message_type for c in catalog} | {s.message_type for s in registry.all_effective()}
    actor = f"dag:{dag_id}"
    kinds = _claimed_kinds(dag_id)
    runs = _run_reads(registry)
    evidence: list[EvidenceMark | EvidenceRecord] = []
    if runs is not None:
        only = [run_id] if run_id is not None else run_ids
        transitions = [t for t in runs.transitions_by(actor, only) if t.message_type in known]
        refusals = [r for r in runs.refusals_by(actor, only) if r.message_type in known]
        evidence += [e for e in runs.evidence_of_runs(kinds, only) if e.message_type in known]
    else:
        transitions, refusals = [], []
        for message_type in sorted(known):
            transitions += [t for t in registry.transitions(message_type) if t.actor == actor and t.run_id]
            refusals += [r for r in registry.refusals(message_type, limit=MANY) if r.actor == actor and r.run_id]
            evidence += [e for e in registry.evidence(message_type, limit=MANY) if e.run_id and e.kind in kinds]
    found = []
    for t in transitions:
        if t.run_id and run_id in (None, t.run_id):
            text = f"{t.from_status or 'none'} -> {t.to_status}: {t.reason}"
            found.append(_Touch(t.run_id, t.at, t.message_type, "transition", text))
    for r in refusals:
        if r.run_id and run_id in (None, r.run_id):
            text = f"{r.from_status or 'none'} -> {r.to_status} refused: {'; '.join(r.reasons)}"
            found.append(_Touch(r.run_id, r.at, r.message_type, "refusal", text))
    for e in evidence:
        if e.run_id and run_id in (None, e.run_id):
            found.append(_Touch(e.run_id, e.collected_at, e.message_type, "evidence", f"{e.kind} {e.verdict}"))
    return found


def _activity(dag_id: str, run_id: str, touches: Iterable[_Touch]) -> RunActivity:
    by_type: dict[str, dict[str, list[str]]] = {}
    for touch in sorted(touches, key=lambda t: t.at):
        by_type.setdefault(touch.message_type, {"transition": [], "refusal": [], "evidence": []})[touch.what].append(
            touch.text
        )
    contracts = tuple(
        RunTouch(message_type=mt, transitions=what["transition"], refusals=what["refusal"], evidence=what["evidence"])
        for mt, what in sorted(by_type.items())
    )
    return RunActivity(dag_id, run_id, contracts)


def run_activity(catalog: Catalog, registry: Registry, dag_id: str, run_id: str) -> RunActivity:
    """The contracts run ``run_id`` of ``dag_id`` acted on: its transitions, refusals and evidence.

    Transitions and refusals name their DAG (actor ``dag:<dag_id>``); evidence names only the run,
    so a run claims the evidence kinds its DAG records (``EVIDENCE_DAGS``).
    """
    return _activity(dag_id, run_id, _touches(catalog, registry, dag_id, run_id))


RUNS_PER_PAGE = 5  # a run of an estate touches every type: 5 runs of 2,000 types are 10,000 rows a page


def dag_activity(
    catalog: Catalog, registry: Registry, dag_id: str, limit: int = 20, offset: int = 0
) -> list[RunActivity]:
    """The latest runs of ``dag_id`` that acted on contracts, newest first: ``limit`` of them after skipping
    the ``offset`` newest (a page of the task page).

    With the SQL store only those runs are read (``RunReads.run_times`` first), never the whole history.
    """
    reads = _run_reads(registry)
    runs: dict[str, list[_Touch]] = {}
    if reads is not None:
        times = reads.run_times(f"dag:{dag_id}", _claimed_kinds(dag_id))
        newest = sorted(times, key=lambda run: times[run], reverse=True)
        position = offset
        while len(runs) < limit and position < len(newest):  # a run may touch no known type: read on
            batch = newest[position : position + limit - len(runs)]
            position += len(batch)
            for touch in _touches(catalog, registry, dag_id, None, run_ids=batch):
                runs.setdefault(touch.run_id, []).append(touch)
        offset = 0  # the batches started at the page already
    else:
        for touch in _touches(catalog, registry, dag_id, None):
            runs.setdefault(touch.run_id, []).append(touch)
    latest = sorted(runs.items(), key=lambda item: max(t.at for t in item[1]), reverse=True)[offset : offset + limit]
    return [_activity(dag_id, run_id, touches) for run_id, touches in latest]

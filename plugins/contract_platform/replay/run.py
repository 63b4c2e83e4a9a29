"""One replay from start to evidence: which versions, which window, in-flight messages, figures, verdicts.

::

    targets = replay_targets(catalog, history_of)          # each new or changed version with what to replay
    results = replay_versions(targets, archive, catalog_dir, tally_of, in_flight=True)
        # per target: since, until = window_of(...); tally = tally_of(archive, target, bundle, since, until);
        # the in-flight part (broker_in_flight); conclude(target, tally, since, until, in_flight)
    record_result(registry, result, run_id=...)            # ``replay`` evidence; compatibility when it changes

``tally_of`` is the archive engine (``TallyOf``): the Spark job's (``spark_jobs/replay.py``, the DAG and
large windows) or the in-process one (``replay.local``, a small local window for ``contractctl check``).
Both judge every line with ``judge_for(bundle, plan)``. The targets are ``replay.targets``, the results and
their evidence ``replay.results``; this module runs them, and names all three parts' entry points.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from typing import Any

from contract_platform.amqp.types import BrokerConnection
from contract_platform.errors import BrokerError, ContractPlatformError, UsageError
from contract_platform.replay.judge import ReplayJudge, Tally, judge_for
from contract_platform.replay.results import (
    InFlightPart,
    ReplayResult,
    conclude,
    in_flight_part,
    not_checked,
    problems_after_replay,
    record_result,
    replay_summary,
)
from contract_platform.replay.targets import ReplayTarget, replay_targets, retained_since, window_of
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
    "not_checked",
    "problems_after_replay",
    "record_result",
    "replay_summary",
    "replay_targets",
    "replay_versions",
    "replay_window",
    "window_of",
]


log = logging.getLogger(__name__)


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
    """Replay every target: its window's archived records by ``tally_of``, its in-flight part, the decision.

    The days of a window past the archive's retention (``retained_since``) are not read: archive retention
    deletes them, so the result names them instead (whatever a hold or a late retention run left of them
    would make the replay depend on when retention last ran)."""
    now = now or datetime.now(UTC)
    results = []
    for target in targets:
        since, until = window_of(target.contract, now)
        kept = min(retained_since(target, since, now), until)  # the days before it are deleted by retention
        tally = tally_of(archive, target, bundle, kept, until) if kept < until else Tally()
        judge = judge_for(bundle, target.plan)
        in_flight = in_flight_of(target, judge) if in_flight_of is not None else not_checked("no broker given")
        results.append(conclude(target, tally, since, until, in_flight, retained_since=kept))
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

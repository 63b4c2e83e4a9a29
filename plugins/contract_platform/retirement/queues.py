"""The ``queues`` check: consumers, ready and unacknowledged messages on every queue of the version.

The queues are the version's own, from ``plan_topology`` (consumer queues, retry queues, DLQs and
parking lots), and, from the broker's whole topology (``retirement.discovery``), every queue a message
of the version reaches through the bindings of its exchange, whoever declared it; not the archive
queue, which the exchange's other contracts share and the archiver drains. A blocker names the queue,
how it was found and who reads it (connection name, peer host, user). In the connection's own virtual
host ready messages and consumers come from passive declares (exact, now), elsewhere from the API, and so
do those of a queue exclusive to another connection (no passive declare of it is allowed): it blocks,
naming its owner, when it holds or reads the version;
unacknowledged counts only from the management API, so without it (or before it has collected statistics) the check cannot pass: it says unknown.
A queue that does not exist holds nothing and has no consumer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from contract_platform.amqp.connection import broker_errors, describe_broker
from contract_platform.amqp.inspection import QueueState, inspect_queue
from contract_platform.amqp.management import ConsumerInfo, QueueInfo
from contract_platform.amqp.topology import Role, TopologyPlan
from contract_platform.amqp.types import BrokerConnection
from contract_platform.evidence import Registry, Verdict
from contract_platform.evidence.records import ObservationSource
from contract_platform.retirement.dead_letters import GONE, Probe
from contract_platform.retirement.discovery import Considered, Discovery
from contract_platform.retirement.model import CheckName, CheckResult

if TYPE_CHECKING:
    from contract_platform.retirement.snapshot import TopologySnapshot

__all__ = ["AUDITED_ROLES", "QueueLook", "check_queues", "observe_queues", "record_observations"]

AUDITED_ROLES = (Role.CONSUMER, Role.RETRY, Role.DLQ, Role.PARKING_LOT)

_READY_ADVICE: dict[Role | None, str] = {
    Role.CONSUMER: "let its consumers finish them, or move them to the successor",
    Role.RETRY: "they go back to the consumer queue when their delay ends; let them be consumed",
    Role.DLQ: "replay them to the successor or discard them",
    Role.PARKING_LOT: "replay them to the successor or discard them",
    None: "the version's exchange routes there: ask whoever reads it to finish them and move to the successor",
}


@dataclass(frozen=True)
class QueueLook:
    """One queue of the version, as the broker reported it during this audit."""

    name: str
    role: Role | None  # None: a queue the platform did not declare (found on the broker)
    state: QueueState
    found: tuple[str, ...] = ("platform topology",)
    why: tuple[str, ...] = ()
    vhost: str | None = None
    readers: tuple[ConsumerInfo, ...] = field(default=(), hash=False)

    def to_dict(self) -> dict[str, Any]:
        state = self.state
        return {
            "queue": self.name,
            "role": str(self.role) if self.role else ("bridge" if "platform topology" in self.found else "foreign"),
            "vhost": self.vhost,
            "foundBy": list(self.found),
            "why": list(self.why),
            "exists": state.exists,
            "ready": state.ready,
            "consumers": state.consumers,
            "unacked": state.unacked if state.exists else 0,
            "readers": [reader.to_dict() for reader in self.readers],
        } | ({"exclusiveTo": state.owner} if state.owner else {})


def observe_queues(
    connection: BrokerConnection,
    plan: TopologyPlan,
    *,
    snapshot: TopologySnapshot | None = None,
    discovery: Discovery | None = None,
) -> list[QueueLook]:
    """Inspect each queue of the version (``BrokerError`` / ``BrokerUnavailable`` propagate).

    ``snapshot``: the run's read of the broker (its management client, topology and home virtual host);
    ``discovery``: the version's queues found in it. Without them: the audited queues of ``plan`` only
    (what AMQP alone can find).
    """
    management = snapshot.client if snapshot is not None else None
    if discovery is None or snapshot is None:
        return [
            QueueLook(queue.name, queue.role, inspect_queue(connection, queue.name, management=management))
            for queue in plan.queues_of(*AUDITED_ROLES)
        ]
    topology, home_vhost = snapshot.topology, snapshot.home_vhost
    looks = []
    probe = Probe(lambda _vhost: connection)  # one channel for the version's passive declares
    try:
        for entry in discovery.receivers:
            hosted = topology.vhosts.get(entry.vhost)
            info = hosted.queues.get(entry.queue) if hosted is not None else None
            if entry.vhost == home_vhost and info is not None and info.owner is None:
                state = _probed(connection, probe, entry.queue, info)
            elif entry.vhost == home_vhost and info is None:
                state = inspect_queue(connection, entry.queue, management=management)
            else:
                state = _state_of(entry.queue, info, len(entry.readers))
            looks.append(_look(entry, state, home_vhost))
    finally:
        with broker_errors(describe_broker(connection)):
            probe.close()
    return looks


def _probed(connection: BrokerConnection, probe: Probe, name: str, info: QueueInfo) -> QueueState:
    """A listed queue of the connection's virtual host: exact ready and consumer counts by passive declare."""
    with broker_errors(describe_broker(connection)):
        counts = probe.counts(home_of(connection), name)
    if counts is None:  # exclusive to another connection since the listing: judged as inspect_queue does
        return inspect_queue(connection, name, management=None)
    if counts == GONE or isinstance(counts, int):
        return QueueState(name, exists=False)
    return _listed(QueueState(name, exists=True, ready=counts[0], consumers=counts[1]), info)


def home_of(connection: BrokerConnection) -> str:
    params = getattr(getattr(connection, "_impl", None), "params", None)
    vhost = getattr(params, "virtual_host", None)
    return vhost if isinstance(vhost, str) else "/"


def queue_label(vhost: str, queue: str, home_vhost: str) -> str:
    """The queue's name in the connection's own virtual host, else ``name (vhost V)``: one key per queue."""
    return queue if vhost == home_vhost else f"{queue} (vhost {vhost})"


def _look(entry: Considered, state: QueueState, home_vhost: str) -> QueueLook:
    return QueueLook(
        queue_label(entry.vhost, entry.queue, home_vhost),
        entry.role,
        state,
        tuple(str(f) for f in entry.found),
        entry.reasons,
        entry.vhost,
        entry.readers,
    )


def _listed(state: QueueState, info: QueueInfo) -> QueueState:
    """A passive declare's exact ready and consumer counts, with what the topology listing (read once per run)
    adds: unacknowledged, type and arguments (no management call per queue)."""
    if not state.exists:
        return state
    return replace(state, unacked=info.unacked, type=info.type, arguments=dict(info.arguments))


def _state_of(name: str, info: QueueInfo | None, readers: int = 0) -> QueueState:
    """A queue in another virtual host, or exclusive to another connection, as the management API last reported
    it; its consumers at least as many as the API's consumer list names (``readers``)."""
    if info is None:
        return QueueState(name, exists=False)
    return QueueState(
        name,
        exists=True,
        ready=info.ready or 0,
        consumers=max(info.consumers or 0, readers),
        unacked=info.unacked,
        type=info.type,
        arguments=dict(info.arguments),
        owner=info.owner,
    )


def record_observations(
    registry: Registry, message_type: str, looks: Sequence[QueueLook], *, now: datetime, run_id: str | None
) -> None:
    """One observation per queue per audit, all at ``now`` (the consumers_over_time series)."""
    for look in looks:
        state = look.state
        registry.record_observation(
            message_type,
            look.name,
            consumers=state.consumers,
            ready=state.ready,
            unacked=state.unacked if state.exists else 0,
            source=ObservationSource.MANAGEMENT if state.unacked is not None else ObservationSource.AMQP,
            run_id=run_id,
            observed_at=now,
        )


def _problems(look: QueueLook) -> list[str]:
    state, name = look.state, look.name
    problems = []
    declared = look.role is not None or "platform topology" in look.found
    found = "" if declared else f" [found by {', '.join(look.found)}: a queue the platform did not declare]"
    exclusive = f" [exclusive to {state.owner}]" if state.owner else ""
    found += exclusive
    if state.consumers:
        readers = "; ".join(reader.describe() for reader in look.readers)
        who = f" (read by {readers})" if readers else ""
        problems.append(
            f"{name} has {_count(state.consumers, 'consumer')} connected{who}{found}: stop it or move it to the "
            "successor"
        )
    if state.ready:
        what = "messages waiting to be retried" if look.role is Role.RETRY else "ready messages"
        role = look.role or "foreign"
        problems.append(f"{name} ({role}) holds {state.ready} {what}{found}: {_READY_ADVICE[look.role]}")
    if state.unacked:
        problems.append(f"{name} has {state.unacked} unacknowledged messages still being processed{exclusive}")
    return problems


def check_queues(looks: Sequence[QueueLook], discovery: Discovery | None = None) -> CheckResult:
    """Fail on any consumer, ready or unacked message; unknown when an unacked count is unknown."""
    figures: dict[str, Any] = {
        "searched": (
            {"vhosts": list(discovery.vhosts), "notJudged": list(discovery.excluded)}
            if discovery is not None
            else {"vhosts": [], "note": "the version's own queues only: the management API was not used"}
        ),
        "queues": [look.to_dict() for look in looks],
        "consumers": sum(look.state.consumers for look in looks),
        "ready": sum(look.state.ready for look in looks),
        "unacked": sum(look.state.unacked or 0 for look in looks),
        "missing": [look.name for look in looks if not look.state.exists],
    }
    unknown = [look.name for look in looks if look.state.exists and look.state.unacked is None]
    figures["unackedUnknown"] = unknown
    problems = [problem for look in looks for problem in _problems(look)]
    if problems:
        return CheckResult(CheckName.QUEUES, Verdict.FAIL, figures, "; ".join(problems))
    if unknown:
        blocker = (
            f"unacknowledged counts of {', '.join(unknown)} are unknown (the management API is not available "
            "or has not collected statistics yet): enable the management plugin, or run the audit again in a minute"
        )
        return CheckResult(CheckName.QUEUES, Verdict.UNKNOWN, figures, blocker)
    return CheckResult(CheckName.QUEUES, Verdict.PASS, figures)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"

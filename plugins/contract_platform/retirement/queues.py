"""The ``queues`` check: consumers, ready and unacknowledged messages on every queue of the version.

The queues are the version's own, from ``plan_topology``: consumer queues, retry queues, DLQs and
parking lots (not the archive queue, which the exchange's other contracts share). Ready messages and
consumers come from passive declares (exact, now); unacknowledged counts only from the management
API, so without it (or before it has collected statistics) the check cannot pass: it says unknown.
A queue that does not exist holds nothing and has no consumer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from contract_platform.amqp.inspection import ManagementClient, QueueState, inspect_queue
from contract_platform.amqp.topology import Role, TopologyPlan
from contract_platform.evidence import Verdict
from contract_platform.retirement.model import CheckName, CheckResult
from contract_platform.store.records import ObservationSource

__all__ = ["AUDITED_ROLES", "QueueLook", "check_queues", "observe_queues", "record_observations"]

AUDITED_ROLES = (Role.CONSUMER, Role.RETRY, Role.DLQ, Role.PARKING_LOT)

_READY_ADVICE = {
    Role.CONSUMER: "let its consumers finish them, or move them to the successor",
    Role.RETRY: "they go back to the consumer queue when their delay ends; let them be consumed",
    Role.DLQ: "replay them to the successor or discard them",
    Role.PARKING_LOT: "replay them to the successor or discard them",
}


@dataclass(frozen=True)
class QueueLook:
    """One queue of the version, as the broker reported it during this audit."""

    name: str
    role: Role
    state: QueueState

    def to_dict(self) -> dict[str, Any]:
        state = self.state
        return {
            "queue": self.name,
            "role": str(self.role),
            "exists": state.exists,
            "ready": state.ready,
            "consumers": state.consumers,
            "unacked": state.unacked if state.exists else 0,
        }


def observe_queues(
    connection: Any, plan: TopologyPlan, *, management: ManagementClient | None | Literal["auto"] = "auto"
) -> list[QueueLook]:
    """Inspect each audited queue of ``plan`` (``BrokerError`` / ``BrokerUnavailable`` propagate)."""
    return [
        QueueLook(queue.name, queue.role, inspect_queue(connection, queue.name, management=management))
        for queue in plan.queues_of(*AUDITED_ROLES)
    ]


def record_observations(
    registry: Any, message_type: str, looks: Sequence[QueueLook], *, now: datetime, run_id: str | None
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
    if state.consumers:
        problems.append(
            f"{name} has {_count(state.consumers, 'consumer')} connected: stop it or move it to the successor"
        )
    if state.ready:
        what = "messages waiting to be retried" if look.role is Role.RETRY else "ready messages"
        problems.append(f"{name} ({look.role}) holds {state.ready} {what}: {_READY_ADVICE[look.role]}")
    if state.unacked:
        problems.append(f"{name} has {state.unacked} unacknowledged messages still being processed")
    return problems


def check_queues(looks: Sequence[QueueLook]) -> CheckResult:
    """Fail on any consumer, ready or unacked message; unknown when an unacked count is unknown."""
    figures: dict[str, Any] = {
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

"""The cutover of a migration: consumers and ready messages on each version's consumer queues, over time.

``observe_cutover`` records one observation per consumer queue (the ``dual_publish_migration`` DAG, each
run); ``cutover_series`` reads them back as a series (``contractctl migration status``).
It needs neither the migration engine nor the parity analysis; pika only where the broker is asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contract_platform.amqp.types import BrokerConnection
    from contract_platform.catalog.model import Contract
    from contract_platform.evidence import Registry

__all__ = ["consumer_queues", "cutover_series", "observe_cutover"]


def consumer_queues(contract: Contract) -> list[str]:
    return list(dict.fromkeys(consumer.queue for consumer in contract.consumers))


def observe_cutover(
    connection: BrokerConnection,
    registry: Registry,
    contracts: Sequence[Contract],
    *,
    run_id: str | None,
    now: datetime,
) -> dict[str, dict[str, dict[str, int | None]]]:
    """Record one observation per consumer queue of each version, all at ``now`` (one point of the series).

    A queue that does not exist has no consumer and holds nothing. Broker errors propagate.
    """
    from contract_platform.amqp.inspection import inspect_queue  # pika: only where the broker is asked
    from contract_platform.evidence.records import ObservationSource

    seen: dict[str, dict[str, dict[str, int | None]]] = {}
    for contract in contracts:
        for queue in consumer_queues(contract):
            state = inspect_queue(connection, queue)
            unacked = state.unacked if state.exists else 0
            registry.record_observation(
                contract.message_type,
                queue,
                consumers=state.consumers,
                ready=state.ready,
                unacked=unacked,
                source=ObservationSource.MANAGEMENT if state.unacked is not None else ObservationSource.AMQP,
                run_id=run_id,
                observed_at=now,
            )
            seen.setdefault(contract.message_type, {})[queue] = {
                "consumers": state.consumers,
                "ready": state.ready,
                "unacked": unacked,
            }
    return seen


def cutover_series(registry: Registry, contracts: Sequence[Contract], *, limit: int = 20) -> list[dict[str, Any]]:
    """The last ``limit`` observation moments, oldest first: consumers and ready messages per version.

    Only each version's consumer queues count; a version not observed at a moment shows None.
    """
    points: dict[datetime, dict[str, Any]] = {}
    for contract in contracts:
        queues = set(consumer_queues(contract))
        for seen in registry.observations(contract.message_type):
            if seen.queue not in queues:
                continue
            point = points.setdefault(seen.observed_at, {"runId": seen.run_id, "consumers": {}, "ready": {}})
            for name, value in (("consumers", seen.consumers), ("ready", seen.ready)):
                totals = point[name]
                known = totals.get(contract.message_type, 0)
                totals[contract.message_type] = None if value is None or known is None else known + value
    series = []
    for moment in sorted(points)[-limit:] if limit > 0 else []:
        point = points[moment]
        series.append(
            {
                "at": moment.isoformat().replace("+00:00", "Z"),
                "runId": point["runId"],
                "consumers": {c.message_type: point["consumers"].get(c.message_type) for c in contracts},
                "ready": {c.message_type: point["ready"].get(c.message_type) for c in contracts},
            }
        )
    return series

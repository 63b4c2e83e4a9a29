"""The recording audit puts the queues of a version under delivery tracing (``retirement.deliveries`` judges what
the trace saw; ``amqp.tracing`` is the mechanism; docs/retirement-audit.md#every-delivery-traced)."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

import pika
import pika.exceptions as px

from contract_platform.amqp.connection import broker_errors, close_quietly, describe_broker
from contract_platform.amqp.http import ManagementClient
from contract_platform.amqp.inspection import passive_queue
from contract_platform.amqp.tracing import (
    TRACE_EXCHANGE,
    binding_key,
    companion_arguments,
    switch_tracing_on,
    trace_arguments,
    trace_queues,
    untraceable,
    watched_vhosts,
)
from contract_platform.amqp.types import BrokerConnection
from contract_platform.evidence.registry import Registry

__all__ = ["vhost_connections", "watch_deliveries"]


@contextlib.contextmanager
def vhost_connections(connection: BrokerConnection, home_vhost: str) -> Iterator[Callable[[str], Any]]:
    """``connect(vhost)``: ``connection`` for its own virtual host, a sibling with its parameters (and so its
    name) for any other, closed after."""
    opened: dict[str, Any] = {}

    def connect(vhost: str) -> Any:
        if vhost == home_vhost:
            return connection
        if vhost not in opened:
            params = copy.copy(connection._impl.params)  # type: ignore[attr-defined]  # pika keeps them private
            params.virtual_host = vhost
            opened[vhost] = pika.BlockingConnection(params)
        return opened[vhost]

    try:
        yield connect
    finally:
        for sibling in opened.values():
            close_quietly(sibling)


def watch_deliveries(
    connection: BrokerConnection,
    client: ManagementClient,
    registry: Registry,
    queues: Sequence[tuple[str, str]],
    *,
    home_vhost: str,
    now: datetime,
) -> dict[str, str]:
    """Trace every delivery from ``queues`` ((vhost, name) pairs) from now on; returns, by virtual host, why the
    trace cannot work there (tracing off and not switchable, the trace queue refused), also stored on the watch."""
    trace, dropped, canary = trace_queues(registry.url)
    problems: dict[str, str] = {}
    lost: list[str] = []
    by_vhost = watched_vhosts(queues)
    with vhost_connections(connection, home_vhost) as connect, broker_errors(describe_broker(connection)):
        for vhost, names in by_vhost.items():
            target = connect(vhost)
            if passive_queue(target, trace) is None:
                lost.append(vhost)
            channel = target.channel()
            try:
                channel.queue_declare(dropped, durable=True, arguments=companion_arguments())
                channel.queue_declare(canary, durable=True, arguments=companion_arguments())
                channel.queue_declare(trace, durable=True, arguments=trace_arguments(dropped))
                channel.queue_bind(trace, TRACE_EXCHANGE, routing_key=binding_key(canary))
                for name in names:
                    if untraceable(name) is None:  # the others are judged unknown (retirement.deliveries)
                        channel.queue_bind(trace, TRACE_EXCHANGE, routing_key=binding_key(name))
            except px.ChannelClosedByBroker as exc:
                problems[vhost] = (
                    f"the delivery trace queue {trace} in virtual host {vhost!r} could not be set up "
                    f"({exc.reply_code} {exc.reply_text}): delete it, and the next recording audit declares it again"
                )
                continue
            finally:
                with contextlib.suppress(px.AMQPError):
                    if channel.is_open:
                        channel.close()
            problem = switch_tracing_on(client, vhost)
            if problem is not None:
                problems[vhost] = problem
    for vhost in lost:  # its watches, if any, start anew: what was delivered before is unknown
        reason = f"the delivery trace queue {trace} was not on the broker (deleted, or expired unread for a week)"
        registry.restart_delivery_watches(vhost, traced_from=now, reason=reason)
    registry.request_delivery_watches(queues, at=now, traced_from=now)
    for vhost, problem in problems.items():
        registry.confirm_delivery_watches(vhost, until=None, problem=problem)
    return problems

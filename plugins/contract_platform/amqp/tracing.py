"""Delivery tracing: every message a queue of a version under retirement hands out, seen as it leaves.

A reader that polls with ``basic.get`` makes no consumer, so the event exchange never sees it, and the
queue's delivery counters reach the management API only at the broker's statistics interval: a channel that
closes before then is never counted (docs/retirement-audit.md#every-delivery-traced). RabbitMQ's *firehose*
sees every delivery as it happens, whoever takes it and however briefly it stays connected: with tracing on in
a virtual host, the broker publishes a copy of each message it hands out to that virtual host's
``amq.rabbitmq.trace`` exchange, with the routing key ``deliver.<queue>`` and headers naming the connection
(the broker's own ``peer -> broker`` name, which no client chooses), the channel and the user.

The platform binds only the queues of versions under retirement, in one bounded queue per registry and
virtual host (``trace_queues``): the broker builds a trace message for every publish and delivery of a traced
virtual host and drops at once those no binding wants (the cost: benchmarks/README.md). The recording audit
asks for a queue to be watched (``ensure_trace`` and ``Registry.request_delivery_watches``); the broker
activity recorder consumes the trace (``activity.trace_reader``), times each delivery between two of its own canaries (the broker stamps
no time on a trace message), and stores it as a reader session of source ``delivery``.

The canary proves the trace works end to end: every heartbeat the recorder publishes a message into
``<trace>.canary`` and takes it with ``basic.get``; its own delivery trace comes back through the trace queue
behind every delivery traced before it. When it comes back, tracing was on and everything before it is
stored; when it does not, the watch says why, and the readers check is unknown, never a pass.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from contract_platform.amqp.http import ManagementClient

__all__ = [
    "CANARY_HEADER",
    "DELIVER",
    "TRACE_EXCHANGE",
    "TRACE_MAX_BYTES",
    "TRACE_MAX_MESSAGES",
    "binding_key",
    "companion_arguments",
    "switch_tracing_on",
    "trace_arguments",
    "trace_queues",
    "untraceable",
    "watched_vhosts",
]

log = logging.getLogger(__name__)

TRACE_EXCHANGE = "amq.rabbitmq.trace"
DELIVER = "deliver."
CANARY_HEADER = "x-contract-platform-canary"
TRACE_MAX_MESSAGES = 10_000  # a trace message carries the whole message: bounded in count and bytes
TRACE_MAX_BYTES = 16 * 1024 * 1024
_EXPIRES_MS = 7 * 24 * 3600 * 1000
_COMPANION: dict[str, Any] = {"x-max-length": 1, "x-overflow": "drop-head", "x-expires": _EXPIRES_MS}


def trace_queues(registry_url: str) -> tuple[str, str, str]:
    """The trace queue of one registry in each traced virtual host, with its companions: ``<trace>.dropped``
    keeps the latest trace message dropped at the limit, ``<trace>.canary`` carries the recorder's canaries."""
    digest = hashlib.sha256(registry_url.encode("utf-8")).hexdigest()[:10]
    trace = f"contract-platform.deliveries.{digest}"
    return trace, f"{trace}.dropped", f"{trace}.canary"


def trace_arguments(dropped: str) -> dict[str, Any]:
    """Bounded (the oldest dropped into ``dropped``: a gap, never a silent loss), one active reader."""
    return {
        "x-max-length": TRACE_MAX_MESSAGES,
        "x-max-length-bytes": TRACE_MAX_BYTES,
        "x-overflow": "drop-head",
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": dropped,
        "x-single-active-consumer": True,
        "x-expires": _EXPIRES_MS,
    }


def companion_arguments() -> dict[str, Any]:
    return dict(_COMPANION)


def binding_key(queue: str) -> str:
    """What binds a queue's deliveries (only a queue ``untraceable`` says nothing against)."""
    return DELIVER + queue


def untraceable(queue: str) -> str | None:
    """Why the deliveries of ``queue`` cannot be traced (None: they can).

    A binding key is an AMQP short string (255 bytes), so ``deliver.<queue>`` must fit; and the trace of a queue
    whose name is longer than that cannot even be delivered (RabbitMQ 3.10 closes the reading connection with
    INTERNAL_ERROR), so no binding may match one: a name holding ``*`` or ``#`` as a word would be a wildcard in
    a topic binding and could. Such a queue is judged unknown, never bound."""
    if len(binding_key(queue).encode("utf-8", "surrogateescape")) > 255:
        return f"its name is too long to trace ({len(queue.encode('utf-8', 'surrogateescape'))} bytes; at most 247)"
    if any(word in ("*", "#") for word in queue.split(".")):
        return "its name holds '*' or '#' as a word, a wildcard in the trace's topic binding"
    return None


def switch_tracing_on(client: ManagementClient, vhost: str) -> str | None:
    """Tracing on in ``vhost`` (kept as it is when on already); the problem, with its fix, when it cannot be.

    The management API's ``PUT /api/vhosts/<vhost>`` sets the description and tags it is given, so both go back
    as they were."""
    path = f"vhosts/{quote(vhost, safe='')}"
    found = client.get(path)
    fix = f"switch it on with: rabbitmqctl trace_on -p {vhost!r}"
    if not isinstance(found, dict):
        return f"the management API did not show virtual host {vhost!r}, so its delivery trace is unknown; {fix}"
    if found.get("tracing") is True:
        return None
    tags = found.get("tags")
    body = {
        "tracing": True,
        "description": str(found.get("description") or ""),
        "tags": ",".join(str(tag) for tag in tags) if isinstance(tags, list) else str(tags or ""),
    }
    status = client.put(path, body)
    if status in (201, 204):
        log.info("switched delivery tracing on in virtual host %r (its queues under retirement are traced)", vhost)
        return None
    return (
        f"delivery tracing is off in virtual host {vhost!r} and user {client.user!r} could not switch it on "
        f"(the management API answered {status}; it needs the administrator tag); {fix}"
    )


def watched_vhosts(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """The watched queues by virtual host."""
    found: dict[str, list[str]] = {}
    for vhost, queue in pairs:
        found.setdefault(vhost, []).append(queue)
    return found

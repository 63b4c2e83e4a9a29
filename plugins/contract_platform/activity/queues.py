"""The recorder's queues by name, and what the management API says of them: no pika, no recorder.

``contractctl record-activity --status`` reads the store and this; the recorder (``recorder``) declares and
reads the queues named here.
"""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import unquote, urlsplit

from contract_platform.amqp.http import ManagementClient, management_client_for_url

__all__ = ["DEFAULT_QUEUE", "management_for", "parked_queue", "queue_for", "queue_state", "recorder_queues"]

DEFAULT_QUEUE = "contract-platform.broker-activity"


def queue_for(registry_url: str) -> str:
    """The recorder queue of one registry: each registry on a broker gets every event, through its own queue."""
    digest = hashlib.sha256(registry_url.encode("utf-8")).hexdigest()[:10]
    return f"{DEFAULT_QUEUE}.{digest}"


def recorder_queues(queue: str) -> tuple[str, str, str]:
    """The recorder's queue and its two companions: ``<queue>.dropped`` keeps the latest message the broker
    dropped at the queue's limit, ``<queue>.alive`` the active recorder's sentinel. Delete all three together,
    and ``parked_queue`` with them."""
    return queue, f"{queue}.dropped", f"{queue}.alive"


def parked_queue(queue: str) -> str:
    """``<queue>.parked``: the events the store refused, each with its reason (``activity.parking``); declared by
    the recorder when it parks the first one, so it is there only when something was parked."""
    return f"{queue}.parked"


def management_for(amqp_url: str, management_url: str | None, event_vhost: str) -> ManagementClient:
    """A fresh client of the management API of the recorder's broker (a client that failed once stops asking):
    the AMQP URL's host, or ``management_url`` with the AMQP URL's credentials, for the event vhost.

    Always the event vhost, whatever vhost ``amqp_url`` names: the recorder declares its queues where the event
    exchange is, not on the platform's vhost, so a caller passing the platform's broker URL asks the right one."""
    if management_url is None:
        client = management_client_for_url(amqp_url)
        client.vhost = event_vhost
        return client
    parts = urlsplit(amqp_url)
    return ManagementClient(
        management_url,
        unquote(parts.username or "guest"),
        unquote(parts.password or "guest"),
        vhost=event_vhost,
    )


def queue_state(client: ManagementClient, queue: str) -> dict[str, Any] | None:
    """The recorder's queue as the management API reports it (None: not there, or the API did not answer):
    messages waiting, its limits, its consumers (the active recorder and those waiting) and the messages in
    ``<queue>.dropped`` that no recorder has accounted for yet."""
    found = client.queue(queue)
    if found is None:
        return None
    given = found.get("arguments")
    arguments: dict[str, Any] = given if isinstance(given, dict) else {}
    consumers = []
    for item in found.get("consumer_details") or []:
        if not isinstance(item, dict):
            continue
        details = item.get("channel_details")
        channel: dict[str, Any] = details if isinstance(details, dict) else {}
        consumers.append(
            {
                "tag": str(item.get("consumer_tag"))[:255],
                "active": item.get("active") is not False and item.get("activity_status") != "waiting",
                "connection": channel.get("connection_name"),
                "peerHost": channel.get("peer_host"),
            }
        )
    dropped = client.queue(recorder_queues(queue)[1])
    return {
        "ready": found.get("messages_ready"),
        "unacknowledged": found.get("messages_unacknowledged"),
        "limits": {"messages": arguments.get("x-max-length"), "bytes": arguments.get("x-max-length-bytes")},
        "singleActiveConsumer": arguments.get("x-single-active-consumer") is True,
        "consumers": consumers,
        "droppedWaiting": dropped.get("messages") if isinstance(dropped, dict) else None,
    }

"""The broker's topology read once per audit run and shared by every version the run audits.

It is read-only: what a run does with it (the dead-letter queues it has read, ``dead_letters.DeadLetterSweep``)
is the audit run's own, so replay and the readers check share the same snapshot.

::

    TopologySnapshot.read(client, *, vhosts, suffixes) -> TopologySnapshot
        topology   every watched virtual host's exchanges, bindings, queues (with the counters and depths the
                   checks need, ``columns=`` only), policies and consumers: ``amqp.management.read_topology``
        index      the broker-wide dead-letter queues (``discovery.dead_letter_index``), built once
    snapshot.discover(contract, plan, scope=...) -> Discovery   (the one ``discover_queues``)

Cost: the per-version path read the whole topology for each version: 2 probes (overview, event exchange),
then ``read_topology`` (connections, overview, and per virtual host policies, operator policies,
exchanges, bindings, queues, consumers: 8 calls for one virtual host) plus one ``queues/<vhost>/<name>``
per receiver of its own virtual host, and every DLQ on the broker was peeked for every version. A
snapshot makes those calls once per run, and the version's queues' unacknowledged counts come from its
listing too. At 60,000 queues the whole queue listing takes tens of seconds on a busy node: it is read
with ``LISTING_TIMEOUT``; when the API drops it, it is read again page by page (``PAGE_SIZE``, the API's
limit). When the API stops answering, the error says whether a node is out of file handles, sockets,
memory or disk (``amqp.management.resource_problem``) and how to raise the limit.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from contract_platform import settings
from contract_platform.amqp.http import ManagementClient
from contract_platform.amqp.management import BrokerTopology, read_topology
from contract_platform.amqp.topology import TopologyPlan
from contract_platform.amqp.types import BrokerConnection
from contract_platform.catalog.model import Contract
from contract_platform.errors import ManagementUnavailable
from contract_platform.retirement.discovery import (
    DEFAULT_DEAD_LETTER_SUFFIXES,
    DeadLetterIndex,
    Discovery,
    dead_letter_index,
    discover_queues,
)

__all__ = ["LISTING_TIMEOUT", "PAGE_SIZE", "TopologySnapshot", "while_alive"]

log = logging.getLogger(__name__)
_T = TypeVar("_T")

LISTING_TIMEOUT = 120.0  # seconds one listing may take (60,000 queues: 20 to 40 s on a busy 2-core node)
PAGE_SIZE = 500  # the management API's largest page


@dataclass
class TopologySnapshot:
    """One read of the broker's topology, shared by the versions of one audit run."""

    client: ManagementClient
    topology: BrokerTopology
    home_vhost: str
    suffixes: tuple[str, ...]
    index: DeadLetterIndex
    read_at: datetime
    seconds: float
    paged: bool = False

    @classmethod
    def read(
        cls,
        client: ManagementClient,
        *,
        vhosts: Sequence[str] | None = None,
        suffixes: Sequence[str] | None = None,
        timeout: float = LISTING_TIMEOUT,
        page_size: int | None = None,
        keep_alive: Any = None,
    ) -> TopologySnapshot:
        """Read the connection's virtual host and ``vhosts`` (default ``settings.watched_vhosts()``).

        ``suffixes``: the DLQ naming net (default ``settings.dead_letter_suffixes()``, else the built-in one).
        ``page_size``: page the listings from the start; otherwise whole, and paged only if the API drops them.
        ``keep_alive``: an open pika connection whose heartbeats must go on while the listing takes (a minute
        at 60,000 queues: the broker drops a connection that misses two heartbeats).
        """
        home = client.vhost
        watched = (home, *(settings.watched_vhosts() if vhosts is None else vhosts))
        net = tuple(suffixes) if suffixes is not None else None
        if net is None:
            net = tuple(settings.dead_letter_suffixes() or DEFAULT_DEAD_LETTER_SUFFIXES)
        read_at = datetime.now(UTC)
        began = time.perf_counter()
        paged = page_size is not None

        def listing() -> tuple[BrokerTopology, bool]:
            try:
                return read_topology(client, watched, timeout=timeout, page_size=page_size), paged
            except ManagementUnavailable as exc:
                if paged or not isinstance(exc.__cause__, Exception) or "stopped answering" not in str(exc):
                    raise
                log.warning("the whole topology listing failed (%s): reading it page by page", exc)
                return read_topology(client, watched, timeout=timeout, page_size=PAGE_SIZE), True

        topology, paged = while_alive(listing, keep_alive)
        return cls(
            client,
            topology,
            home,
            net,
            dead_letter_index(topology, net),
            read_at,
            time.perf_counter() - began,
            paged,
        )

    def discover(self, contract: Contract, plan: TopologyPlan, *, scope: str = "") -> Discovery:
        return discover_queues(
            contract,
            plan,
            self.topology,
            home_vhost=self.home_vhost,
            suffixes=self.suffixes,
            scope=scope,
            index=self.index,
        )

    @property
    def queues(self) -> int:
        return sum(len(hosted.queues) for hosted in self.topology.vhosts.values())


def while_alive(work: Callable[[], _T], connection: BrokerConnection | None) -> _T:
    """``work()`` in a worker thread while this thread serves ``connection``'s heartbeats (pika's blocking
    connection is used from this thread only); without a connection, ``work()`` here."""
    if connection is None or not getattr(connection, "is_open", False):
        return work()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="topology") as pool:
        future = pool.submit(work)
        while not future.done():
            connection.process_data_events(time_limit=0.5)
        return future.result()

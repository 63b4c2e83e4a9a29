"""The v1 -> v2 migration bridge: every message published as v<N-1> is also published as v<N>.

::

    v1 exchange --(v1 routing key)--> bridge.<v1 type>            (quorum, the bridge's own tap queue)
        -> migrate_envelope(spec) -> v2 validation -> v2 exchange (v2 routing key, mandatory, confirmed)
        -> or, if it cannot be migrated: bridge.<v1 type>.parking-lot (original body and properties,
           plus x-park-reason / x-park-pointer / x-park-detail / x-park-source-type / x-park-target-type)

- **Nothing is acknowledged before its republication is confirmed** (``relay.Relay``): a v1 delivery is
  acked only once its v2 message (or its parked copy) was confirmed by the broker, with many publishes in
  flight and acknowledgements batched (``multiple``). A v2 message returned as unroutable means the v2
  topology is missing: its v1 delivery is requeued and the bridge stops with ``PublishRefused``.
- **At least once, idempotent.** After a crash the unacknowledged v1 messages are delivered again and
  published again with the same messageId: the only duplicates a v2 consumer can see, and harmless to one
  that deduplicates by messageId (docs/design.md#migrations).
- **Modes.** ``drain`` stops once the tap queue has been idle ``idle_timeout`` seconds, or after
  ``max_messages`` / ``max_seconds`` (a bounded, checkpointing DAG task: every acked message is done).
  ``follow`` runs until SIGTERM/SIGINT and reconnects with backoff when the broker goes away.
  Either way SIGTERM/SIGINT stops consuming, waits for the outstanding confirms, acks and closes.
- **Layout.** ``translation.py``: the route and what one message becomes; ``relay.py``: the asynchronous
  consume -> publish -> confirm -> ack loop (``amqp/confirms.py`` keeps the books); ``offload.py``: the helper
  process that does the per-message work on a second core (``BridgeConfig.offload``, on by default).
- **Rollback**: stop the bridge. v1 producers and consumers are untouched (the tap queue is the bridge's
  own); delete ``bridge.<v1 type>`` when the migration is abandoned or done.

``contractctl bridge MIGRATION`` (``contract_platform.cli.bridge``) runs one bridge and prints its report.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import pika.exceptions as px

from contract_platform import settings
from contract_platform.amqp.connection import broker_errors, close_quietly, describe_broker, open_connection
from contract_platform.amqp.inspection import exchange_exists
from contract_platform.amqp.plan import parking_lot_name, tap_queue_name
from contract_platform.amqp.types import BrokerConnection
from contract_platform.bridge.relay import Relay, RelaySettings, RelayStats, StopReason
from contract_platform.bridge.translation import PUBLISHED, MigrationRoute, Translator, target_validator
from contract_platform.catalog.model import Catalog
from contract_platform.errors import (
    BrokerUnavailable,
    PublishRefused,
    QueueMissing,
    TopologyConflict,
    UsageError,
)
from contract_platform.signals import stop_on_signals

__all__ = [
    "Bridge",
    "BridgeConfig",
    "BridgeReport",
    "Mode",
    "exit_code",
    "prepare_tap",
    "tap_queue_arguments",
    "tap_queue_name",
]

log = logging.getLogger(__name__)

PRECONDITION_FAILED = 406
QUORUM: Mapping[str, Any] = {"x-queue-type": "quorum"}
MAX_RECONNECT_DELAY = 10.0


def tap_queue_arguments(queue: str) -> dict[str, Any]:
    """Quorum; a message the broker gives up on (RabbitMQ 4's default delivery limit of 20) goes to the parking
    lot, at least once, instead of being dropped. RabbitMQ 3.x sets no limit: nothing is dead-lettered there."""
    return dict(QUORUM) | {
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": parking_lot_name(queue),
        "x-dead-letter-strategy": "at-least-once",
        "x-overflow": "reject-publish",
    }


class Mode(StrEnum):
    DRAIN = "drain"
    FOLLOW = "follow"


@dataclass(frozen=True)
class BridgeConfig:
    mode: Mode = Mode.DRAIN
    url: str | None = None  # default: settings.rabbitmq_url()
    tap_queue: str | None = None  # default: tap_queue_name(source type)
    idle_timeout: float = 5.0  # drain only
    max_messages: int | None = None
    max_seconds: float | None = None
    prefetch: int = 1000  # also the most publishes in flight
    stop_timeout: float = 30.0  # how long a stop waits for outstanding confirms
    reconnect_delay: float = 1.0  # follow only; doubles up to 10 s while the broker stays away
    offload: bool = True  # parse/migrate/validate/encode in a helper process (relay.py), on a second core

    def __post_init__(self) -> None:
        positive: dict[str, float | None] = {
            "idle_timeout": self.idle_timeout,
            "prefetch": self.prefetch,
            "stop_timeout": self.stop_timeout,
            "max_messages": self.max_messages,
            "max_seconds": self.max_seconds,
        }
        for name, value in positive.items():
            if value is not None and value <= 0:
                raise UsageError(f"{name.replace('_', '-')} must be positive, not {value}")


@dataclass(frozen=True)
class BridgeReport:
    source: str
    target: str
    tap_queue: str
    parking_lot: str
    mode: str
    consumed: int  # deliveries handled (a redelivery counts again)
    published: int  # target messages confirmed, and their deliveries acked
    parked: Mapping[str, int]  # park reason -> messages confirmed in the parking lot, and acked
    redelivered: int  # deliveries the broker marked as redelivered
    requeued: int  # deliveries given back because their republication was refused
    elapsed_seconds: float  # first delivery to last acknowledgement
    rate: float  # acknowledged messages per second over elapsed_seconds
    stopped_by: str
    reconnects: int = 0

    @property
    def parked_total(self) -> int:
        return sum(self.parked.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "tapQueue": self.tap_queue,
            "parkingLot": self.parking_lot,
            "mode": self.mode,
            "consumed": self.consumed,
            "published": self.published,
            "parked": dict(self.parked),
            "parkedTotal": self.parked_total,
            "redelivered": self.redelivered,
            "requeued": self.requeued,
            "elapsedSeconds": round(self.elapsed_seconds, 3),
            "rate": round(self.rate, 1),
            "stoppedBy": self.stopped_by,
            "reconnects": self.reconnects,
        }


# -- the tap queue ----------------------------------------------------------------------------------


def prepare_tap(connection: BrokerConnection, route: MigrationRoute, queue: str) -> None:
    """Declare the tap queue and its parking lot (idempotent) and bind the tap queue to the v1 routing key.

    Both exchanges must exist already: the bridge never declares the contracts' topology.
    """
    broker = describe_broker(connection)
    source, target = route.source.transport, route.target.transport
    with broker_errors(broker):
        if not exchange_exists(connection, source.exchange):
            raise QueueMissing(
                f"exchange {source.exchange} of {route.source.message_type} does not exist on {broker}: nothing to "
                "bridge from; provision its topology first"
            )
        if not exchange_exists(connection, target.exchange):
            raise PublishRefused(
                f"exchange {target.exchange} of {route.target.message_type} does not exist on {broker}: provision the "
                "target topology first (nothing was consumed)"
            )
        parking_lot = parking_lot_name(queue)
        for name, arguments in ((parking_lot, dict(QUORUM)), (queue, tap_queue_arguments(queue))):
            channel = connection.channel()
            try:
                channel.queue_declare(name, durable=True, arguments=arguments)
            except px.ChannelClosedByBroker as exc:
                if exc.reply_code != PRECONDITION_FAILED:
                    raise
                wanted: dict[str, object] = {"durable": True, "arguments": arguments}
                raise TopologyConflict(name, {"unknown": f"406 {exc.reply_text}"}, wanted) from exc
            if name == queue:
                channel.queue_bind(queue, source.exchange, routing_key=source.routing_key)
            channel.close()


# -- the bridge -------------------------------------------------------------------------------------


@dataclass
class _Run:
    stats: RelayStats = field(default_factory=RelayStats)
    reconnects: int = 0
    reason: StopReason = StopReason.REQUESTED


class Bridge:
    """Runs one migration route until its mode says stop; ``run()`` returns the ``BridgeReport``."""

    def __init__(self, catalog: Catalog, route: MigrationRoute, config: BridgeConfig | None = None) -> None:
        self.route = route
        self.config = config or BridgeConfig()
        self.url = self.config.url or settings.rabbitmq_url()
        self.queue = self.config.tap_queue or tap_queue_name(route.source.message_type)
        self.parking_lot = parking_lot_name(self.queue)
        self.translate = Translator(route, target_validator(catalog), self.parking_lot)
        self._stopped = False
        self._relay: Relay | None = None

    def stop(self) -> None:
        """Stop gracefully (from any thread): outstanding confirms are waited for and acknowledged."""
        self._stopped = True
        relay = self._relay
        if relay is not None:
            relay.request_stop()

    def _on_signal(self) -> None:
        """SIGTERM/SIGINT: set flags only (a signal handler must not take a lock the main thread may hold)."""
        self._stopped = True
        relay = self._relay
        if relay is not None:
            relay.request_stop(wake=False)  # its loop looks at the flag every tick

    def run(self) -> BridgeReport:
        run = _Run()
        started = time.monotonic()
        deadline = started + self.config.max_seconds if self.config.max_seconds is not None else None
        delay = self.config.reconnect_delay
        with stop_on_signals(self._on_signal):
            while not self._stopped:
                consumed_before = run.stats.consumed
                try:
                    self._prepare()
                    run.reason = self._relay_once(run.stats, deadline)
                    break
                except BrokerUnavailable as exc:
                    if self.config.mode is not Mode.FOLLOW or self._stopped:
                        raise
                    run.reconnects += 1
                    if run.stats.consumed > consumed_before:  # it had been working: start the backoff again
                        delay = self.config.reconnect_delay
                    log.warning("bridge %s: %s; reconnecting in %.1f s", self.queue, exc, delay)
                    self._sleep(delay)
                    delay = min(delay * 2, MAX_RECONNECT_DELAY)
        return self._report(run)

    def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self._stopped and time.monotonic() < deadline:
            time.sleep(min(0.1, deadline - time.monotonic()))

    def _prepare(self) -> None:
        connection = open_connection(self.url)
        try:
            prepare_tap(connection, self.route, self.queue)
        finally:
            close_quietly(connection)

    def _relay_once(self, stats: RelayStats, deadline: float | None) -> StopReason:
        config = self.config
        prefetch = config.prefetch
        if config.max_messages is not None:
            prefetch = max(1, min(prefetch, config.max_messages - stats.consumed))
        relay_settings = RelaySettings(
            url=self.url,
            queue=self.queue,
            prefetch=prefetch,
            idle_timeout=config.idle_timeout if config.mode is Mode.DRAIN else None,
            max_messages=config.max_messages,
            deadline=deadline,
            stop_timeout=config.stop_timeout,
            connection_name=f"contract-platform-bridge {self.queue}",
            offload=config.offload,
        )
        self._relay = Relay(relay_settings, self.translate, stats)
        if self._stopped:
            self._relay.request_stop(wake=False)
        try:
            return self._relay.run()
        finally:
            self._relay = None

    def _report(self, run: _Run) -> BridgeReport:
        stats = run.stats
        parked = {label: count for label, count in sorted(stats.confirmed.items()) if label != PUBLISHED}
        settled = sum(stats.confirmed.values())
        elapsed = 0.0
        if stats.first_delivery is not None and stats.last_settled is not None:
            elapsed = max(stats.last_settled - stats.first_delivery, 0.0)
        return BridgeReport(
            source=self.route.source.message_type,
            target=self.route.target.message_type,
            tap_queue=self.queue,
            parking_lot=self.parking_lot,
            mode=str(self.config.mode),
            consumed=stats.consumed,
            published=stats.confirmed[PUBLISHED],
            parked=parked,
            redelivered=stats.redelivered,
            requeued=stats.requeued,
            elapsed_seconds=elapsed,
            rate=settled / elapsed if elapsed > 0 else 0.0,
            stopped_by=str(run.reason),
            reconnects=run.reconnects,
        )


def exit_code(report: BridgeReport) -> int:
    """0 when every message was published to the target, 1 when some were parked."""
    return 1 if report.parked_total else 0

"""What the service client's guards cost: per message in one process, and as throughput against plain pika.

    .venv/bin/python benchmarks/client_guard.py [--messages 20000] [--rounds 3] [--repeat 5]

**Per message** (microseconds, best of ``--repeat`` passes of ``--count`` messages, one core), on the
catalogue's own ``billing.invoice-issued`` fixtures (an ~800-byte envelope):

- ``peek``: the header peek (``Guard.peek``: the type from the AMQP properties, the body untouched);
- ``parse``: ``orjson.loads`` of the body alone, the floor of anything that reads it;
- ``validate``: ``Guard.inspect`` of a valid v2 delivery by a v2 reader: size, parse, depth, the envelope
  standard, properties against metadata, the payload schema (the platform's validator, jsonschema-rs fast path);
- ``migrate_on_read``: ``Guard.inspect`` of a v1 delivery by a v2 reader: all of the above for v1, the
  migration (``migration.yaml``), then the v2 schema;
- ``migrate_backwards``: ``Guard.inspect`` of a v2 delivery by a v1 reader: the v2 checks, the same
  ``migration.yaml`` read backwards (``migration.inverse``), then the v1 schema;
- ``publish_check``: ``GuardedPublisher.check``: validate, encode, the AMQP properties the standard mirrors.

**Throughput**, on the broker of ``$CONTRACT_RABBITMQ_URL`` (default 127.0.0.1:5672), in a virtual host of
its own (deleted afterwards) holding the catalogue's topology (quorum queues), ``--messages`` per round:

- ``plain_publish``: pika's ``SelectConnection``, confirm mode, ``--window`` messages in flight (the same
  window as the guarded publisher's ``max_in_flight``), pre-encoded bodies, properties built per message;
- ``plain_publish_joined_writes``: the same with the connection class the guarded publisher runs
  (``amqp.asynchronous.JoinedWritesConnection``: one socket write per turn of the loop, not one per frame);
- ``guarded_publish``: ``GuardedPublisher.publish`` of each envelope from the caller's thread, then ``flush``;
- ``plain_consume``: pika's ``SelectConnection``, ``--prefetch``, ``orjson.loads`` of each body, one
  ``basic.ack(multiple)`` per turn of the loop (the guarded consumer's batching);
- ``plain_consume_ack_each``: the same, one ``basic.ack`` per message (what most consumers do), for the record;
- ``guarded_consume``: ``GuardedConsumer`` with a handler that does nothing, the same prefetch.

Each also reports the CPU time this process spent per message (``cpu_us_per_message``, every thread),
which moves less than the rates when other work shares the machine.

Rates are messages from the first publish (or delivery) to the last confirm (or acknowledgement). Targets:
peek < 5 us, validate < 50 us, migrate_on_read < 100 us, guarded publish >= 0.9x plain, guarded consume >=
0.8x plain (median ratio of the rounds). Prints one JSON line; exit 0 when every target is met, 1 when not.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pika

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: tests.support builds the private virtual host

from benchmarks.confirming import ConfirmingPublisher, stopped  # noqa: E402
from tests.support.broker import private_vhost, url_of  # noqa: E402

from contract_platform.amqp import open_connection, plan_topology, provision  # noqa: E402
from contract_platform.amqp.asynchronous import JoinedWritesConnection, async_parameters  # noqa: E402
from contract_platform.amqp.connection import close_quietly  # noqa: E402
from contract_platform.catalog import load_catalog  # noqa: E402
from contract_platform.client import GuardedConsumer, GuardedPublisher  # noqa: E402
from contract_platform.client.bundle import Bundle, bundle_from_document  # noqa: E402
from contract_platform.client.guard import Guard, Inspected  # noqa: E402
from contract_platform.client.testkit import delivery_of  # noqa: E402
from contract_platform.export.bundle import export_bundle  # noqa: E402

V1, V2 = "billing.invoice-issued.v1", "billing.invoice-issued.v2"
EXCHANGE, KEY = "billing.events", "billing.invoice.issued.v2"
QUEUE = "accounting-service.billing.invoice-issued.v2"
TARGETS_US = {"peek": 5.0, "validate": 50.0, "migrate_on_read": 100.0, "migrate_backwards": 100.0}
TARGET_PUBLISH, TARGET_CONSUME = 0.9, 0.8


def best_us(action: Callable[[], Any], count: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(count):
            action()
        best = min(best, time.perf_counter() - started)
    return round(best / count * 1e6, 2)


def per_message(bundle: Bundle, count: int, repeat: int) -> dict[str, Any]:
    v1 = next(bundle.fixtures(V1, valid=True)).document
    v2 = next(bundle.fixtures(V2, valid=True)).document
    reader = Guard(bundle, reads=[V2])
    properties, body = delivery_of(v2)
    old_properties, old_body = delivery_of(v1)
    assert isinstance(reader.inspect(properties, body), Inspected)
    migrated = reader.inspect(old_properties, old_body)
    assert isinstance(migrated, Inspected) and migrated.migrated
    old_reader = Guard(bundle, reads=[V1])
    backwards = old_reader.inspect(properties, body)
    assert isinstance(backwards, Inspected) and backwards.migrated
    publisher = GuardedPublisher(bundle, "amqp://unused", service="billing-service")
    return {
        "envelope_bytes": len(body),
        "peek": best_us(lambda: reader.peek(properties), count, repeat),
        "parse": best_us(lambda: orjson.loads(body), count, repeat),
        "validate": best_us(lambda: reader.inspect(properties, body), count, repeat),
        "migrate_on_read": best_us(lambda: reader.inspect(old_properties, old_body), count, repeat),
        "migrate_backwards": best_us(lambda: old_reader.inspect(properties, body), count, repeat),
        "publish_check": best_us(lambda: publisher.check(v2), count, repeat),
    }


def envelopes(bundle: Bundle, count: int) -> list[dict[str, Any]]:
    template = next(bundle.fixtures(V2, valid=True)).document
    made = []
    for number in range(count):
        envelope = copy.deepcopy(template)
        envelope["metadata"]["messageId"] = f"b0000000-0000-4000-8000-{number:012d}"
        made.append(envelope)
    return made


class PlainPublisher(ConfirmingPublisher):
    """pika's SelectConnection in confirm mode, ``window`` publishes in flight: the baseline."""

    def __init__(
        self,
        url: str,
        deliveries: Sequence[tuple[Any, bytes]],
        window: int,
        connection_class: Any = pika.SelectConnection,
    ) -> None:
        super().__init__(url, "bench plain publisher", connection_class)
        self.deliveries, self.window = deliveries, window
        self.confirmed = 0
        self.started = self.finished = 0.0

    def run(self) -> float:
        self.connection.ioloop.start()
        return len(self.deliveries) / (self.finished - self.started)

    def start(self) -> None:
        self.started = time.perf_counter()
        self._pump()

    def _pump(self) -> None:
        while self.sent < len(self.deliveries) and len(self.unconfirmed) < self.window:
            properties, body = self.deliveries[self.sent]
            self.channel.basic_publish(EXCHANGE, KEY, body, pika.BasicProperties(**properties), mandatory=True)
            self.sent += 1
            self.unconfirmed.add(self.sent)

    def on_confirms(self, count: int) -> None:
        self.confirmed += count
        if self.confirmed >= len(self.deliveries):
            self.finished = time.perf_counter()
            self.connection.close()  # the loop stops once the broker confirms the close (stopped)
        else:
            self._pump()


class PlainConsumer:
    """pika's SelectConnection consuming ``count`` messages: parse each body, ack once per loop turn."""

    def __init__(self, url: str, count: int, prefetch: int, *, ack_each: bool = False) -> None:
        self.count, self.prefetch, self.ack_each = count, prefetch, ack_each
        self.delivered = 0
        self.last_tag = 0
        self.scheduled = False
        self.started = self.finished = 0.0
        self.connection = pika.SelectConnection(
            async_parameters(url, "bench plain consumer"), on_open_callback=self._open, on_close_callback=stopped
        )

    def run(self) -> float:
        self.connection.ioloop.start()
        return self.count / (self.finished - self.started)

    def _open(self, connection: Any) -> None:
        connection.channel(on_open_callback=self._channel)

    def _channel(self, channel: Any) -> None:
        self.channel = channel
        channel.basic_qos(prefetch_count=self.prefetch, callback=lambda _f: channel.basic_consume(QUEUE, self._message))

    def _message(self, channel: Any, method: Any, properties: Any, body: bytes) -> None:
        if self.delivered == 0:
            self.started = time.perf_counter()
        orjson.loads(body)
        self.delivered += 1
        self.last_tag = method.delivery_tag
        if self.ack_each:  # what most consumers do: one basic.ack per message
            channel.basic_ack(method.delivery_tag)
            if self.delivered >= self.count:
                self.finished = time.perf_counter()
                self.connection.close()
        elif not self.scheduled:
            self.scheduled = True
            self.connection.ioloop.call_later(0, self._ack)

    def _ack(self) -> None:
        self.scheduled = False
        self.channel.basic_ack(self.last_tag, multiple=True)
        if self.delivered >= self.count:
            self.finished = time.perf_counter()
            self.connection.close()  # the loop stops once the broker confirms the close (stopped)


def cpu(action: Callable[[], Any]) -> tuple[Any, float]:
    """``action()`` and the CPU seconds this process spent on it (every thread: the publisher's I/O thread too)."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    result = action()
    after = resource.getrusage(resource.RUSAGE_SELF)
    return result, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def fill(url: str, deliveries: Sequence[tuple[Any, bytes]], window: int) -> None:
    PlainPublisher(url, deliveries, window).run()


def guarded_publish(bundle: Bundle, url: str, made: list[dict[str, Any]], window: int) -> tuple[float, int]:
    with GuardedPublisher(bundle, url, service="billing-service", max_in_flight=window) as publisher:
        started = time.perf_counter()
        for envelope in made:
            publisher.publish(envelope)
        publisher.flush(timeout=600)
        elapsed = time.perf_counter() - started
        frames = publisher.stats.confirm_frames
    return len(made) / elapsed, frames


def guarded_consume(bundle: Bundle, url: str, count: int, prefetch: int) -> float:
    """From the first handler call to the last (the plain consumer: first delivery to last acknowledgement)."""
    calls: list[float] = []

    def handler(_message: Any) -> None:
        calls.append(time.perf_counter())

    consumer = GuardedConsumer(bundle, url, queues=[QUEUE], prefetch=prefetch).on(V2, handler)
    consumer.run(max_messages=count)
    assert consumer.stats.handled == count, consumer.stats
    return count / (calls[-1] - calls[0])


def drain(url: str) -> None:
    connection = open_connection(url)
    try:
        connection.channel().queue_purge(QUEUE)
        for queue in ("notification-service.billing.invoice-issued.v2", "archive.billing.events"):
            connection.channel().queue_purge(queue)
    finally:
        close_quietly(connection)


def throughput(
    bundle: Bundle, publisher_bundle: Bundle, messages: int, rounds: int, window: int, prefetch: int
) -> dict[str, Any]:
    catalog = load_catalog(ROOT / "contracts")
    made = envelopes(publisher_bundle, messages)
    raw = [(dict(properties.__dict__), body) for properties, body in (delivery_of(e) for e in made)]
    deliveries = [({k: v for k, v in p.items() if v is not None}, body) for p, body in raw]
    rows = []
    with private_vhost() as vhost:
        url = url_of(vhost)
        connection = open_connection(url)
        try:
            provision(connection, plan_topology(catalog.contracts[V2]))
        finally:
            close_quietly(connection)
        for _ in range(rounds):
            drain(url)
            plain_publish, plain_publish_cpu = cpu(PlainPublisher(url, deliveries, window).run)
            drain(url)
            joined = PlainPublisher(url, deliveries, window, JoinedWritesConnection).run()
            drain(url)
            (guarded, frames), guarded_publish_cpu = cpu(lambda: guarded_publish(publisher_bundle, url, made, window))
            drain(url)
            fill(url, deliveries, window)
            plain_consume, plain_consume_cpu = cpu(PlainConsumer(url, messages, prefetch).run)
            drain(url)
            fill(url, deliveries, window)
            ack_each = PlainConsumer(url, messages, prefetch, ack_each=True).run()
            drain(url)
            fill(url, deliveries, window)
            guarded_consume_rate, guarded_consume_cpu = cpu(lambda: guarded_consume(bundle, url, messages, prefetch))
            drain(url)
            per = 1e6 / messages
            rows.append(
                {
                    "plain_publish": round(plain_publish),
                    "guarded_publish": round(guarded),
                    "publish_ratio": round(guarded / plain_publish, 3),
                    "plain_publish_joined_writes": round(joined),
                    "publish_ratio_joined_writes": round(guarded / joined, 3),
                    "confirm_frames": frames,
                    "plain_consume": round(plain_consume),
                    "guarded_consume": round(guarded_consume_rate),
                    "consume_ratio": round(guarded_consume_rate / plain_consume, 3),
                    "plain_consume_ack_each": round(ack_each),
                    "consume_ratio_ack_each": round(guarded_consume_rate / ack_each, 3),
                    "cpu_us_per_message": {
                        "plain_publish": round(plain_publish_cpu * per, 1),
                        "guarded_publish": round(guarded_publish_cpu * per, 1),
                        "plain_consume": round(plain_consume_cpu * per, 1),
                        "guarded_consume": round(guarded_consume_cpu * per, 1),
                    },
                }
            )
    return {
        "rounds": rows,
        "publish_ratio": statistics.median(r["publish_ratio"] for r in rows),
        "publish_ratio_joined_writes": statistics.median(r["publish_ratio_joined_writes"] for r in rows),
        "consume_ratio": statistics.median(r["consume_ratio"] for r in rows),
        "consume_ratio_ack_each": statistics.median(r["consume_ratio_ack_each"] for r in rows),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--count", type=int, default=20_000, help="messages per pass of the per-message costs")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--window", type=int, default=1000, help="publishes in flight, both publishers")
    parser.add_argument("--prefetch", type=int, default=500, help="both consumers")
    parser.add_argument("--no-broker", action="store_true", help="per-message costs only")
    args = parser.parse_args(argv)
    catalog = load_catalog(ROOT / "contracts")
    consumer_bundle = bundle_from_document(export_bundle(catalog, service="accounting-service"), "accounting")
    publisher_bundle = bundle_from_document(export_bundle(catalog, service="billing-service"), "billing")
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average_before": os.getloadavg(),
        "per_message_us": per_message(consumer_bundle, args.count, args.repeat),
    }
    met = all(result["per_message_us"][name] < bound for name, bound in TARGETS_US.items())
    if not args.no_broker:
        result["throughput"] = throughput(
            consumer_bundle, publisher_bundle, args.messages, args.rounds, args.window, args.prefetch
        )
        met = met and result["throughput"]["publish_ratio"] >= TARGET_PUBLISH
        met = met and result["throughput"]["consume_ratio"] >= TARGET_CONSUME
    result["load_average_after"] = os.getloadavg()
    result["targets_met"] = met
    print(json.dumps(result))
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())

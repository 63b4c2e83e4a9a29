"""Throughput of the v1 -> v2 bridge against the raw publish rate of the same broker, in the same run.

    .venv/bin/python benchmarks/bridge_throughput.py [--messages 100000] [--rounds 1]

Each round, on the broker of ``$CONTRACT_RABBITMQ_URL`` (default 127.0.0.1:5672), with names under a
unique ``t-<uuid8>.`` prefix that are deleted afterwards:

1. **raw**: a plain pika ``BlockingConnection`` publishes N pre-encoded v1 messages without confirms to
   the v1 exchange, where they land in the bridge's tap queue (quorum). Rate = N / time until the queue
   holds all N (the client-side loop rate is printed too).
2. **blocking confirms**: the naive way, ``confirm_delivery()`` and one ``basic_publish`` per message
   (each waits for its confirm), into a separate quorum queue; ``--naive`` messages (default 3000).
3. **bridge**: ``Bridge.run()`` in drain mode migrates the N messages to the v2 exchange (one quorum queue
   bound); rate = messages from first consume to last acknowledgement (``BridgeReport.rate``).

Target: bridge >= 50% of raw. Prints one JSON line; exit 0 when the target is met, 1 when not.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pika

from contract_platform.amqp import basic_properties, encode_body, open_connection
from contract_platform.bridge import Bridge, BridgeConfig, prepare_tap
from contract_platform.bridge.translation import resolve_route
from contract_platform.catalog import load_catalog
from contract_platform.settings import rabbitmq_url

ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 0.5
SOURCE, TARGET = "billing.invoice-issued.v1", "billing.invoice-issued.v2"
FAMILY = ROOT / "contracts" / "billing" / "invoice-issued"


def prefixed_catalog(prefix: str, into: Path) -> Path:
    """A copy of the real catalogue whose invoice-issued contracts publish to ``<prefix>billing.events``."""
    root = into / "contracts"
    shutil.copytree(ROOT / "contracts", root)
    for major in ("v1", "v2"):
        file = root / "billing" / "invoice-issued" / major / "contract.yaml"
        file.write_text(file.read_text().replace("exchange: billing.events", f"exchange: {prefix}billing.events"))
    return root


def v1_messages(count: int) -> list[tuple[bytes, Any]]:
    """``count`` distinct valid v1 messages (body, properties), cycling through the v1 fixtures."""
    fixtures = sorted((FAMILY / "v1" / "fixtures" / "valid").glob("*.json"))
    templates = [json.loads(path.read_text()) for path in fixtures]
    messages = []
    for number in range(count):
        envelope = copy.deepcopy(templates[number % len(templates)])
        envelope["metadata"]["messageId"] = str(uuid.uuid4())
        envelope["payload"]["invoiceId"] = f"inv-{number + 1}"
        messages.append((encode_body(envelope), basic_properties(envelope)))
    return messages


def wait_for_count(channel: Any, queue: str, count: int, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while channel.queue_declare(queue, passive=True).method.message_count < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"{queue} did not reach {count} messages in {timeout:.0f} s")
        time.sleep(0.01)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the bridge's helper process, once it has exited
    return usage.ru_utime + usage.ru_stime


def one_round(url: str, messages: int, naive: int, prefetch: int, offload: bool) -> dict[str, Any]:
    prefix = f"t-{uuid.uuid4().hex[:8]}."
    workdir = Path(tempfile.mkdtemp(prefix="bridge-bench-"))
    catalog = load_catalog(prefixed_catalog(prefix, workdir))
    route = resolve_route(catalog, TARGET)
    exchange, source_key = route.source.transport.exchange, route.source.transport.routing_key
    tap, v2_queue, naive_queue = f"{prefix}bridge.{SOURCE}", f"{prefix}v2-consumer", f"{prefix}naive"
    connection = open_connection(url)
    channel = connection.channel()
    try:
        channel.exchange_declare(exchange, "topic", durable=True)
        for queue, key in ((v2_queue, route.target.transport.routing_key), (naive_queue, "naive")):
            channel.queue_declare(queue, durable=True, arguments={"x-queue-type": "quorum"})
            channel.queue_bind(queue, exchange, key)
        prepare_tap(connection, route, tap)
        batch = v1_messages(messages)

        start = time.perf_counter()
        for body, properties in batch:
            channel.basic_publish(exchange, source_key, body, properties)
        loop_seconds = time.perf_counter() - start
        wait_for_count(channel, tap, messages)
        raw_seconds = time.perf_counter() - start

        confirming = connection.channel()
        confirming.confirm_delivery()
        start = time.perf_counter()
        for body, properties in batch[:naive]:
            confirming.basic_publish(exchange, "naive", body, properties, mandatory=True)
        naive_seconds = time.perf_counter() - start
        confirming.close()

        config = BridgeConfig(url=url, tap_queue=tap, idle_timeout=2.0, prefetch=prefetch, offload=offload)
        cpu_before, helper_before = time.process_time(), _children_cpu()
        report = Bridge(catalog, route, config).run()
        bridge_cpu, helper_cpu = time.process_time() - cpu_before, _children_cpu() - helper_before
        wait_for_count(channel, v2_queue, messages)
        if report.published != messages or report.parked_total:
            raise SystemExit(f"the bridge did not publish every message: {report.as_dict()}")
        return {
            "raw_rate": round(messages / raw_seconds),
            "raw_client_loop_rate": round(messages / loop_seconds),
            "blocking_confirm_rate": round(naive / naive_seconds),
            "bridge_rate": round(report.rate),
            "bridge_elapsed_s": round(report.elapsed_seconds, 2),
            "bridge_cpu_us_per_message": round(bridge_cpu / messages * 1e6),
            "helper_cpu_us_per_message": round(helper_cpu / messages * 1e6),
            "ratio": round(report.rate / (messages / raw_seconds), 3),
        }
    finally:
        for queue in (tap, f"{tap}.parking-lot", v2_queue, naive_queue):
            channel.queue_delete(queue)
        channel.exchange_delete(exchange)
        connection.close()
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--naive", type=int, default=3000, help="messages for the blocking-confirm figure")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--prefetch", type=int, default=BridgeConfig.prefetch)
    parser.add_argument("--no-offload", action="store_true", help="translate in the bridge's own process")
    args = parser.parse_args(argv)
    url = rabbitmq_url()
    rounds = [
        one_round(url, args.messages, min(args.naive, args.messages), args.prefetch, not args.no_offload)
        for _ in range(args.rounds)
    ]
    ratio = statistics.median(r["ratio"] for r in rounds)
    figures = {
        "benchmark": "bridge_throughput",
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "messages": args.messages,
        "prefetch": args.prefetch,
        "offload": not args.no_offload,
        "pika": pika.__version__,
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "rounds": rounds,
        "median_ratio": ratio,
        "target_ratio": TARGET_RATIO,
        "target_met": ratio >= TARGET_RATIO,
    }
    sys.stdout.write(json.dumps(figures) + "\n")
    return 0 if figures["target_met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

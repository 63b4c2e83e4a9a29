"""Throughput of the v1 -> v2 bridge against the raw publish rate of the same broker, in the same run.

    .venv/bin/python benchmarks/bridge_throughput.py [--messages 40000] [--rounds 3] [--no-shovel]

Each round, on the broker of ``$CONTRACT_RABBITMQ_URL`` (default 127.0.0.1:5672), with names under a
unique ``t-<uuid8>.`` prefix that are deleted afterwards:

1. **raw**: a plain pika ``BlockingConnection`` publishes N pre-encoded v1 messages without confirms to
   the v1 exchange, where they land in the bridge's tap queue (quorum). Rate = N / time until the queue
   holds all N (the client-side loop rate is printed too).
2. **blocking confirms**: the naive way, ``confirm_delivery()`` and one ``basic_publish`` per message
   (each waits for its confirm), into a separate quorum queue; ``--naive`` messages (default 3000).
3. **bridge**: ``Bridge.run()`` in drain mode migrates the N messages to the v2 exchange (one quorum queue
   bound); rate = messages from first consume to last acknowledgement (``BridgeReport.rate``).
4. **Shovel** (issue 46's anchor), right after the bridge, same broker and virtual host: N messages of the same
   bodies and properties are pre-published into a quorum queue, then a dynamic shovel (``PUT
   /api/parameters/shovel/<vhost>/<name>``: ``amqp091`` queue to quorum queue, ``ack-mode: on-confirm``,
   ``src-delete-after: queue-length``) moves them; rate = N / time from the PUT until the destination holds N.

Targets: bridge >= 50% of raw (median of the rounds) and bridge >= 1.0x Shovel in a majority of the rounds.
Prints one JSON line; exit 0 when both are met, 1 when not. Shovel needs the ``rabbitmq_shovel`` and
``rabbitmq_shovel_management`` plugins: when ``rabbitmq-plugins`` is on this machine and they are not enabled,
the benchmark enables them, says so on stderr, and leaves them enabled.
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.parse import quote
from urllib.request import Request, urlopen

import pika

from contract_platform.amqp import basic_properties, encode_body, open_connection
from contract_platform.amqp.http import ManagementClient, management_client_for_url
from contract_platform.bridge import Bridge, BridgeConfig, prepare_tap
from contract_platform.bridge.translation import resolve_route
from contract_platform.catalog import load_catalog
from contract_platform.settings import rabbitmq_url

ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 0.5
SHOVEL_TARGET_RATIO = 1.0
SHOVEL_PLUGINS = ("rabbitmq_shovel", "rabbitmq_shovel_management")
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


def management_call(client: ManagementClient, method: str, path: str, body: dict[str, Any] | None = None) -> int:
    """The HTTP status of ``method /api/<path>`` (a 404 is an answer, not an error)."""
    token = base64.b64encode(":".join(client.auth).encode()).decode("ascii")
    request = Request(
        f"{client.base_url}/api/{path}",
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"},
    )
    try:
        with urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except HTTPError as exc:
        return exc.code


def ensure_shovel(client: ManagementClient) -> list[str]:
    """Make sure the broker runs the Shovel plugins; the plugins this call enabled (left enabled afterwards)."""
    enabled: list[str] = []
    if shutil.which("rabbitmq-plugins"):
        listed = subprocess.run(
            ["rabbitmq-plugins", "list", "-e", "-m"], capture_output=True, text=True, check=True
        ).stdout.split()
        enabled = [plugin for plugin in SHOVEL_PLUGINS if plugin not in listed]
        if enabled:
            subprocess.run(["rabbitmq-plugins", "enable", *enabled], capture_output=True, check=True)
            sys.stderr.write(f"enabled {', '.join(enabled)} on the local broker for this benchmark; left enabled\n")
    deadline = time.monotonic() + 30
    while client.get("shovels") is None:
        if time.monotonic() > deadline:
            raise SystemExit(
                f"Shovel is not running on the broker at {client.base_url}: enable it on the broker host with "
                f"rabbitmq-plugins enable {' '.join(SHOVEL_PLUGINS)}, or run with --no-shovel"
            )
        time.sleep(0.5)
    return enabled


def shovel_round(url: str, batch: list[tuple[bytes, Any]]) -> dict[str, Any]:
    """Shovel moving ``batch`` queue to queue on the same broker and vhost, ``ack-mode: on-confirm``."""
    prefix = f"t-{uuid.uuid4().hex[:8]}."
    source, destination, name = f"{prefix}shovel-src", f"{prefix}shovel-dest", f"{prefix}shovel"
    client = management_client_for_url(url)
    parameter = f"parameters/shovel/{quote(client.vhost, safe='')}/{quote(name, safe='')}"
    connection = open_connection(url)
    channel = connection.channel()
    try:
        for queue in (source, destination):
            channel.queue_declare(queue, durable=True, arguments={"x-queue-type": "quorum"})
        for body, properties in batch:
            channel.basic_publish("", source, body, properties)
        wait_for_count(channel, source, len(batch))
        definition = {
            "src-protocol": "amqp091",
            "src-uri": "amqp://",
            "src-queue": source,
            "src-delete-after": "queue-length",
            "dest-protocol": "amqp091",
            "dest-uri": "amqp://",
            "dest-queue": destination,
            "ack-mode": "on-confirm",
        }
        start = time.perf_counter()
        status = management_call(client, "PUT", parameter, {"value": definition})
        if status not in (200, 201, 204):
            raise SystemExit(f"the broker refused the shovel {name} ({status})")
        wait_for_count(channel, destination, len(batch))
        seconds = time.perf_counter() - start
        return {"shovel_rate": round(len(batch) / seconds), "shovel_elapsed_s": round(seconds, 2)}
    finally:
        management_call(client, "DELETE", parameter)  # 404 when it already deleted itself
        for queue in (source, destination):
            channel.queue_delete(queue)
        connection.close()


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
    parser.add_argument("--messages", type=int, default=40_000)
    parser.add_argument("--naive", type=int, default=3000, help="messages for the blocking-confirm figure")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of bridge then Shovel")
    parser.add_argument("--prefetch", type=int, default=BridgeConfig.prefetch)
    parser.add_argument("--no-offload", action="store_true", help="translate in the bridge's own process")
    parser.add_argument("--no-shovel", action="store_true", help="skip the Shovel anchor")
    args = parser.parse_args(argv)
    url = rabbitmq_url()
    enabled = [] if args.no_shovel else ensure_shovel(management_client_for_url(url))
    rounds = []
    for number in range(args.rounds):
        measured = one_round(url, args.messages, min(args.naive, args.messages), args.prefetch, not args.no_offload)
        if not args.no_shovel:
            measured.update(shovel_round(url, v1_messages(args.messages)))
            measured["bridge_to_shovel"] = round(measured["bridge_rate"] / measured["shovel_rate"], 3)
        rounds.append(measured)
        sys.stderr.write(f"round {number + 1}: {json.dumps(measured)}\n")
    ratio = statistics.median(r["ratio"] for r in rounds)
    at_shovel = sum(r["bridge_to_shovel"] >= SHOVEL_TARGET_RATIO for r in rounds) if not args.no_shovel else None
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
        "shovel_plugins_enabled_by_benchmark": enabled,
        "rounds_at_shovel": at_shovel,
        "shovel_target_met": None if at_shovel is None else at_shovel * 2 > len(rounds),
    }
    sys.stdout.write(json.dumps(figures) + "\n")
    return 0 if figures["target_met"] and figures["shovel_target_met"] is not False else 1


if __name__ == "__main__":
    raise SystemExit(main())

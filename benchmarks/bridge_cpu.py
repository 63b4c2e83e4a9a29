"""CPU per bridged message, in one process and without a broker: each side's share of the bridge's work.

    .venv/bin/python benchmarks/bridge_cpu.py [--messages 20000] [--repeat 5] [--profile relay|helper]

What one valid ``billing.invoice-issued.v1`` message (the catalogue's fixtures, distinct messageIds) costs
each of the bridge's two processes, measured as process CPU time (``time.process_time``), never wall time, so
that a loaded machine slows the figures down less than it would a rate:

* **helper** (``bridge/offload.py``): unpickle the batch of bodies, ``Translator.prepare`` (parse, depth
  check, migrate, v2 validation, encode the body and its AMQP properties), pickle the results;
* **relay** (``bridge/relay.py``): decode the delivery's frames as its connection does (Basic.Deliver,
  content header, body: ``amqp.encoded.DeferredPropertiesConnection``), pickle the bodies for the helper and
  unpickle its results, ``Translator.finish``, and marshal the publish's frames as its connection does.

Left out: the sockets, pika's IO loop, and the confirm and acknowledgement frames (batched, ``multiple``), so
``bridge_throughput.py``'s figures per message are higher. Each figure is the best of ``--repeat`` passes, in
microseconds. ``--profile`` prints cProfile's top functions of one side instead. Prints one JSON line.
Set ``PYTHONPATH`` to another checkout's ``plugins`` to measure that code with the same script.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import json
import os
import pickle
import platform
import pstats
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pika import frame, spec

from contract_platform.amqp import basic_properties, encode_body
from contract_platform.bridge.translation import Translator, resolve_route, target_validator
from contract_platform.catalog import load_catalog

try:
    from contract_platform.amqp import encoded
except ImportError:  # an older checkout (PYTHONPATH=<it>/plugins): its relay used pika's frames as they are
    encoded = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.timing import best_us  # noqa: E402

TARGET = "billing.invoice-issued.v2"
BATCH = 500  # RelaySettings.batch_limit
CHANNEL = 1


def v1_deliveries(translator: Translator, count: int) -> tuple[list[bytes], list[bytes]]:
    """``count`` distinct valid v1 messages: their bodies, and the frames the broker delivers each in."""
    source = translator.route.source
    templates = [f.document for f in source.fixtures if f.valid]
    bodies, wire = [], []
    for number in range(count):
        envelope = copy.deepcopy(templates[number % len(templates)])
        envelope["metadata"]["messageId"] = str(uuid.uuid4())
        envelope["payload"]["invoiceId"] = f"inv-{number + 1}"
        body = encode_body(envelope)
        deliver = spec.Basic.Deliver("ctag1.bench", number + 1, False, source.transport.exchange, "rk")
        frames = (
            frame.Method(CHANNEL, deliver).marshal(),
            frame.Header(CHANNEL, len(body), basic_properties(envelope)).marshal(),
            frame.Body(CHANNEL, body).marshal(),
        )
        bodies.append(body)
        wire.append(b"".join(frames))
    return bodies, wire


def _batches(items: list[Any]) -> list[list[Any]]:
    return [items[start : start + BATCH] for start in range(0, len(items), BATCH)]


def sides(translator: Translator, bodies: list[bytes], wire: list[bytes]) -> dict[str, Callable[[], Any]]:
    """The two processes' work on every message, as functions of nothing (each pass does all the messages)."""
    sent = [pickle.dumps(batch) for batch in _batches(bodies)]  # what the relay hands the helper
    results = [pickle.dumps([translator.prepare(body) for body in batch]) for batch in _batches(bodies)]
    publish = spec.Basic.Publish(exchange="x", routing_key="rk", mandatory=True)

    publish_method: Any = publish if encoded is None else encoded._EncodedMethod(publish)  # as the relay's connection

    def read_frame(data: bytes) -> Any:  # the relay's connection's own method: it reads only self._frame_buffer
        if encoded is None:
            return frame.decode_frame(data)
        return encoded.DeferredPropertiesConnection._read_frame(SimpleNamespace(_frame_buffer=data))  # type: ignore[arg-type]

    def helper() -> None:
        for message in sent:
            pickle.dumps([translator.prepare(body) for body in pickle.loads(message)])

    def relay() -> None:
        for batch, answer in zip(_batches(wire), results, strict=True):
            delivered = []
            for data in batch:  # the relay's connection reads method, header, body
                used, method = read_frame(data)
                more, header = read_frame(data[used:])
                _, body = read_frame(data[used + more :])
                delivered.append((method.method.delivery_tag, header.properties, body.fragment))
            pickle.dumps([body for _, _, body in delivered])
            for (_, properties, body), prepared in zip(delivered, pickle.loads(answer), strict=True):
                outgoing = translator.finish(prepared, properties, body)
                frame.Method(CHANNEL, publish_method).marshal()  # pika's _send_message
                frame.Header(CHANNEL, len(outgoing.body), outgoing.properties).marshal()
                frame.Body(CHANNEL, outgoing.body).marshal()

    return {"helper": helper, "relay": relay}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", choices=("relay", "helper"), default=None)
    args = parser.parse_args(argv)
    catalog = load_catalog(ROOT / "contracts")
    translator = Translator(resolve_route(catalog, TARGET), target_validator(catalog), "bench.parking-lot")
    bodies, wire = v1_deliveries(translator, args.messages)
    work = sides(translator, bodies, wire)
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(work[args.profile])
        pstats.Stats(profile, stream=sys.stdout).sort_stats("tottime").print_stats(25)
        return 0
    figures: dict[str, Any] = {
        "benchmark": "bridge_cpu",
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "messages": args.messages,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    figures |= {
        f"{side}_cpu_us_per_message": best_us(run, args.messages, args.repeat, time.process_time)
        for side, run in work.items()
    }
    sys.stdout.write(json.dumps(figures) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What the hostile-input bounds cost per message: ``RecordChecker.check`` of a valid archive record and the
bridge's ``Translator.prepare`` of a valid v1 message, in microseconds (best of ``--repeat`` passes, one core).

    .venv/bin/python benchmarks/bounds_cost.py
    PYTHONPATH=<a checkout without the bounds>/plugins .venv/bin/python benchmarks/bounds_cost.py   # compare

The records and messages are the catalogue's valid fixtures (``--catalog``, default ./contracts), cycled.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from contract_platform.bridge.translation import Translator, resolve_route, target_validator
from contract_platform.catalog import load_catalog
from contract_platform.envelope import amqp_properties
from contract_platform.validation import RecordChecker


def best_of(repeat: int, items: list[bytes], work: Callable[[bytes], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for item in items:
            work(item)
        best = min(best, (time.perf_counter() - started) / len(items) * 1e6)
    return round(best, 2)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", type=Path, default=Path("contracts"))
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)
    catalog = load_catalog(args.catalog)
    lines = []
    for contract in catalog:
        for fixture in (f for f in contract.fixtures if f.valid):
            properties = amqp_properties(fixture.document)
            record = {
                "exchange": contract.transport.exchange,
                "routingKey": contract.transport.routing_key,
                "receivedAt": "2026-07-01T10:15:32.120Z",
                "redelivered": False,
                "properties": {"messageId": properties["message_id"], "type": properties["type"],
                               "headers": properties["headers"]},
                "body": json.dumps(fixture.document),
                "bodyBase64": None,
            }  # fmt: skip
            lines.append(json.dumps(record).encode())
    route = resolve_route(catalog, "billing.invoice-issued.v2")
    bodies = [json.dumps(f.document).encode() for f in route.source.fixtures if f.valid]
    translator = Translator(route, target_validator(catalog), "parking-lot")
    checker = RecordChecker(catalog)
    figures = {
        "benchmark": "bounds_cost",
        "python": sys.version.split()[0],
        "unit": "microseconds per record / message, best of repeat, one core",
        "check_valid_record": best_of(args.repeat, (lines * args.count)[: args.count], checker.check),
        "translate_prepare": best_of(args.repeat, (bodies * args.count)[: args.count], translator.prepare),
    }
    sys.stdout.write(json.dumps(figures) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Per-record and per-message costs, in one process, on one core: where the time of the Spark archive
validation's record stage and of the dual-publish bridge's translate step goes.

    .venv/bin/python benchmarks/record_costs.py [--messages 40000] [--repeat 5]

Archive side (a generated archive of ``--messages`` records, the mix of ``archive_validation.py``):

* ``read``: inflating the gzipped splits and cutting them into lines (``validation.reading``);
* ``parse_record`` / ``parse_body``: ``orjson.loads`` of each valid record's line, then of its body;
* ``envelope_schema`` / ``payload_schema``: the jsonschema-rs pass alone, then with the format checks
  (``SchemaCheck.accepts``), per valid record;
* ``check_valid``: ``RecordChecker.check`` of a valid record, everything record-level included;
* ``check_all``: ``check`` averaged over every record (invalid ones go through the jsonschema library
  for their messages);
* ``worker_loop_gc_default`` / ``worker_loop``: what a Spark worker runs per record (read, check, Arrow
  batches: ``validation.arrow.check_split``), with Python's default garbage collection, and as the
  workers run it (compiled catalogue frozen, collections rare).

Bridge side (the catalogue's valid ``billing.invoice-issued.v1`` fixtures):

* ``migrate``: ``migrate_envelope`` per message; ``translate``: the bridge's whole translate step
  (parse, migrate, v2 validation, encode) per message.

Each figure is the best of ``--repeat`` timed passes, in microseconds. Prints one JSON line.
Set ``PYTHONPATH`` to another checkout's ``plugins`` to measure that code with the same script.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.generate_archive import ArchiveSpec, generate_archive  # noqa: E402
from benchmarks.timing import best_us  # noqa: E402

__all__ = ["main", "measure"]


def _each(function: Callable[[Any], Any], items: Sequence[Any]) -> None:
    """``function`` on every item, results dropped at once (as a worker drops them): no heap to collect."""
    deque(map(function, items), maxlen=0)


def _archive_costs(messages: int, repeat: int, catalog_dir: Path, work: Path) -> dict[str, float]:
    import orjson

    from contract_platform.catalog import load_catalog
    from contract_platform.validation import RecordChecker
    from contract_platform.validation.arrow import check_split
    from contract_platform.validation.reading import plan_splits, read_lines

    archive = generate_archive(work / "archive", catalog_dir, ArchiveSpec(messages=messages, defect_rate=0.02))
    splits = plan_splits([(str(p), p.stat().st_size) for p in sorted(archive.files)])
    lines = [line for split in splits for line in read_lines(split)]
    checker = RecordChecker(load_catalog(catalog_dir))

    def worker_loop() -> None:  # what a Spark worker runs: read, check, build the Arrow batches
        for split in splits:
            for _ in check_split(checker, split):
                pass

    split_gc_default = best_us(worker_loop, len(lines), repeat)
    valid = [line for line in lines if not checker.check(line).findings]
    records = [orjson.loads(line) for line in valid]
    bodies = [record["body"] for record in records]
    documents = [orjson.loads(body) for body in bodies]
    validator: Any = checker.validator
    envelope = validator._envelope
    payloads = [(validator._payload[d["metadata"]["messageType"]], d["payload"]) for d in documents]

    def every_line() -> None:
        for split in splits:
            for _ in read_lines(split):
                pass

    figures = {
        "records": len(lines),
        "valid_records": len(valid),
        "read": best_us(every_line, len(lines), repeat),
        "worker_loop_gc_default": split_gc_default,
    }
    gc.freeze()  # as the workers do once the catalogue is compiled
    thresholds = gc.get_threshold()
    gc.set_threshold(100_000, *thresholds[1:])
    try:
        figures |= {
            "parse_record": best_us(lambda: _each(orjson.loads, valid), len(valid), repeat),
            "parse_body": best_us(lambda: _each(orjson.loads, bodies), len(valid), repeat),
            "envelope_schema_pass": best_us(lambda: _each(envelope.validator.is_valid, documents), len(valid), repeat),
            "envelope_schema_with_formats": best_us(lambda: _each(envelope.accepts, documents), len(valid), repeat),
            "payload_schema_pass": best_us(
                lambda: _each(lambda cp: cp[0].validator.is_valid(cp[1]), payloads), len(valid), repeat
            ),
            "payload_schema_with_formats": best_us(
                lambda: _each(lambda cp: cp[0].accepts(cp[1]), payloads), len(valid), repeat
            ),
            "check_valid": best_us(lambda: _each(checker.check, valid), len(valid), repeat),
            "check_all": best_us(lambda: _each(checker.check, lines), len(lines), repeat),
            "worker_loop": best_us(worker_loop, len(lines), repeat),
        }
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
    return figures


def _bridge_costs(messages: int, repeat: int, catalog_dir: Path) -> dict[str, float]:
    import orjson

    from contract_platform.bridge.translation import Translator, resolve_route, target_validator
    from contract_platform.catalog import load_catalog
    from contract_platform.migration import migrate_envelope

    catalog = load_catalog(catalog_dir)
    route = resolve_route(catalog, "billing.invoice-issued.v2")
    translator = Translator(route, target_validator(catalog), "park")
    source = catalog.get("billing.invoice-issued.v1")
    assert source is not None
    envelopes = [f.document for f in source.fixtures if f.valid]
    bodies = [orjson.dumps(e) for e in envelopes]
    rounds = max(1, messages // len(bodies))

    def migrate() -> None:
        for _ in range(rounds):
            for envelope in envelopes:
                migrate_envelope(route.spec, envelope, route.target)

    def translate() -> None:
        for _ in range(rounds):
            for body in bodies:
                translator.prepare(body)

    count = rounds * len(bodies)
    return {"migrate": best_us(migrate, count, repeat), "translate": best_us(translate, count, repeat)}


def measure(
    messages: int, repeat: int, catalog_dir: Path = ROOT / "contracts", parts: Sequence[str] = ("archive", "bridge")
) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "benchmark": "record_costs",
        "date": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "python": platform.python_version(),
        "unit": "microseconds per record / message, best of repeat, one core",
    }
    if "archive" in parts:
        with tempfile.TemporaryDirectory(prefix="record-costs-") as work:
            figures["archive"] = _archive_costs(messages, repeat, catalog_dir, Path(work))
    if "bridge" in parts:
        figures["bridge"] = _bridge_costs(messages, repeat, catalog_dir)
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=40_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--catalog", type=Path, default=ROOT / "contracts")
    parser.add_argument("--only", choices=("archive", "bridge"), default=None, help="measure one side only")
    args = parser.parse_args(argv)
    parts = (args.only,) if args.only else ("archive", "bridge")
    print(json.dumps(measure(args.messages, args.repeat, args.catalog, parts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

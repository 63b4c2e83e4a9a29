"""What a generated Python type costs per message, beside the guard's dict path, on the invoice envelope.

    .venv/bin/python benchmarks/generated_models.py [--count 20000] [--repeat 5]

Per message (microseconds, best of ``--repeat`` passes over ``--count`` messages, one core), on the
catalogue's ``billing.invoice-issued.v2`` valid fixtures (an ~800-byte envelope), the model generated into
a temporary folder by ``export.models`` first:

- ``guard``: ``Guard.inspect`` of a delivery (size, parse, the envelope standard, properties against
  metadata, the payload schema): what a consumer pays today, the handler getting a dict;
- ``typed_decode``: ``InvoiceIssuedV2.model_validate`` of the envelope the guard accepted: what
  ``consumer.on(InvoiceIssuedV2, ...)`` adds to ``guard`` for a typed body;
- ``guard_then_typed``: both, as a consumer on a generated type runs them;
- ``typed_from_json``: ``model_validate_json`` of the body alone (pydantic's own parser, no guard), the floor
  of a typed read for the record;
- ``typed_dump``: ``model_dump(mode="json", by_alias=True, exclude_unset=True)``: what
  ``GuardedPublisher.publish(instance)`` adds before its own check.

Prints one JSON line with the figures, the date, the machine and the load average.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))

from contract_platform.catalog.loading import load_catalog  # noqa: E402
from contract_platform.client.bundle import bundle_from_document  # noqa: E402
from contract_platform.client.guard import Guard, Inspected  # noqa: E402
from contract_platform.client.testkit import delivery_of  # noqa: E402
from contract_platform.export.bundle import export_bundle  # noqa: E402
from contract_platform.export.models import export_models, write_models  # noqa: E402

INVOICE_V2 = "billing.invoice-issued.v2"


def generated_type(out: Path) -> Any:
    catalog = load_catalog(ROOT / "contracts")
    write_models(export_models(catalog, language="python", message_types=[INVOICE_V2]), out)
    spec = importlib.util.spec_from_file_location(
        "bench_models", out / "__init__.py", submodule_search_locations=[str(out)]
    )
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules["bench_models"] = package
    spec.loader.exec_module(package)
    return package.REGISTRY[INVOICE_V2]


def best_us(run: Callable[[Any], Any], items: list[Any], count: int, repeat: int) -> float:
    """Best of ``repeat`` passes of ``count`` calls over ``items`` (cycled), in microseconds per call."""
    passes = []
    for _ in range(repeat):
        started = time.perf_counter()
        for index in range(count):
            run(items[index % len(items)])
        passes.append((time.perf_counter() - started) / count * 1e6)
    return round(min(passes), 2)


def measure(count: int, repeat: int) -> dict[str, Any]:
    catalog = load_catalog(ROOT / "contracts")
    bundle = bundle_from_document(export_bundle(catalog, message_types=[INVOICE_V2]))
    guard = Guard(bundle, reads={INVOICE_V2})
    envelopes = [f.document for f in catalog.contracts[INVOICE_V2].fixtures if f.valid]
    deliveries = [delivery_of(e) for e in envelopes]
    with tempfile.TemporaryDirectory() as folder:
        model = generated_type(Path(folder) / "models")
        accepted = [guard.inspect(*d) for d in deliveries]
        assert all(isinstance(a, Inspected) for a in accepted)
        inspected = [a.envelope for a in accepted if isinstance(a, Inspected)]
        instances = [model.model_validate(e) for e in envelopes]

        def guard_then_typed(delivery: Any) -> Any:
            outcome = guard.inspect(*delivery)
            return model.model_validate(outcome.envelope)

        figures = {
            "guard": best_us(lambda d: guard.inspect(*d), deliveries, count, repeat),
            "typed_decode": best_us(model.model_validate, inspected, count, repeat),
            "guard_then_typed": best_us(guard_then_typed, deliveries, count, repeat),
            "typed_from_json": best_us(model.model_validate_json, [body for _, body in deliveries], count, repeat),
            "typed_dump": best_us(
                lambda i: i.model_dump(mode="json", by_alias=True, exclude_unset=True), instances, count, repeat
            ),
        }
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(),
        },
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "count": count,
        "repeat": repeat,
        "body_bytes": len(deliveries[0][1]),
        "us_per_message": figures,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.count, args.repeat)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

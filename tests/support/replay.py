"""Replay's test data: order.order-created.v1 made stricter, and archived traffic written from its fixture."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from benchmarks.generate_archive import archive_record

from contract_platform.catalog import load_catalog

__all__ = ["NOW", "OLD_PATTERN", "ORDER", "STRICTER", "tighten", "write_archive"]

ORDER = "order.order-created.v1"
FIXTURE = (
    Path(__file__).resolve().parents[2]
    / "contracts/order/order-created/v1/fixtures/valid/eur-open-order-from-quote-417.json"
)
OLD_PATTERN = "^ord-[0-9]+$"
STRICTER = "^ord-[0-9]{5,}$"  # every order number of five digits or more
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def tighten(catalog_dir: Path, *, compatibility: Any = "BACKWARD") -> tuple[Path, dict[str, Any]]:
    """The catalogue with order.order-created.v1 at 1.3.0 and a stricter orderId pattern; the 1.2.0 schema."""
    folder = catalog_dir / "order" / "order-created" / "v1"
    schema_file = folder / "payload.schema.json"
    old = json.loads(schema_file.read_text(encoding="utf-8"))
    new = json.loads(schema_file.read_text(encoding="utf-8"))
    assert new["properties"]["orderId"]["pattern"] == OLD_PATTERN
    new["properties"]["orderId"]["pattern"] = STRICTER
    schema_file.write_text(json.dumps(new, indent=2), encoding="utf-8")
    contract_file = folder / "contract.yaml"
    raw = yaml.safe_load(contract_file.read_text(encoding="utf-8"))
    raw["version"], raw["compatibility"] = "1.3.0", compatibility
    contract_file.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return catalog_dir, old


def write_archive(root: Path, catalog_dir: Path, numbers: list[int], day: datetime = NOW) -> Path:
    """order.events/date=<day>/part-0000.jsonl: one valid order.order-created.v1 message per order number."""
    contract = load_catalog(catalog_dir).get(ORDER)
    assert contract is not None
    template = json.loads(FIXTURE.read_text(encoding="utf-8"))
    folder = root / contract.transport.exchange / f"date={day.date().isoformat()}"
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for number in numbers:
        envelope = json.loads(json.dumps(template))
        envelope["metadata"]["messageId"] = str(uuid.uuid4())
        envelope["metadata"]["partitionKey"] = envelope["payload"]["orderId"] = f"ord-{number}"
        lines.append(json.dumps(archive_record(contract, envelope, day.isoformat())))
    (folder / "part-0000.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root

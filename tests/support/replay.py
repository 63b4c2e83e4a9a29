"""Replay's test data: order.order-created.v1 made stricter, and archived traffic written from its fixture."""

from __future__ import annotations

import base64
import gzip
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from benchmarks.generate_archive import archive_record

from contract_platform.catalog import load_catalog
from contract_platform.evidence import Registry

__all__ = [
    "NOW",
    "OLD_PATTERN",
    "ORDER",
    "STRICTER",
    "add_replay",
    "check_replay_args",
    "mixed_archive",
    "tighten",
    "write_archive",
    "write_order_day",
]

ORDER = "order.order-created.v1"
FIXTURE = (
    Path(__file__).resolve().parents[2]
    / "contracts/order/order-created/v1/fixtures/valid/eur-open-order-from-quote-417.json"
)
OLD_PATTERN = "^ord-[0-9]+$"
STRICTER = "^ord-[0-9]{5,}$"  # every order number of five digits or more
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def add_replay(registry: Registry, version: str, verdict: str, figures: dict[str, Any], at: datetime, run: str) -> None:
    """A ``replay`` evidence of ``ORDER`` at ``version``, as ``check --replay`` records one."""
    registry.add_evidence(
        ORDER, contract_version=version, kind="replay", verdict=verdict, figures=figures, run_id=run, collected_at=at
    )


def check_replay_args(catalog_dir: Path | str, url: str, archive: Path | str) -> list[str]:
    """``contractctl check``'s arguments replaying ``archive`` for the catalogue, in-flight messages left out, as JSON."""
    return [
        "check",
        str(catalog_dir),
        "--registry-url",
        url,
        "--replay",
        str(archive),
        "--no-in-flight",
        "--format",
        "json",
    ]


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


def write_order_day(root: Path, catalog_dir: Path, day: datetime, count: int, keys: int = 5) -> Path:
    """A day of order.order-created.v1 traffic as the archiver writes it: ``count`` messages over ``keys`` orders,
    each order's ``aggregateVersion`` rising in arrival order, one second apart from ``day``'s noon on, in
    ``<exchange>/date=<day>/part-0001.jsonl``. Valid for archive validation and for the envelope quality suite
    (several messages per partition key)."""
    contract = load_catalog(catalog_dir).get(ORDER)
    assert contract is not None
    template = json.loads(FIXTURE.read_text(encoding="utf-8"))
    start = day.replace(hour=12, minute=0, second=0, microsecond=0)
    folder = root / contract.transport.exchange / f"date={start.date().isoformat()}"
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for n in range(count):
        envelope = json.loads(json.dumps(template))
        envelope["metadata"]["messageId"] = str(uuid.uuid4())
        envelope["metadata"]["partitionKey"] = envelope["payload"]["orderId"] = f"ord-{30_000 + n % keys}"
        envelope["payload"]["aggregateVersion"] = n // keys + 1
        received = (start + timedelta(seconds=n)).isoformat()
        lines.append(json.dumps(archive_record(contract, envelope, received)))
    (folder / "part-0001.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def _order_records(catalog_dir: Path, numbers: list[Any], day: datetime) -> list[dict[str, Any]]:
    contract = load_catalog(catalog_dir).get(ORDER)
    assert contract is not None
    template = json.loads(FIXTURE.read_text(encoding="utf-8"))
    records = []
    for number in numbers:
        envelope = json.loads(json.dumps(template))
        envelope["metadata"]["messageId"] = f"m-{day.date().isoformat()}-{number}"
        envelope["payload"]["orderId"] = f"ord-{number}" if isinstance(number, int) else number
        records.append(archive_record(contract, envelope, day.isoformat()))
    return records


def _lines(records: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(record).encode("utf-8") + b"\n" for record in records)


def mixed_archive(root: Path, catalog_dir: Path, outside: Path) -> Path:
    """order.events traffic of every kind replay meets, over three days of the 7-day window to ``NOW``.

    Against ``tighten``'s stricter orderId: 73 replayed (61 valid for both versions, one of them a body
    over 1 MiB; 10 rejected by the stricter one only, one of them a CRLF line; 2 invalid for both,
    already_invalid), 2 unreadable (a body that is not JSON, one that is not UTF-8), and lines that
    are no record of the type (a line that is not JSON; a gzip file cut short inside its last record,
    whose damage is one line of its own). Left out, each holding rejected records so that reading
    them would show: hidden and ``_temporary`` files, a ``.txt`` and an upper-case ``.JSONL`` file, a
    partition outside the window, a link that leads nowhere. The partition of ``NOW`` - 2 days is a
    symbolic link to ``outside`` (read, as Spark reads it).
    """
    yesterday, today, before = NOW - timedelta(days=1), NOW, NOW - timedelta(days=2)
    exchange = root / "order.events"
    first = exchange / f"date={yesterday.date().isoformat()}"
    first.mkdir(parents=True)
    records = _order_records(catalog_dir, [10_000 + n for n in range(30)] + [100, 101, 102, 103, 104], yesterday)
    records += _order_records(catalog_dir, ["ORD-X", "ord-"], yesterday)  # invalid for both versions
    broken = _order_records(catalog_dir, [20_001, 20_002, 20_003], yesterday)
    broken[0]["body"] = broken[0]["body"][:-7]  # not JSON
    raw = b"\xff\xfe" + broken[1]["body"].encode("utf-8")
    broken[1].update(body=None, bodyBase64=base64.b64encode(raw).decode("ascii"))  # not UTF-8
    broken[2]["body"] = broken[2]["body"] + " " * (1_048_577 - len(broken[2]["body"]))  # over 1 MiB
    crlf = _lines(_order_records(catalog_dir, [105], yesterday)).replace(b"\n", b"\r\n")
    (first / "part-0000.jsonl").write_bytes(_lines(records) + b"not json at all\n" + _lines(broken) + crlf)

    second = exchange / f"date={today.date().isoformat()}"
    (second / "_temporary").mkdir(parents=True)
    with gzip.open(second / "part-0001.jsonl.gz", "wb") as handle:
        handle.write(_lines(_order_records(catalog_dir, [30_000 + n for n in range(20)] + [106, 107], today)))
    whole = gzip.compress(_lines(_order_records(catalog_dir, [40_000 + n for n in range(8)] + [108], today)))
    (second / "part-0002.jsonl.gz").write_bytes(whole[: len(whole) - 30])  # cut short inside its member
    hidden = _lines(_order_records(catalog_dir, [1, 2, 3], today))
    for name in (".part-0003.jsonl", "_temporary/part-0004.jsonl", "notes.txt", "PART-0005.JSONL"):
        (second / name).write_bytes(hidden)
    (second / "gone.jsonl").symlink_to(outside / "no-such-file.jsonl")

    linked = outside / "partition"
    linked.mkdir(parents=True)
    (linked / "part-0006.jsonl").write_bytes(_lines(_order_records(catalog_dir, [50_000, 50_001, 109, 110], before)))
    (exchange / f"date={before.date().isoformat()}").symlink_to(linked, target_is_directory=True)
    old = exchange / f"date={(NOW - timedelta(days=10)).date().isoformat()}"
    old.mkdir()
    (old / "part-0007.jsonl").write_bytes(hidden)
    return root

"""Archive traffic for the envelope quality tests: clean deliveries built from the catalogue's valid
fixtures (fresh ids, consistent times, several messages per partition key), defects applied one
delivery at a time, and an archive writer (docs/design.md#archive-record: records and folders).

Imported by the quality tests under tests/spark and tests/airflow as ``tests.unit.quality.quality_traffic``.
"""

from __future__ import annotations

import copy
import json
import random
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from contract_platform.catalog.model import Contract

START = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)


def iso(moment: datetime, *, millis: bool = False) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds" if millis else "seconds").replace("+00:00", "Z")


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text)


@dataclass
class Delivery:
    """One archived delivery: the envelope (body) and what the archiver saw around it."""

    envelope: dict[str, Any]
    exchange: str
    routing_key: str
    received_at: str
    redelivered: bool = False
    properties: dict[str, Any] = field(default_factory=lambda: {"contentType": "application/json", "deliveryMode": 2})

    @property
    def metadata(self) -> dict[str, Any]:
        return self.envelope["metadata"]

    @property
    def message_id(self) -> str:
        return self.metadata["messageId"]

    def record(self) -> dict[str, Any]:
        meta = self.metadata
        properties = {
            "messageId": meta.get("messageId"),
            "correlationId": meta.get("correlationId"),
            "type": meta.get("messageType"),
            "contentEncoding": "utf-8",
            "timestamp": int(parse(meta["publishedAt"]).timestamp()),
            "headers": {"schema-version": meta.get("schemaVersion")},
            **self.properties,
        }
        return {
            "exchange": self.exchange,
            "routingKey": self.routing_key,
            "receivedAt": self.received_at,
            "redelivered": self.redelivered,
            "properties": {k: v for k, v in properties.items() if v is not None},
            "body": json.dumps(self.envelope, separators=(",", ":")),
            "bodyBase64": None,
        }

    def redelivery(self, **changes: Any) -> Delivery:
        """The same delivery again, marked redelivered (``changes`` go into its metadata)."""
        again = copy.deepcopy(self)
        again.redelivered = True
        again.metadata.update(changes)
        return again


def clean_traffic(
    contract: Contract, count: int, *, per_key: int = 4, start: datetime = START, seed: int = 0
) -> list[Delivery]:
    """``count`` deliveries of ``contract``: its valid fixtures in turn, fresh ids, ordered consistent times.

    Every ``per_key`` consecutive messages share a partition key (with aggregateVersion 1..per_key).
    """
    rng = random.Random(f"{contract.message_type}:{seed}")
    fixtures = [fixture.document for fixture in contract.fixtures if fixture.valid]
    assert fixtures, f"{contract.message_type} has no valid fixtures"

    def new_id() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    deliveries = []
    for i in range(count):
        envelope = copy.deepcopy(fixtures[i // per_key % len(fixtures)])  # one entity per key
        meta, payload = envelope["metadata"], envelope["payload"]
        occurred = start + timedelta(seconds=30 * i)
        meta.update(
            messageId=new_id(),
            correlationId=new_id(),
            traceId=f"{rng.getrandbits(128):032x}",
            occurredAt=iso(occurred),
            publishedAt=iso(occurred + timedelta(seconds=1)),
        )
        if "causationId" in meta:
            meta["causationId"] = new_id()
        if "partitionKey" in meta:
            meta["partitionKey"] = f"{meta['partitionKey']}-{i // per_key:04d}"
        if "aggregateVersion" in payload:
            payload["aggregateVersion"] = i % per_key + 1
        deliveries.append(
            Delivery(
                envelope=envelope,
                exchange=contract.transport.exchange,
                routing_key=contract.transport.routing_key,
                received_at=iso(occurred + timedelta(seconds=1, milliseconds=250), millis=True),
            )
        )
    return deliveries


# -- defects: each changes one delivery ---------------------------------------------------------


def occurred_after_published(seconds: int) -> Callable[[Delivery], None]:
    def apply(delivery: Delivery) -> None:
        delivery.metadata["occurredAt"] = iso(parse(delivery.metadata["publishedAt"]) + timedelta(seconds=seconds))

    return apply


def received_before_published(seconds: int) -> Callable[[Delivery], None]:
    def apply(delivery: Delivery) -> None:
        published = parse(delivery.metadata["publishedAt"])
        delivery.received_at = iso(published - timedelta(seconds=seconds), millis=True)

    return apply


def without(name: str) -> Callable[[Delivery], None]:
    return lambda delivery: delivery.metadata.pop(name)


def metadata(**values: Any) -> Callable[[Delivery], None]:
    return lambda delivery: delivery.metadata.update(values)


def published_in_local_time(delivery: Delivery) -> None:
    """The same instant written with a +02:00 offset: not UTC, yet the time order holds."""
    published = parse(delivery.metadata["publishedAt"]).astimezone(timezone(timedelta(hours=2)))
    delivery.metadata["publishedAt"] = published.isoformat(timespec="seconds")


def upper_case_trace_id(delivery: Delivery) -> None:
    delivery.metadata["traceId"] = delivery.metadata["traceId"].upper()


def routing_key_with_entity_id(delivery: Delivery) -> None:
    delivery.routing_key = f"{delivery.routing_key}.{delivery.metadata['partitionKey']}"


def amqp(**properties: Any) -> Callable[[Delivery], None]:
    """Change AMQP properties; a value of None removes the property."""

    def apply(delivery: Delivery) -> None:
        for name, value in properties.items():
            if value is None:
                delivery.properties.pop(name, None)
            else:
                delivery.properties[name] = value

    return apply


def oversize(budget: int) -> Callable[[Delivery], None]:
    def apply(delivery: Delivery) -> None:
        delivery.envelope["payload"]["notes"] = "x" * (budget + 1)

    return apply


def apply_defects(deliveries: list[Delivery], defects: dict[int, Callable[[Delivery], None]]) -> None:
    for index, defect in defects.items():
        defect(deliveries[index])


# -- the archive --------------------------------------------------------------------------------


def write_archive(root: Path, deliveries: Iterable[Delivery], *, raw_lines: dict[str, list[str]] | None = None) -> Path:
    """``<root>/<exchange>/date=YYYY-MM-DD/part-0000.jsonl``; ``raw_lines`` adds lines as they are, per exchange."""
    files: dict[Path, list[str]] = {}
    for delivery in deliveries:
        day = parse(delivery.received_at).date().isoformat()
        path = root / delivery.exchange / f"date={day}" / "part-0000.jsonl"
        files.setdefault(path, []).append(json.dumps(delivery.record(), separators=(",", ":")))
    for exchange, lines in (raw_lines or {}).items():
        files.setdefault(root / exchange / f"date={START.date().isoformat()}" / "part-0001.jsonl", []).extend(lines)
    for path, lines in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root

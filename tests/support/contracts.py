"""Contracts and envelopes built in code (not read from contracts/), for tests that need one shape changed.

``build_contract()`` is a valid ``billing.invoice-issued`` major with neutral defaults; every field of
``Contract`` can be replaced by keyword. ``prefix`` puts the exchange and the consumer queues under a
test's own names on the shared broker; ``consumers`` names the reading services (or gives
``Consumer`` objects as they are).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import uuid
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from contract_platform.catalog.model import (
    Catalog,
    Consumer,
    Contract,
    Kind,
    Owner,
    Pii,
    Retention,
    Status,
    TopologySettings,
    Transport,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
ENVELOPE_SCHEMA_FILE = REPO_ROOT / "contracts" / "envelope" / "envelope.v1.schema.json"
V1 = "billing.invoice-issued.v1"
V2 = "billing.invoice-issued.v2"
# A moment halfway through ``migrating_contract``'s migration: v1 deprecated, before its sunset.
DURING_MIGRATION = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)

# The payload of the invoice examples in docs/design.md: an id, an amount with two decimals, a currency.
INVOICE_PAYLOAD_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["invoiceId", "amount", "currency"],
    "properties": {
        "invoiceId": {"type": "string", "pattern": "^inv-[0-9]+$"},
        "amount": {"type": "string", "pattern": "^[0-9]+\\.[0-9]{2}$"},
        "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
    },
}


def build_contract(
    message_type: str = V1,
    *,
    prefix: str = "",
    consumers: Iterable[str | Consumer] = (),
    queue_type: str = "quorum",
    retry_delays: tuple[timedelta, ...] | None = None,
    **changes: Any,
) -> Contract:
    """One contract version: ``<major>.0.0``, active, no PII, retention 14d/14d/90d, a permissive payload.

    ``consumers``: a service name ``svc`` reads ``<prefix>svc.<messageType>``; a ``Consumer`` is kept
    as given. ``retry_delays`` defaults to ``TopologySettings``' own; ``changes`` replace any field.
    """
    major = int(message_type.rsplit(".v", 1)[1])
    topology = TopologySettings(queue_type=queue_type)
    if retry_delays is not None:
        topology = replace(topology, retry_delays=retry_delays)
    contract = Contract(
        message_type=message_type,
        kind=Kind.EVENT,
        version=f"{major}.0.0",
        status=Status.ACTIVE,
        description="An invoice has been issued and is visible to downstream systems.",
        owner=Owner(team="billing-platform", service="billing-service", contact="billing-platform@example.com"),
        transport=Transport(exchange=f"{prefix}billing.events", routing_key=f"billing.invoice.issued.v{major}"),
        compatibility="BACKWARD",
        compatibility_policy="strict",
        idempotency_key="/metadata/messageId",
        pii=Pii(contains_pii=False, fields=()),
        retention=Retention(queue=timedelta(days=14), dlq=timedelta(days=14), archive=timedelta(days=90)),
        directory=Path("/catalogue", prefix, "billing", "invoice-issued", f"v{major}"),
        payload_schema={"type": "object"},
        consumers=tuple(
            c if isinstance(c, Consumer) else Consumer(c, f"{prefix}{c}.{message_type}") for c in consumers
        ),
        topology=topology,
    )
    return replace(contract, **changes)


def migrating_contract(message_type: str = V1, **changes: Any) -> Contract:
    """A major of ``billing.invoice-issued`` halfway through the v1 -> v2 migration, as retirement sees it.

    v1 is deprecated, superseded by v2, sunset 2027-03-01; v2 is active. Both are read by the
    accounting and notification services, carry PII (``/payload/billingEmail``), keep dead letters
    10 days and retry once after 30 s.
    """
    major = int(message_type.rsplit(".v", 1)[1])
    defaults: dict[str, Any] = {
        "status": Status.DEPRECATED if major == 1 else Status.ACTIVE,
        "owner": Owner(team="billing-platform", service="billing-service"),
        "pii": Pii(contains_pii=True, fields=("/payload/billingEmail",)),
        "retention": Retention(queue=timedelta(days=14), dlq=timedelta(days=10), archive=timedelta(days=90)),
        "superseded_by": V2 if major == 1 else None,
        "sunset": date(2027, 3, 1) if major == 1 else None,
    }
    return build_contract(
        message_type,
        consumers=("accounting-service", "notification-service"),
        retry_delays=(timedelta(seconds=30),),
        **(defaults | changes),
    )


def catalog_of(*contracts: Contract, root: Path = Path("/catalogue"), envelope_schema: bool = False) -> Catalog:
    """A catalogue of just these contracts; ``envelope_schema``: with the real envelope schema (to validate)."""
    schema = json.loads(ENVELOPE_SCHEMA_FILE.read_text()) if envelope_schema else {}
    return Catalog(root=root, envelope_schema=schema, contracts={c.message_type: c for c in contracts})


def invoice_envelope(number: int = 0, message_type: str = V1, **payload: Any) -> dict[str, Any]:
    """A valid envelope for ``INVOICE_PAYLOAD_SCHEMA``: a fresh messageId, invoice ``inv-<10000 + number>``;
    keyword arguments replace payload fields."""
    invoice = f"inv-{10000 + number}"
    return {
        "metadata": {
            "messageId": str(uuid.uuid4()),
            "messageType": message_type,
            "schemaVersion": 1,
            "messageVersion": f"{message_type.rsplit('.v', 1)[1]}.0.0",
            "producer": "billing-service",
            "producerVersion": "12.4.0",
            "occurredAt": "2026-07-01T10:15:30Z",
            "publishedAt": "2026-07-01T10:15:31Z",
            "correlationId": "8c1d6f0e-3b2a-4f5e-9d7c-1a2b3c4d5e6f",
            "traceId": "4bf92f3577b34da6a3ce929d0e0e4736",
            "tenantId": "tnt-northwind",
            "partitionKey": invoice,
        },
        "payload": {"invoiceId": invoice, "amount": "129.95", "currency": "EUR"} | payload,
    }


def with_prefix(contract: Contract, prefix: str) -> Contract:
    """``contract`` with its exchange and consumer queues under ``prefix`` (the messageType stays canonical)."""
    transport = replace(contract.transport, exchange=f"{prefix}{contract.transport.exchange}")
    consumers = tuple(replace(c, queue=f"{prefix}{c.queue}") for c in contract.consumers)
    return replace(contract, transport=transport, consumers=consumers)


def prefixed_catalog(target: Path, prefix: str, source: Path = REPO_ROOT / "contracts") -> Path:
    """A copy of the catalogue at ``target`` with every exchange and consumer queue name under ``prefix``,
    so a test owns its topology on the shared broker (``prefix`` includes its separator: ``t-1a2b3c4d.``)."""
    shutil.copytree(source, target)
    for path in target.glob("*/*/v*/contract.yaml"):
        text = re.sub(r"exchange: ([a-z.]+)", rf"exchange: {prefix}\1", path.read_text())
        # consumer queues (a dotted name), not retention.queue (a duration)
        path.write_text(re.sub(r"queue: ([a-z0-9-]+\.[a-z0-9.-]+)", rf"queue: {prefix}\1", text))
    return target


def family_copy(target: Path, source: Path = REPO_ROOT / "contracts") -> Path:
    """A catalogue at ``target`` of the billing.invoice-issued family alone (and the envelope schema):
    what the retirement audit needs, whatever else the real catalogue holds today."""
    shutil.copytree(source / "envelope", target / "envelope")
    shutil.copytree(source / "billing" / "invoice-issued", target / "billing" / "invoice-issued")
    return target


def schema_with(schema: dict[str, Any], *path: Any, value: Any) -> dict[str, Any]:
    """A deep copy of ``schema`` whose value at ``path`` (keys and indexes) is ``value``."""
    out = copy.deepcopy(schema)
    node = out
    for token in path[:-1]:
        node = node[token]
    node[path[-1]] = value
    return out


def write_contract(
    root: Path, message_type: str, *, version: str, description: str, routing_key: str, schema: dict[str, Any]
) -> Path:
    """The folder of an active event ``message_type`` under catalogue ``root``: its contract.yaml (the domain's
    team owns it), ``schema`` as its payload schema and empty fixture folders."""
    domain, name, major = message_type.split(".")
    folder = root / domain / name / major
    (folder / "fixtures" / "valid").mkdir(parents=True)
    (folder / "fixtures" / "invalid").mkdir(parents=True)
    contract = {
        "messageType": message_type,
        "kind": "event",
        "version": version,
        "status": "active",
        "description": description,
        "owner": {"team": domain, "service": f"{domain}-service", "contact": f"{domain}@example.com"},
        "transport": {"exchange": f"{domain}.events", "routingKey": routing_key},
        "compatibility": "BACKWARD",
        "idempotencyKey": "/metadata/messageId",
        "pii": {"containsPii": False, "fields": []},
        "retention": {"queue": "14d", "dlq": "14d", "archive": "90d"},
    }
    (folder / "contract.yaml").write_text(yaml.safe_dump(contract, sort_keys=False))
    (folder / "payload.schema.json").write_text(json.dumps(schema, indent=2))
    return folder

"""Contracts built in code for the retirement unit tests (imported by name: module names must be unique)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

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

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
V1 = "billing.invoice-issued.v1"
V2 = "billing.invoice-issued.v2"


def build_contract(message_type: str = V1, **changes: Any) -> Contract:
    major = int(message_type.rsplit(".v", 1)[1])
    contract = Contract(
        message_type=message_type,
        kind=Kind.EVENT,
        version=f"{major}.0.0",
        status=Status.DEPRECATED if major == 1 else Status.ACTIVE,
        description="An invoice has been issued and is visible to downstream systems.",
        owner=Owner(team="billing-platform", service="billing-service"),
        transport=Transport(exchange="billing.events", routing_key=f"billing.invoice.issued.v{major}"),
        compatibility="BACKWARD",
        compatibility_policy="strict",
        idempotency_key="/metadata/messageId",
        pii=Pii(contains_pii=True, fields=("/payload/billingEmail",)),
        retention=Retention(queue=timedelta(days=14), dlq=timedelta(days=10), archive=timedelta(days=90)),
        directory=Path("/catalogue/billing/invoice-issued") / f"v{major}",
        payload_schema={"type": "object"},
        consumers=(
            Consumer("accounting-service", f"accounting-service.{message_type}"),
            Consumer("notification-service", f"notification-service.{message_type}"),
        ),
        superseded_by=V2 if major == 1 else None,
        sunset=date(2027, 3, 1) if major == 1 else None,
        topology=TopologySettings(retry_delays=(timedelta(seconds=30),)),
    )
    return replace(contract, **changes)


def catalog_of(*contracts: Contract) -> Catalog:
    return Catalog(root=Path("/catalogue"), envelope_schema={}, contracts={c.message_type: c for c in contracts})

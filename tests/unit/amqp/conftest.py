"""A contract builder for the AMQP unit tests (no broker needed)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from contract_platform.catalog.model import (
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

PAYLOAD_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["invoiceId", "amount"],
    "properties": {"invoiceId": {"type": "string"}, "amount": {"type": "string"}},
}


@pytest.fixture
def make_contract() -> Callable[..., Contract]:
    def build(
        *,
        queues: tuple[str, ...] = ("accounting-service.billing.invoice-issued.v1",),
        queue_type: str = "quorum",
        retry_delays: tuple[timedelta, ...] = (timedelta(seconds=30), timedelta(minutes=5)),
        **overrides: Any,
    ) -> Contract:
        fields: dict[str, Any] = {
            "message_type": "billing.invoice-issued.v1",
            "kind": Kind.EVENT,
            "version": "1.2.0",
            "status": Status.ACTIVE,
            "description": "An invoice has been issued.",
            "owner": Owner(team="billing-platform", service="billing-service"),
            "transport": Transport(exchange="billing.events", routing_key="billing.invoice.issued.v1"),
            "compatibility": "BACKWARD",
            "compatibility_policy": "strict",
            "idempotency_key": "/metadata/messageId",
            "pii": Pii(contains_pii=False, fields=()),
            "retention": Retention(queue=timedelta(days=14), dlq=timedelta(days=14), archive=timedelta(days=90)),
            "directory": Path("contracts/billing/invoice-issued/v1"),
            "payload_schema": PAYLOAD_SCHEMA,
            "consumers": tuple(Consumer(q.split(".")[0], q) for q in queues),
            "topology": TopologySettings(queue_type=queue_type, retry_delays=retry_delays),
        }
        return Contract(**(fields | overrides))

    return build

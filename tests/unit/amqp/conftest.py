"""The AMQP unit tests' contract: ``tests.support.contracts.build_contract`` as a fixture (no broker needed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from tests.support.contracts import build_contract

from contract_platform.catalog.model import Contract

PAYLOAD_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["invoiceId", "amount"],
    "properties": {"invoiceId": {"type": "string"}, "amount": {"type": "string"}},
}


@pytest.fixture
def make_contract() -> Callable[..., Contract]:
    """v1.2.0 of billing.invoice-issued.v1, read by the accounting service; ``queues`` names the consumer queues."""

    def build(
        *, queues: tuple[str, ...] = ("accounting-service.billing.invoice-issued.v1",), **overrides: Any
    ) -> Contract:
        defaults = {"version": "1.2.0", "payload_schema": PAYLOAD_SCHEMA}
        return build_contract(consumers=[queue.split(".")[0] for queue in queues], **(defaults | overrides))

    return build

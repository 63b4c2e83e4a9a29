"""Hand-built archive records (docs/design.md#archive-record) from the catalogue's valid fixtures."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from contract_platform.catalog import Catalog
from contract_platform.envelope import amqp_properties
from contract_platform.validation import RecordChecker


def envelope_of(catalog: Catalog, message_type: str, index: int = 0) -> dict[str, Any]:
    contract = catalog.get(message_type)
    assert contract is not None
    return copy.deepcopy([f.document for f in contract.fixtures if f.valid][index])


def record_of(catalog: Catalog, envelope: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """The archive record a correct publisher and archiver would produce, then ``changes``."""
    contract = catalog.get(envelope["metadata"]["messageType"])
    props = amqp_properties(envelope)
    record = {
        "exchange": contract.transport.exchange if contract else "billing.events",
        "routingKey": contract.transport.routing_key if contract else "billing.unknown.v1",
        "receivedAt": "2026-07-01T10:15:32.120Z",
        "redelivered": False,
        "properties": {
            "messageId": props["message_id"],
            "correlationId": props["correlation_id"],
            "type": props["type"],
            "contentType": "application/json",
            "contentEncoding": "utf-8",
            "deliveryMode": 2,
            "timestamp": props["timestamp"],
            "headers": props["headers"],
        },
        "body": json.dumps(envelope),
        "bodyBase64": None,
    }
    record.update(changes)
    return record


@pytest.fixture(scope="session")
def checker(catalog: Catalog) -> RecordChecker:
    return RecordChecker(catalog)


@pytest.fixture()
def envelope(catalog: Catalog) -> Callable[..., dict[str, Any]]:
    return lambda message_type="order.order-created.v1", index=0: envelope_of(catalog, message_type, index)


@pytest.fixture()
def record(catalog: Catalog) -> Callable[..., dict[str, Any]]:
    return lambda envelope, **changes: record_of(catalog, envelope, **changes)

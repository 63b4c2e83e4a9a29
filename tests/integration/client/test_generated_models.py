"""Generated models on the real broker: a guarded consumer registered with a generated type and no decode of
its own gets typed messages, published as generated instances; the guard still judges every delivery first."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.support.broker import drain
from tests.support.models import generated_package

from contract_platform.amqp import open_connection
from contract_platform.amqp.connection import close_quietly
from contract_platform.catalog.model import Catalog
from contract_platform.client import ContractViolation, GuardedConsumer, GuardedPublisher, Message, StopReason

pytestmark = pytest.mark.integration

INVOICE_V1, INVOICE_V2 = "billing.invoice-issued.v1", "billing.invoice-issued.v2"
Q2 = "accounting-service.billing.invoice-issued.v2"


@pytest.fixture
def models(catalog: Catalog, tmp_path: Path) -> Any:
    """The models of invoice-issued v1 and v2, generated into a package of the test's own."""
    return generated_package(catalog, tmp_path / "models", [INVOICE_V1, INVOICE_V2])


def test_a_consumer_on_a_generated_type_gets_published_generated_instances(vhost_url, billing, accounting, models):
    InvoiceIssuedV1 = models.REGISTRY[INVOICE_V1]
    InvoiceIssuedV2 = models.REGISTRY[INVOICE_V2]
    v2 = models.billing_invoice_issued_v2
    fixtures = [copy.deepcopy(f.document) for f in billing.fixtures(INVOICE_V2, valid=True)]
    built = InvoiceIssuedV2(  # made in code: what it leaves unset is not sent
        metadata=v2.Metadata(
            messageId=str(uuid.uuid4()),
            messageType=INVOICE_V2,
            schemaVersion=2,
            messageVersion="2.0.0",
            producer="billing-service",
            occurredAt="2026-07-02T08:00:00Z",
            publishedAt="2026-07-02T08:00:00.250Z",
            correlationId=str(uuid.uuid4()),
            causationId=str(uuid.uuid4()),
            partitionKey="inv-10009",
        ),
        payload=v2.InvoiceIssuedV2Payload(
            invoiceId="inv-10009",
            orderId="ord-10009",
            customerId="cus-1",
            amountMinorUnits=-4200,
            currencyExponent=2,
            currency="EUR",
            status="VOID",
            issuedAt="2026-07-02T07:59:59.5+02:00",
            dueDate="2026-08-01",
            aggregateVersion=3,
            billingEmail="ap@example.com",
        ),
    )
    old = InvoiceIssuedV1.model_validate(copy.deepcopy(next(iter(billing.fixtures(INVOICE_V1, valid=True))).document))
    received: list[Message[Any]] = []

    with GuardedPublisher(billing, vhost_url) as publisher:
        publisher.publish_many([*(InvoiceIssuedV2.model_validate(f) for f in fixtures), built])
        publisher.publish(old).result(timeout=30)  # a v1 instance: the v2 consumer reads it migrated
    consumer = GuardedConsumer(
        accounting,
        vhost_url,
        queues=[Q2, "accounting-service.billing.invoice-issued.v1"],
    ).on(InvoiceIssuedV2, received.append)
    stopped = consumer.run(max_messages=len(fixtures) + 2, idle_timeout=20)

    assert stopped is StopReason.MAX_MESSAGES
    assert all(isinstance(m.body, InvoiceIssuedV2) for m in received)
    typed = {m.body.metadata.messageId: m for m in received}
    for fixture in fixtures:  # as written, both ways: decimal and time strings untouched
        body = typed[fixture["metadata"]["messageId"]].body
        assert body.model_dump(mode="json", by_alias=True, exclude_unset=True) == fixture
    mine = typed[built.metadata.messageId]
    assert mine.envelope == built.model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert "tenantId" not in mine.envelope["metadata"]  # unset stays unsent: no null, no default
    assert mine.body.payload.issuedAt == "2026-07-02T07:59:59.5+02:00"
    migrated = typed[old.metadata.messageId]
    assert (migrated.migrated, migrated.received_type) == (True, INVOICE_V1)
    assert migrated.body.payload.amountMinorUnits == int(old.payload.amount.replace(".", ""))
    connection = open_connection(vhost_url)
    try:
        assert drain(connection, f"{Q2}.dlq") == []
    finally:
        close_quietly(connection)


def test_the_guard_still_judges_a_generated_instance_before_it_is_sent(vhost_url, billing, models):
    InvoiceIssuedV2 = models.REGISTRY[INVOICE_V2]
    fixture = copy.deepcopy(next(iter(billing.fixtures(INVOICE_V2, valid=True))).document)
    fixture["payload"]["billingEmail"] = "not an address"  # a format the type leaves to the guard
    instance = InvoiceIssuedV2.model_validate(fixture)

    with GuardedPublisher(billing, vhost_url) as publisher, pytest.raises(ContractViolation) as refused:
        publisher.publish(instance)

    assert refused.value.pointer == "/payload/billingEmail"
    connection = open_connection(vhost_url)
    try:
        assert [json.loads(body) for _, body in drain(connection, Q2)] == []
    finally:
        close_quietly(connection)

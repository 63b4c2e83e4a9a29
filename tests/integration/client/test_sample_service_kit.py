"""The consumer test kit against the sample accounting service, and against handlers it must catch out."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

import pytest
from tests.integration.client.sample_service import INVOICE_V2, Ledger, dispatcher

from contract_platform.catalog import load_catalog
from contract_platform.client import Dispatcher, Message, run_consumer_kit
from contract_platform.client.bundle import bundle_from_document
from contract_platform.client.consumer import DeadLetter, Requeue
from contract_platform.client.guard import RejectReason
from contract_platform.client.pytest_plugin import consumer_kit  # noqa: F401  # the fixture, as a service enables it
from contract_platform.client.testkit import UNKNOWN_VALUE, delivery_of
from contract_platform.export.bundle import export_bundle

INVOICE_V1, ORDER_CREATED = "billing.invoice-issued.v1", "order.order-created.v1"


def test_the_sample_service_meets_every_case_of_its_contracts(accounting):
    ledger = Ledger()

    report = run_consumer_kit(accounting, dispatcher(accounting, ledger), state=ledger.snapshot)

    report.assert_ok()
    cases = {(case.case, case.message_type) for case in report.cases}
    for message_type in (INVOICE_V1, INVOICE_V2):  # v1 only through migration on read
        assert {
            (name, message_type) for name in ("valid", "invalid", "duplicate", "added-field", "unknown-enum")
        } <= cases
    assert sum(case.case == "valid" for case in report.cases) == 6
    assert sum(case.case == "invalid" for case in report.cases) == 6
    assert len(ledger.entries) == 3  # the v1 fixtures are the v2 ones' invoices: booked once each


def test_the_pytest_fixture_runs_the_kit_and_fails_the_test_on_a_failed_case(accounting, consumer_kit):  # noqa: F811
    ledger = Ledger()

    consumer_kit(accounting, dispatcher(accounting, ledger), state=ledger.snapshot)

    forgetful = Ledger()

    def book_every_time(message: Message[Any]) -> None:
        forgetful.entries[f"{message.message_id}-{len(forgetful.entries)}"] = message.body

    with pytest.raises(AssertionError, match="duplicate"):
        consumer_kit(accounting, Dispatcher(accounting).on(INVOICE_V2, book_every_time), state=forgetful.snapshot)


class PaymentTerms(Enum):
    NET_15 = "NET_15"
    NET_30 = "NET_30"
    NET_60 = "NET_60"
    PREPAID = "PREPAID"


@dataclass(frozen=True)
class StrictOrder:
    """A reader that maps the payload field by field and every enum to its own: brittle by design."""

    orderId: str  # the payload's own names, as a naive mapping does
    quoteId: str
    customerId: str
    billingAccountId: str
    currency: str
    lineItems: list[Any]
    orderTotal: str
    paymentTerms: str
    orderStatus: str
    createdAt: str
    aggregateVersion: int


def test_the_kit_catches_a_reader_that_breaks_on_an_added_field_or_an_unknown_value(catalog):
    from contract_platform.client.bundle import bundle_from_document
    from contract_platform.export.bundle import export_bundle

    bundle = bundle_from_document(export_bundle(catalog, service="billing-service"), "billing.bundle.json")

    def invoice_order(message: Message[StrictOrder]) -> None:
        PaymentTerms(message.body.paymentTerms)

    brittle = Dispatcher(bundle).on(ORDER_CREATED, invoice_order, decode=lambda e: StrictOrder(**e["payload"]))

    report = run_consumer_kit(bundle, brittle)

    failed = {(case.case, case.detail.split(":")[0]) for case in report.failures}
    assert failed == {("added-field", ""), ("unknown-enum", "/payload/paymentTerms")}
    passed_enum = [c for c in report.cases if c.case == "unknown-enum" and c.ok]
    assert [c.detail for c in passed_enum] == ["/payload/orderStatus: policy fallback, the handler sees 'ON_HOLD'"]
    assert all(UNKNOWN_VALUE not in c.outcome for c in report.cases)


def test_a_reader_of_v1_meets_every_v2_fixture_through_the_migration_read_backwards(accounting):
    read: list[tuple[str, str]] = []
    v1_only = Dispatcher(accounting).on(
        INVOICE_V1, lambda message: read.append((message.received_type, message.message_id))
    )

    report = run_consumer_kit(accounting, v1_only)

    report.assert_ok()
    assert report.unreadable == []
    v2_ids = {f.document["metadata"]["messageId"] for f in accounting.fixtures(INVOICE_V2, valid=True)}
    assert {message_id for received, message_id in read if received == INVOICE_V2} == v2_ids  # the v1 handler had each


def test_a_version_the_service_cannot_read_is_reported_unreadable(catalog_copy):
    migration = catalog_copy / "billing" / "invoice-issued" / "v2" / "migration.yaml"
    migration.write_text(
        migration.read_text().replace(
            "{op: copy, from: /status, to: /status}",
            "{op: mapEnum, from: /status, to: /status, mapping: {ISSUED: ISSUED, PAID: PAID}, default: VOID}",
        )
    )  # v1 -> v2 folds statuses: v2 cannot be read back as v1
    bundle = bundle_from_document(export_bundle(load_catalog(catalog_copy), service="accounting-service"), "b.json")
    read: list[str] = []
    v1_only = Dispatcher(bundle).on(INVOICE_V1, lambda message: read.append(message.message_id))

    report = run_consumer_kit(bundle, v1_only)

    report.assert_ok()
    assert report.unreadable == [INVOICE_V2]
    assert {c.case for c in report.cases if c.message_type == INVOICE_V2} == {"unreadable"}


class InvoiceStatus(Enum):
    ISSUED = "ISSUED"
    PAID = "PAID"  # VOID forgotten: the contract lists it, no valid fixture carries it


def test_under_reject_the_kit_never_feeds_the_handler_a_value_outside_the_fixtures(accounting):
    """docs/service-client.md#the-consumer-test-kit: every enum of billing.invoice-issued is ``reject``, so its
    unknown-enum case is the guard's refusal, and the handler meets only the values the valid fixtures carry."""
    met: list[str] = []

    def book(message: Message[Any]) -> None:
        met.append(message.envelope["payload"]["status"])
        InvoiceStatus(message.envelope["payload"]["status"])  # raises on anything but ISSUED and PAID

    brittle = Dispatcher(accounting).on(INVOICE_V2, book)

    report = run_consumer_kit(accounting, brittle)

    report.assert_ok()  # the kit passes this handler
    unknown = [c for c in report.cases if c.case == "unknown-enum" and c.message_type == INVOICE_V2]
    assert unknown and all("policy reject" in c.detail for c in unknown)
    assert set(met) == {"ISSUED", "PAID"}
    issued = next(f.document for f in accounting.fixtures(INVOICE_V2, valid=True))
    void = {**issued, "payload": {**issued["payload"], "status": "VOID"}}  # valid: production meets it
    assert isinstance(brittle.dispatch(*delivery_of(void)), Requeue)
    failed = brittle.dispatch(*delivery_of(void), redelivered=True)
    assert isinstance(failed, DeadLetter) and failed.rejection.reason is RejectReason.HANDLER_FAILED

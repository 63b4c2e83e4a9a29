"""The guard at a service's boundary: what reaches a handler, what is refused and why, for every catalogue fixture and
for what no producer should send. Deliveries are built as the platform's publishers send them (real pika
``BasicProperties``, the encoded body)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pika
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.fuzz.hostile import HOSTILE_BYTES, JSON_TEXTS

from contract_platform.client.guard import Guard, Inspected, Rejection, RejectReason
from contract_platform.client.testkit import delivery_of
from contract_platform.errors import ContractViolation

INVOICE_V1, INVOICE_V2 = "billing.invoice-issued.v1", "billing.invoice-issued.v2"
ORDER_CREATED, CREATE_ORDER = "order.order-created.v1", "order.create-order.v1"


def fixture(bundle, message_type: str, *, valid: bool = True, index: int = 0) -> dict[str, Any]:
    return copy.deepcopy(list(bundle.fixtures(message_type, valid=valid))[index].document)


def test_every_valid_fixture_of_the_catalogue_reaches_a_reader_of_its_version(every_version):
    guard = Guard(every_version, reads=every_version.message_types)

    for message_type in every_version.message_types:
        for item in every_version.fixtures(message_type, valid=True):
            seen = guard.inspect(*delivery_of(item.document))
            assert isinstance(seen, Inspected), (message_type, item.name, seen)
            assert (seen.message_type, seen.migrated, seen.envelope) == (message_type, False, item.document)


def test_every_invalid_fixture_is_refused_with_a_reason_a_pointer_and_a_keyword(every_version):
    guard = Guard(every_version, reads=every_version.message_types)

    for message_type in every_version.message_types:
        for item in every_version.fixtures(message_type, valid=False):
            seen = guard.inspect(*delivery_of(item.document))
            assert isinstance(seen, Rejection), (message_type, item.name)
            assert seen.reason in (RejectReason.PAYLOAD_INVALID, RejectReason.ENVELOPE_INVALID), item.name
            assert seen.pointer.startswith(("/payload", "/metadata")) and seen.keyword, (item.name, seen)
            assert seen.contract_label == f"{message_type}@{every_version.contract(message_type).version}"


def test_a_rejection_names_the_field_and_keyword_but_never_the_value(every_version):
    guard = Guard(every_version, reads=[INVOICE_V1])
    envelope = fixture(every_version, INVOICE_V1)
    envelope["payload"]["billingEmail"] = "not an address, personal"

    seen = guard.inspect(*delivery_of(envelope))

    assert isinstance(seen, Rejection)
    assert (seen.reason, seen.pointer, seen.keyword) == (
        RejectReason.PAYLOAD_INVALID,
        "/payload/billingEmail",
        "format",
    )
    assert "personal" not in seen.detail


def test_an_unknown_type_is_refused_from_the_header_peek_without_reading_the_body(every_version):
    guard = Guard(every_version, reads=[INVOICE_V2])

    seen = guard.inspect(pika.BasicProperties(type="shipping.parcel-sent.v1"), b"\xff not even UTF-8")

    assert isinstance(seen, Rejection)
    assert (seen.reason, seen.pointer, seen.message_type) == (
        RejectReason.UNKNOWN_TYPE,
        "/properties/type",
        "shipping.parcel-sent.v1",
    )


def test_a_type_the_service_says_it_supports_reaches_it_unchecked(every_version):
    guard = Guard(every_version, reads=[INVOICE_V2], unchecked=["legacy.invoice-exported.v1"])

    seen = guard.inspect(pika.BasicProperties(type="legacy.invoice-exported.v1"), b'{"invoice": 1}')

    assert not isinstance(seen, Rejection)
    assert (seen.message_type, seen.document) == ("legacy.invoice-exported.v1", {"invoice": 1})


def test_the_type_is_found_in_a_type_header_when_the_property_is_missing(every_version):
    guard = Guard(every_version, reads=[INVOICE_V2])
    properties = pika.BasicProperties(headers={"message-type": "shipping.parcel-sent.v1"})

    assert guard.peek(properties) == "shipping.parcel-sent.v1"
    assert guard.inspect(properties, b"{}").reason is RejectReason.UNKNOWN_TYPE


def test_a_delivery_without_any_type_is_a_header_mismatch(every_version):
    guard = Guard(every_version, reads=[INVOICE_V2])
    _, body = delivery_of(fixture(every_version, INVOICE_V2))

    seen = guard.inspect(pika.BasicProperties(content_type="application/json"), body)

    assert (seen.reason, seen.pointer) == (RejectReason.HEADER_MISMATCH, "/properties/type")


def test_properties_that_disagree_with_the_envelope_are_a_header_mismatch(every_version):
    guard = Guard(every_version, reads=[INVOICE_V2])
    properties, body = delivery_of(fixture(every_version, INVOICE_V2))
    properties.message_id = "another-message"

    seen = guard.inspect(properties, body)

    assert (seen.reason, seen.pointer) == (RejectReason.HEADER_MISMATCH, "/properties/messageId")


@pytest.mark.parametrize(
    ("body", "pointer", "detail"),
    [
        (b"\xed\xa0\x80{}", "/body", "not UTF-8 JSON"),
        (b'{"metadata": ', "/body", "not UTF-8 JSON"),
        (b"[1, 2, 3]", "/body", "not a JSON object"),
        (b'{"metadata": ' + b'{"a": ' * 400 + b"1" + b"}" * 401, "/metadata/a/a/a", "deeper than 256 levels"),
    ],
)
def test_a_body_that_is_no_envelope_is_malformed(every_version, body, pointer, detail):
    guard = Guard(every_version, reads=[INVOICE_V2])

    seen = guard.inspect(pika.BasicProperties(type=INVOICE_V2), body)

    assert seen.reason is RejectReason.MALFORMED
    assert seen.pointer.startswith(pointer) and detail in seen.detail


def test_a_body_over_the_contract_limit_is_refused_before_it_is_parsed(every_version):
    guard = Guard(every_version, reads=[INVOICE_V2])
    limit = every_version.contract(INVOICE_V2).max_body_bytes

    seen = guard.inspect(pika.BasicProperties(type=INVOICE_V2), b"[" * (limit + 1))

    assert (seen.reason, seen.pointer) == (RejectReason.OVERSIZE, "/body")


def test_an_older_major_is_read_through_migration_into_the_version_the_service_reads(every_version):
    """The catalogue's promise: a v1 fixture, migrated, is the v2 fixture of the same name."""
    guard = Guard(every_version, reads=[INVOICE_V2])
    v2 = {item.name: item.document for item in every_version.fixtures(INVOICE_V2, valid=True)}

    for item in every_version.fixtures(INVOICE_V1, valid=True):
        seen = guard.inspect(*delivery_of(item.document))
        assert isinstance(seen, Inspected)
        assert (seen.received_type, seen.message_type, seen.migrated) == (INVOICE_V1, INVOICE_V2, True)
        assert seen.envelope == v2[item.name]


def test_a_reader_of_the_older_major_reads_the_newer_one_through_the_migration_read_backwards(every_version):
    guard = Guard(every_version, reads=[INVOICE_V1])
    v1 = {item.name: item.document for item in every_version.fixtures(INVOICE_V1, valid=True)}

    for item in every_version.fixtures(INVOICE_V2, valid=True):
        seen = guard.inspect(*delivery_of(item.document))
        assert isinstance(seen, Inspected), (item.name, seen)
        assert (seen.received_type, seen.message_type, seen.migrated) == (INVOICE_V2, INVOICE_V1, True)
        assert seen.envelope["payload"] == v1[item.name]["payload"]


def test_a_newer_major_for_a_reader_of_the_older_one_is_not_migratable_where_the_migration_cannot_go_back(
    catalog_copy, bundle_of
):
    migration = catalog_copy / "billing" / "invoice-issued" / "v2" / "migration.yaml"
    migration.write_text(
        migration.read_text().replace(
            "{op: copy, from: /status, to: /status}",
            "{op: mapEnum, from: /status, to: /status, mapping: {ISSUED: ISSUED, PAID: PAID}, default: VOID}",
        )
    )
    bundle = bundle_of(message_types=(INVOICE_V1, INVOICE_V2), source=catalog_copy)
    guard = Guard(bundle, reads=[INVOICE_V1])

    seen = guard.inspect(*delivery_of(fixture(bundle, INVOICE_V2)))

    assert (seen.reason, seen.message_type) == (RejectReason.NOT_MIGRATABLE, INVOICE_V2)
    assert f"no migration.yaml of the bundle reads {INVOICE_V2}" in seen.detail
    assert f"{INVOICE_V1} -> {INVOICE_V2}" in seen.detail
    assert "backwards" in seen.detail and "cannot be mapped back" in seen.detail


def test_a_message_the_migration_cannot_carry_is_not_migratable_at_its_pointer(every_version):
    guard = Guard(every_version, reads=[INVOICE_V2])
    envelope = fixture(every_version, INVOICE_V1)
    envelope["payload"]["amount"] = "129.955"  # valid v1; EUR has two decimals: no exact amount in minor units

    seen = guard.inspect(*delivery_of(envelope))

    assert (seen.reason, seen.pointer) == (RejectReason.NOT_MIGRATABLE, "/payload/amount")


def test_an_unknown_enum_value_is_handed_over_as_its_policy_says(every_version):
    guard = Guard(every_version, reads=[ORDER_CREATED, INVOICE_V2])
    order = fixture(every_version, ORDER_CREATED)
    order["payload"]["paymentTerms"] = "NET_90"  # passthrough
    order["payload"]["orderStatus"] = "AWAITING_CREDIT_CHECK"  # fallback:ON_HOLD
    invoice = fixture(every_version, INVOICE_V2)
    invoice["payload"]["status"] = "DISPUTED"  # reject

    seen = guard.inspect(*delivery_of(order))
    refused = guard.inspect(*delivery_of(invoice))

    assert isinstance(seen, Inspected)
    assert (seen.envelope["payload"]["paymentTerms"], seen.envelope["payload"]["orderStatus"]) == ("NET_90", "ON_HOLD")
    assert sorted(t.pointer for t in seen.tolerated) == ["/payload/orderStatus", "/payload/paymentTerms"]
    assert (refused.reason, refused.pointer, refused.keyword) == (
        RejectReason.PAYLOAD_INVALID,
        "/payload/status",
        "enum",
    )


def test_an_added_field_passes_an_open_model_and_a_closed_one_only_where_the_mode_reads_forward(
    every_version, bundle_of, catalog_copy
):
    invoice = fixture(every_version, INVOICE_V2)
    invoice["payload"]["dunningLevel"] = 1
    command = fixture(every_version, CREATE_ORDER)
    command["payload"]["salesRegion"] = "EMEA"
    contract = catalog_copy / "order" / "create-order" / "v1" / "contract.yaml"
    contract.write_text(contract.read_text().replace("compatibility: BACKWARD", "compatibility: FORWARD"))
    forward = Guard(bundle_of(message_types=(CREATE_ORDER,), source=catalog_copy), reads=[CREATE_ORDER])
    guard = Guard(every_version, reads=[INVOICE_V2, CREATE_ORDER])

    opened = guard.inspect(*delivery_of(invoice))
    closed = guard.inspect(*delivery_of(command))
    read_forward = forward.inspect(*delivery_of(command))

    assert isinstance(opened, Inspected) and opened.tolerated == () and opened.envelope["payload"]["dunningLevel"] == 1
    assert (closed.reason, closed.keyword) == (RejectReason.PAYLOAD_INVALID, "additionalProperties")
    assert isinstance(read_forward, Inspected)
    assert [(t.pointer, t.keyword) for t in read_forward.tolerated] == [("/payload", "additionalProperties")]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=st.one_of(JSON_TEXTS.map(lambda text: text.encode("utf-8", "surrogatepass")), HOSTILE_BYTES))
def test_no_body_makes_the_guard_raise(every_version, body):
    guard = Guard(every_version, reads=[INVOICE_V2])

    seen = guard.inspect(pika.BasicProperties(type=INVOICE_V2, message_id="m-1"), body)

    assert isinstance(seen, Rejection)
    assert seen.reason in (RejectReason.MALFORMED, RejectReason.ENVELOPE_INVALID, RejectReason.OVERSIZE)


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    value=st.one_of(
        st.text(max_size=30),
        st.integers(),
        st.floats(allow_nan=False),
        st.none(),
        st.lists(st.text(max_size=3), max_size=3),
    ),
    field=st.sampled_from(["amountMinorUnits", "currency", "status", "issuedAt", "billingEmail", "invoiceId"]),
)
def test_a_hostile_value_in_any_field_is_judged_never_raised(every_version, value, field):
    guard = Guard(every_version, reads=[INVOICE_V1, INVOICE_V2])
    envelope = fixture(every_version, INVOICE_V2)
    envelope["payload"][field] = value

    seen = guard.inspect(*delivery_of(envelope))

    assert isinstance(seen, Inspected | Rejection)


def test_a_publisher_learns_the_pointer_and_keyword_before_anything_is_sent(every_version):
    guard = Guard(every_version, reads=())
    envelope = fixture(every_version, INVOICE_V2)
    envelope["payload"]["currency"] = "eur"
    del envelope["metadata"]["correlationId"]

    with pytest.raises(ContractViolation) as envelope_error:
        guard.check_outgoing(envelope)
    envelope["metadata"]["correlationId"] = "c-1"
    with pytest.raises(ContractViolation) as payload_error:
        guard.check_outgoing(envelope)

    assert (envelope_error.value.reason, envelope_error.value.pointer, envelope_error.value.keyword) == (
        "ENVELOPE_INVALID",
        "/metadata",
        "required",
    )
    assert (payload_error.value.pointer, payload_error.value.keyword) == ("/payload/currency", "pattern")
    assert "pattern at /payload/currency" in str(payload_error.value) and "'eur'" not in str(payload_error.value)
    assert payload_error.value.errors[0][0] == "/payload/currency"


def test_a_publisher_may_send_only_what_its_contract_lets_it_send(every_version):
    guard = Guard(every_version, reads=())
    envelope = fixture(every_version, INVOICE_V2)
    envelope["metadata"]["producer"] = "accounting-service"
    stranger = json.loads(json.dumps(envelope))
    stranger["metadata"]["messageType"] = "billing.invoice-voided.v1"

    with pytest.raises(ContractViolation) as wrong_producer:
        guard.check_outgoing(envelope)
    with pytest.raises(ContractViolation) as unknown:
        guard.check_outgoing(stranger)

    assert (wrong_producer.value.pointer, wrong_producer.value.keyword) == ("/metadata/producer", "producer")
    assert "sent by billing-service" in str(wrong_producer.value)
    assert (unknown.value.reason, unknown.value.pointer) == ("UNKNOWN_TYPE", "/metadata/messageType")

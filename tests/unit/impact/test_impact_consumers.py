"""Which consumers a change breaks, reaches or leaves untouched, and who owns them (impact.analysis)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.contracts import schema_with

from contract_platform.catalog.model import Consumer, Owner
from contract_platform.compat import Mode, check_compatibility
from contract_platform.impact import ConsumerImpact, impact_of

INVOICE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "invoiceId": {"type": "string"},
        "amount": {"type": "string"},
        "customer": {"type": "object", "properties": {"email": {"type": "string"}, "name": {"type": "string"}}},
        "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}},
    },
    "required": ["invoiceId"],
    "$defs": {"Line": {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}}}},
}
BILLING = Owner(team="billing-platform", service="billing-service", contact="billing@example.com")


def _impact(old: Any, new: Any, consumers: list[Consumer], mode: Mode = Mode.BACKWARD, **kw: Any) -> ConsumerImpact:
    verdict = check_compatibility(old, new, mode=mode)
    return impact_of(verdict.changes, consumers, old_schema=old, new_schema=new, fallback_owner=BILLING, **kw)


THREE = [
    Consumer("ledger-service", "ledger-service.q", reads=("/payload/lines/*/sku", "/payload/invoiceId")),
    Consumer("mailer-service", "mailer-service.q", reads=("/payload/customer",)),
    Consumer("audit-service", "audit-service.q", reads=("/payload/amount",)),
]


@pytest.mark.parametrize(
    ("path", "value", "broken"),
    [
        # narrowing inside the array's items reaches the reader of /lines/*/sku only
        (("$defs", "Line", "properties", "sku", "maxLength"), 8, ["ledger-service"]),
        # a descendant of a read: reading /customer sees a change to /customer/email
        (("properties", "customer", "properties", "email", "maxLength"), 3, ["mailer-service"]),
        # an ancestor of a read: the array itself
        (("properties", "lines", "maxItems"), 10, ["ledger-service"]),
        # a field nobody reads
        (("$defs", "Line", "properties", "qty", "minimum"), 1, []),
        # the whole payload: every reader
        (("maxProperties",), 3, ["ledger-service", "mailer-service", "audit-service"]),
    ],
)
def test_a_breaking_change_breaks_the_consumers_whose_reads_cover_it(
    path: tuple[Any, ...], value: Any, broken: list[str]
) -> None:
    impact = _impact(INVOICE, schema_with(INVOICE, *path, value=value), THREE)
    [change] = impact.changes
    assert change.change.compatible is False
    assert list(change.broken) == broken
    assert sorted(change.untouched) == sorted(set(c.service for c in THREE) - set(broken))
    assert [c.service for c in impact.broken] == broken


def test_one_consumer_of_three_broken_is_named_with_its_owner_and_contact() -> None:
    consumers = [
        Consumer("ledger-service", "q1", reads=("/payload/lines/*/sku",), team="ledger", contact="ledger@example.com"),
        Consumer("billing-service", "q2", reads=("/payload/invoiceId",)),  # owns a contract: the catalogue's entry
        Consumer("mailer-service", "q3", reads=("/payload/customer/name",)),  # nothing known: the contract's owner
    ]
    new = schema_with(INVOICE, "$defs", "Line", "properties", "sku", "pattern", value="^[A-Z]+$")
    impact = _impact(INVOICE, new, consumers, services={"billing-service": BILLING})
    assert [(c.service, c.team, c.contact) for c in impact.broken] == [
        ("ledger-service", "ledger", "ledger@example.com")
    ]
    by_service = {c.service: c for c in impact.consumers}
    assert (by_service["billing-service"].team, by_service["billing-service"].owner_source) == (
        "billing-platform",
        "service",
    )
    assert by_service["mailer-service"].owner_source == "contract-owner"
    assert impact.to_dict()["broken"] == ["ledger-service"]
    assert impact.to_dict()["changes"][0]["consumers"]["broken"] == ["ledger-service"]


def test_a_consumer_without_reads_reads_everything_and_any_breaking_change_breaks_it() -> None:
    everyone = Consumer("legacy-service", "legacy.q")
    new = schema_with(INVOICE, "$defs", "Line", "properties", "qty", "minimum", value=1)
    impact = _impact(INVOICE, new, [everyone, *THREE])
    assert [c.service for c in impact.broken] == ["legacy-service"]
    assert impact.consumer("legacy-service").declares == "everything"  # type: ignore[union-attr]
    # a compatible change breaks nobody, even a reader of everything
    widened = _impact(new, INVOICE, [everyone])
    assert widened.broken == []


def test_removing_a_read_field_is_allowed_by_backward_but_the_reader_is_listed_as_reading_it() -> None:
    new = schema_with(INVOICE, "properties", value={k: v for k, v in INVOICE["properties"].items() if k != "amount"})
    impact = _impact(INVOICE, new, THREE)
    [change] = [c for c in impact.changes if c.change.path == "/properties/amount"]
    assert change.change.compatible is True
    assert (change.broken, change.reading) == ((), ("audit-service",))
    assert impact.broken == []
    assert [c.service for c in impact.untouched] == ["ledger-service", "mailer-service"]


CLOSED_WRITER: dict[str, Any] = {
    "type": "object",
    "properties": {"invoiceId": {"type": "string"}, "amount": {"type": "string"}},
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("reader", "broken"),
    [
        # the reader accepts no member it does not declare: the writer's new optional field breaks it
        ({"type": "object", "properties": {"invoiceId": {"type": "string"}}, "additionalProperties": False}, True),
        # an open reader ignores what it does not declare
        ({"type": "object", "properties": {"invoiceId": {"type": "string"}}}, False),
        # open, but it holds the new field to a stricter shape than the writer sends
        ({"type": "object", "properties": {"note": {"type": "string", "maxLength": 10}}}, True),
    ],
)
def test_a_reader_schema_is_judged_forward_against_what_the_new_writer_may_send(
    reader: dict[str, Any], broken: bool
) -> None:
    new = schema_with(CLOSED_WRITER, "properties", "note", value={"type": "string"})
    consumer = Consumer("reader-service", "q", reader_schema="reader.schema.json", reader_schema_document=reader)
    impact = _impact(CLOSED_WRITER, new, [consumer])
    [change] = impact.changes
    assert change.change.compatible is True  # BACKWARD allows a new optional field in a closed model
    assert impact.consumer("reader-service").broken is broken  # type: ignore[union-attr]
    assert (change.broken == ("reader-service",)) is broken


def test_a_reader_schema_that_could_not_be_read_is_judged_as_reading_everything() -> None:
    consumer = Consumer("reader-service", "q", reader_schema="gone.json", reader_schema_problem="file is missing")
    new = schema_with(INVOICE, "$defs", "Line", "properties", "qty", "minimum", value=1)
    impact = _impact(INVOICE, new, [consumer])
    [report] = impact.consumers
    assert report.broken and report.note and "reading everything" in report.note


def test_a_change_inside_one_oneof_branch_breaks_only_that_branch_s_readers() -> None:
    card = {
        "type": "object",
        "properties": {"kind": {"const": "card"}, "card": {"type": "string"}},
        "required": ["kind"],
    }
    iban = {
        "type": "object",
        "properties": {"kind": {"const": "iban"}, "iban": {"type": "string"}},
        "required": ["kind"],
    }
    old = {"oneOf": [card, iban]}
    new = schema_with(old, "oneOf", 1, "properties", "iban", "maxLength", value=34)
    consumers = [
        Consumer("cards-service", "q1", reads=("/payload/card",)),
        Consumer("sepa-service", "q2", reads=("/payload/iban",)),
    ]
    impact = _impact(old, new, consumers)
    assert [c.service for c in impact.broken] == ["sepa-service"]

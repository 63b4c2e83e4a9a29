"""Each record-level reason fires exactly where it should, on hand-built records (no Spark)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from contract_platform.catalog import Catalog
from contract_platform.validation import Finding, Reason, RecordChecker
from contract_platform.validation.records import payload_hash

R = Reason


def codes(findings: list[Finding]) -> list[Reason]:
    return [f.code for f in findings]


def check(checker: RecordChecker, record: dict[str, Any] | str) -> list[Finding]:
    return checker.check(record if isinstance(record, str) else json.dumps(record)).findings


def test_a_correct_record_has_no_finding_and_yields_what_the_cross_record_rules_need(checker, envelope, record):
    env = envelope("order.order-created.v1")
    checked = checker.check(json.dumps(record(env)))
    assert checked.findings == []
    assert checked.rank is None
    assert (checked.message_type, checked.message_id) == ("order.order-created.v1", env["metadata"]["messageId"])
    assert (checked.order_key, checked.sequence) == (
        env["metadata"]["partitionKey"],
        env["payload"]["aggregateVersion"],
    )
    assert checked.received_us == 1782900932120000  # 2026-07-01T10:15:32.120Z
    assert checked.exchange == "order.events" and checked.redelivered is False
    assert checked.payload_hash == payload_hash(env["payload"])
    assert checked.body_bytes == len(json.dumps(env).encode("utf-8"))


def test_every_valid_fixture_of_an_active_type_passes(catalog: Catalog, checker, record):
    for contract in catalog:
        for fixture in (f for f in contract.fixtures if f.valid):
            found = check(checker, record(fixture.document))
            expected = [R.DEPRECATED_TYPE] if contract.status == "deprecated" else []
            assert codes(found) == expected, (fixture.path, found)


def _deep(depth: int) -> str:
    return '{"metadata": ' + "[" * depth + "]" * depth + ', "payload": {}}'


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda r: json.dumps(r)[:150], ""),  # a truncated line
        (lambda r: json.dumps([r]), ""),  # a line that is not an object
        (lambda r: {**r, "body": None, "bodyBase64": None}, "/body"),
        (lambda r: {**r, "body": 42}, "/body"),
        (lambda r: {**r, "body": None, "bodyBase64": "not base64!"}, "/bodyBase64"),
        (lambda r: {**r, "body": None, "bodyBase64": base64.b64encode(b"\xff\xfe{}").decode()}, "/bodyBase64"),
        (lambda r: {**r, "body": r["body"][:-3]}, "/body"),
        (lambda r: {**r, "body": '{"a": NaN}'}, "/body"),
        (lambda r: {**r, "body": "[1, 2]"}, "/body"),
        (lambda r: {**r, "body": _deep(10_000)}, "/body"),
    ],
    ids=[
        "truncated-line",
        "line-not-object",
        "no-body",
        "body-not-string",
        "not-base64",
        "not-utf8",
        "not-json",
        "nan-is-not-json",
        "not-an-object",
        "nested-10000-deep",
    ],
)
def test_malformed(checker, envelope, record, change, path):
    found = check(checker, change(record(envelope())))
    assert codes(found) == [R.MALFORMED]
    assert found[0].path == path


def test_a_utf8_body_in_body_base64_is_read(checker, envelope, record):
    env = envelope()
    encoded = base64.b64encode(json.dumps(env).encode("utf-8")).decode("ascii")
    assert check(checker, record(env, body=None, bodyBase64=encoded)) == []


def test_envelope_invalid_names_the_pointer(checker, envelope, record):
    env = envelope()
    env["metadata"]["traceId"] = "NOT-HEX"
    found = check(checker, record(env))
    assert codes(found) == [R.ENVELOPE_INVALID]
    assert found[0].path == "/metadata/traceId"


def test_a_leap_second_is_envelope_invalid_as_the_jsonschema_library_says(checker, envelope, record):
    env = envelope()
    env["metadata"]["occurredAt"] = "2026-06-30T23:59:60Z"  # jsonschema-rs alone would accept it
    found = check(checker, record(env))
    assert [(f.code, f.path) for f in found] == [(R.ENVELOPE_INVALID, "/metadata/occurredAt")]


def test_unknown_type(checker, envelope, record):
    env = envelope()
    env["metadata"]["messageType"] = "order.order-cancelled.v1"
    found = check(checker, record(env))
    assert [(f.code, f.path) for f in found] == [(R.UNKNOWN_TYPE, "/metadata/messageType")]


def test_payload_invalid_with_format_assertions_on(checker, envelope, record):
    env = envelope()
    env["payload"]["createdAt"] = "yesterday"
    env["payload"]["orderTotal"] = 129.95
    found = check(checker, record(env))
    assert codes(found) == [R.PAYLOAD_INVALID, R.PAYLOAD_INVALID]
    assert sorted(f.path for f in found) == ["/payload/createdAt", "/payload/orderTotal"]


@pytest.mark.parametrize(
    ("where", "value", "path"),
    [
        ("messageId", "another-id", "/properties/messageId"),
        ("type", "order.order-created.v2", "/properties/type"),
        ("schema-version", "1", "/properties/headers/schema-version"),  # a string is not the integer 1
        ("schema-version", None, "/properties/headers/schema-version"),  # missing
        ("producer", "someone-else", "/properties/headers/producer"),
    ],
)
def test_header_mismatch(checker, envelope, record, where, value, path):
    rec = record(envelope())
    target = rec["properties"] if where in ("messageId", "type") else rec["properties"]["headers"]
    if value is None:
        del target[where]
    else:
        target[where] = value
    found = check(checker, rec)
    assert [(f.code, f.path) for f in found] == [(R.HEADER_MISMATCH, path)]


def test_optional_mirrored_headers_may_be_absent(checker, envelope, record):
    rec = record(envelope())
    for name in ("message-version", "producer", "tenant-id", "trace-id"):
        del rec["properties"]["headers"][name]
    assert check(checker, rec) == []


@pytest.mark.parametrize(("field", "path"), [("exchange", "/exchange"), ("routingKey", "/routingKey")])
def test_routing_mismatch(checker, envelope, record, field, path):
    rec = record(envelope())
    rec[field] = "billing.events" if field == "exchange" else "order.order.created.v2"
    found = check(checker, rec)
    assert [(f.code, f.path) for f in found] == [(R.ROUTING_MISMATCH, path)]


def test_oversize_is_over_the_limit_not_at_it(catalog, envelope, record):
    rec = record(envelope())
    size = len(rec["body"].encode("utf-8"))
    assert check(RecordChecker(catalog, oversize_bytes=size), rec) == []
    found = check(RecordChecker(catalog, oversize_bytes=size - 1), rec)
    assert [(f.code, f.path) for f in found] == [(R.OVERSIZE, "/body")]


def test_a_10_mb_body_is_oversize_and_still_validated(checker, envelope, record):
    rec = record(envelope())
    rec["body"] += " " * 10_000_000
    assert codes(check(checker, rec)) == [R.OVERSIZE]


def test_pii_in_headers_by_value_and_by_name(checker, envelope, record):
    env = envelope("billing.invoice-issued.v2")
    rec = record(env)
    rec["properties"]["headers"]["x-contact"] = env["payload"]["billingEmail"]
    rec["properties"]["headers"]["Billing_Email"] = "redacted"
    rec["properties"]["headers"]["x-unrelated"] = "inv-10001"
    found = check(checker, rec)
    assert sorted((f.code, f.path) for f in found) == [
        (R.PII_IN_HEADERS, "/properties/headers/Billing_Email"),
        (R.PII_IN_HEADERS, "/properties/headers/x-contact"),
    ]
    assert all(env["payload"]["billingEmail"] not in f.message for f in found)  # never echo the PII itself


def test_pii_rules_apply_only_to_contracts_with_pii_fields(checker, envelope, record):
    rec = record(envelope("order.order-created.v1"))
    rec["properties"]["headers"]["billingEmail"] = "someone@example.com"
    assert check(checker, rec) == []


def test_version_status_defaults_to_the_declared_one_and_the_caller_may_override(catalog, envelope, record):
    v1 = record(envelope("billing.invoice-issued.v1"))
    order = record(envelope("order.order-created.v1"))
    assert codes(check(RecordChecker(catalog), v1)) == [R.DEPRECATED_TYPE]  # declared: deprecated
    effective = RecordChecker(
        catalog, statuses={"billing.invoice-issued.v1": "active", "order.order-created.v1": "retired"}
    )
    assert codes(check(effective, v1)) == []
    assert [(f.code, f.path) for f in check(effective, order)] == [(R.RETIRED_TYPE, "/metadata/messageType")]


def test_a_retired_version_s_messages_from_before_its_retirement_are_history_not_findings(catalog, envelope, record):
    before = record(envelope("order.order-created.v1"))
    before["receivedAt"] = "2026-07-01T10:15:32.120Z"
    after = record(envelope("order.order-created.v1"))
    after["receivedAt"] = "2026-07-02T00:00:00.001Z"
    retired = RecordChecker(catalog, statuses={"order.order-created.v1": "retired@2026-07-02T00:00:00+00:00"})
    assert codes(check(retired, before)) == [R.DEPRECATED_TYPE]  # published while still in service
    assert codes(check(retired, after)) == [R.RETIRED_TYPE]
    unknown_time = record(envelope("order.order-created.v1"))
    del unknown_time["receivedAt"]
    assert R.RETIRED_TYPE in codes(check(retired, unknown_time))  # no time: judged as if received now
    # without a retirement time every message of a retired version is RETIRED_TYPE, as before
    assert codes(check(RecordChecker(catalog, statuses={"order.order-created.v1": "retired"}), before)) == [
        R.RETIRED_TYPE
    ]


def test_a_retirement_time_that_is_not_a_time_is_refused(catalog):
    with pytest.raises(ValueError, match="not an ISO 8601 time"):
        RecordChecker(catalog, statuses={"order.order-created.v1": "retired@yesterday"})


def test_an_unknown_status_is_refused(catalog):
    with pytest.raises(ValueError, match="not one of"):
        RecordChecker(catalog, statuses={"order.order-created.v1": "gone"})


def test_several_reasons_are_all_listed_with_pointers_in_precedence_order(catalog, envelope, record):
    env = envelope("billing.invoice-issued.v1")
    env["payload"]["currency"] = "eur"
    rec = record(env, routingKey="billing.invoice.issued.v2")
    rec["properties"]["messageId"] = "not-the-same"
    rec["properties"]["headers"]["x-contact"] = env["payload"]["billingEmail"]
    rec["body"] += " " * 100
    found = RecordChecker(catalog, oversize_bytes=200).check(json.dumps(rec)).findings
    assert [(f.code, f.path) for f in sorted(found)] == [
        (R.PAYLOAD_INVALID, "/payload/currency"),
        (R.HEADER_MISMATCH, "/properties/messageId"),
        (R.ROUTING_MISMATCH, "/routingKey"),
        (R.OVERSIZE, "/body"),
        (R.PII_IN_HEADERS, "/properties/headers/x-contact"),
        (R.DEPRECATED_TYPE, "/metadata/messageType"),
    ]
    assert checker_rank(found) == R.PAYLOAD_INVALID.rank


def checker_rank(found: list[Finding]) -> int:
    return min(f.rank for f in found)


def test_payload_hash_ignores_key_order_only():
    assert payload_hash({"a": 1, "b": [1, 2]}) == payload_hash({"b": [1, 2], "a": 1})
    assert payload_hash({"a": 1}) != payload_hash({"a": 2})
    assert payload_hash({"a": "\ud800"}) == payload_hash({"a": "\ud800"})  # lone surrogate: no crash

"""The per-message code on hostile input: the record checker, the envelope validator, the migration engine and
the bridge's translator never raise for what a message holds, and each answers within a bounded time."""

from __future__ import annotations

import base64
import copy
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import pika
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.fuzz.hostile import (
    BACKTRACKING_TEXT,
    CATASTROPHIC_PATTERN,
    DEPTHS,
    HOSTILE_BYTES,
    HOSTILE_PATTERNS,
    JSON_TEXTS,
    ORDINARY_VALUES,
    nested_value,
)

from contract_platform.bridge.translation import ParkReason, Translator, resolve_route, target_validator
from contract_platform.catalog.model import Catalog
from contract_platform.envelope import EnvelopeValidator
from contract_platform.errors import MessageNotMigratable
from contract_platform.migration import compile_spec
from contract_platform.validation import Reason, RecordChecker

FIXTURES = Path(__file__).resolve().parents[2] / "contracts" / "billing" / "invoice-issued" / "v1" / "fixtures"
SECONDS = 5.0
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
PLACEHOLDER = "HOSTILE-VALUE-HERE"
PLACES = [
    ("payload",),
    ("payload", "amount"),
    ("metadata",),
    ("metadata", "messageId"),
    ("metadata", "extra"),
    ("metadata", "messageType"),
]


def fixture() -> dict[str, Any]:
    return json.loads(sorted((FIXTURES / "valid").glob("*.json"))[0].read_text())


def hostile_body(place: tuple[str, ...], text: str) -> str:
    """A valid v1 envelope as JSON text with the value at ``place`` replaced by ``text`` (any JSON text)."""
    envelope = fixture()
    node = envelope
    for key in place[:-1]:
        node = node[key]
    node[place[-1]] = PLACEHOLDER
    return json.dumps(envelope).replace(json.dumps(PLACEHOLDER), text, 1)


@pytest.fixture(scope="module")
def checker(catalog: Catalog) -> RecordChecker:
    return RecordChecker(catalog)


@pytest.fixture(scope="module")
def translator(catalog: Catalog) -> Translator:
    route = resolve_route(catalog, "billing.invoice-issued.v2")
    return Translator(route, target_validator(catalog), "bridge.billing.invoice-issued.v1.parking-lot")


def record_line(body: str | None, headers: Any, encoded: bytes | None = None) -> bytes:
    record = {
        "exchange": "billing.events",
        "routingKey": "billing.invoice.issued.v1",
        "receivedAt": "2026-07-01T10:15:32.120Z",
        "redelivered": False,
        "properties": {"messageId": "m-1", "type": "billing.invoice-issued.v1", "headers": PLACEHOLDER},
        "body": body,
        "bodyBase64": None if encoded is None else base64.b64encode(encoded).decode(),
    }
    return json.dumps(record).replace(json.dumps(PLACEHOLDER), headers, 1).encode()


@SETTINGS
@given(
    place=st.sampled_from(PLACES),
    text=JSON_TEXTS,
    headers=st.one_of(st.just("{}"), JSON_TEXTS.map(lambda t: '{"x": ' + t + "}"), JSON_TEXTS),
    raw=st.one_of(st.none(), HOSTILE_BYTES),
)
def test_the_record_checker_reports_every_hostile_record_and_never_raises(checker, place, text, headers, raw) -> None:
    line = record_line(None if raw is not None else hostile_body(place, text), headers, raw)

    started = time.monotonic()
    checked = checker.check(line)
    also = checker.check(line[: len(line) // 2])  # the same record cut mid-line

    assert time.monotonic() - started < SECONDS
    assert all(isinstance(f.code, Reason) for f in [*checked.findings, *also.findings])
    assert Reason.UNCHECKABLE not in checked.reasons, checked.findings  # every input so far has a real reason
    assert also.invalid
    texts = [checked.message_id, checked.message_type, checked.order_key, checked.received_at, checked.exchange]
    texts += [text for finding in checked.findings for text in (finding.path, finding.message)]
    for text in texts:  # Arrow needs UTF-8: one lone surrogate would fail the Spark task
        if text is not None:
            text.encode("utf-8")  # raises UnicodeEncodeError on a lone surrogate


@SETTINGS
@given(place=st.sampled_from(PLACES), value=st.one_of(ORDINARY_VALUES, DEPTHS.map(nested_value)))
def test_the_envelope_validator_answers_issues_for_any_document(catalog: Catalog, place, value) -> None:
    envelope = fixture()
    node = envelope
    for key in place[:-1]:
        node = node[key]
    node[place[-1]] = value
    validator = EnvelopeValidator(catalog)

    started = time.monotonic()
    contract, issues = validator.issues(envelope)

    assert time.monotonic() - started < SECONDS
    assert isinstance(issues, list)


@SETTINGS
@given(place=st.sampled_from(PLACES), value=st.one_of(ORDINARY_VALUES, DEPTHS.map(nested_value)))
def test_the_migration_engine_raises_only_message_not_migratable(catalog: Catalog, place, value) -> None:
    target = catalog.get("billing.invoice-issued.v2")
    assert target is not None
    migrate = compile_spec(resolve_route(catalog, target.message_type).spec).for_target(target)
    envelope = copy.deepcopy(fixture())
    node = envelope
    for key in place[:-1]:
        node = node[key]
    node[place[-1]] = value

    started = time.monotonic()
    try:
        migrated = migrate(envelope)
    except MessageNotMigratable as exc:
        assert exc.pointer == "" or exc.pointer.startswith(("/metadata", "/payload"))
    else:
        assert migrated["metadata"]["messageType"] == target.message_type
    assert time.monotonic() - started < SECONDS


@SETTINGS
@given(
    body=st.one_of(
        st.builds(hostile_body, st.sampled_from(PLACES), JSON_TEXTS), JSON_TEXTS.map(str.encode), HOSTILE_BYTES
    ),
    headers=st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8), max_size=3),
)
def test_the_bridge_translator_parks_or_publishes_every_body(translator: Translator, body, headers) -> None:
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body

    started = time.monotonic()
    outgoing = translator(raw, pika.BasicProperties(message_id="m-1", headers=headers))

    assert time.monotonic() - started < SECONDS
    if outgoing.routing_key == translator.parking_lot:
        assert outgoing.properties.headers["x-park-reason"] in {str(reason) for reason in ParkReason}
        assert outgoing.properties.headers["x-park-reason"] != ParkReason.FAILED, outgoing.properties.headers
        assert outgoing.body == raw


# -- regular expressions: one record's verdict within its bound, never a stalled task ---------------------------

CATASTROPHIC, POISON = CATASTROPHIC_PATTERN, BACKTRACKING_TEXT


def checker_with_pattern(catalog: Catalog, pattern: str) -> RecordChecker:
    """The record checker of the catalogue with billing.invoice-issued.v1's customerId under ``pattern``."""
    contract = catalog.get("billing.invoice-issued.v1")
    assert contract is not None
    schema = copy.deepcopy(dict(contract.payload_schema))
    schema["properties"]["customerId"]["pattern"] = pattern
    changed = dataclasses.replace(contract, payload_schema=schema)
    return RecordChecker(dataclasses.replace(catalog, contracts={**catalog.contracts, contract.message_type: changed}))


def customer_record(customer: str) -> bytes:
    envelope = fixture()
    envelope["payload"]["customerId"] = customer
    return record_line(json.dumps(envelope), "{}")


@pytest.mark.timeout(60, method="thread")  # a backtracking engine would hold the check for hours
def test_a_backtracking_pattern_gets_a_verdict_within_one_records_bound(catalog: Catalog) -> None:
    checker = checker_with_pattern(catalog, CATASTROPHIC)

    started = time.monotonic()
    poisoned = checker.check(customer_record(POISON))
    matching = checker.check(customer_record("a" * 41))

    assert time.monotonic() - started < SECONDS
    assert [(f.code, f.path) for f in poisoned.findings if f.code is Reason.PAYLOAD_INVALID] == [
        (Reason.PAYLOAD_INVALID, "/payload/customerId")
    ]
    assert Reason.PAYLOAD_INVALID not in matching.reasons


@pytest.mark.parametrize(
    ("pattern", "why"), [("^(?=c)[a-z]+$", "lookahead"), ("^(a)\\1$", "backreference"), ("a{99999999999}", "1000")]
)
def test_a_pattern_the_platform_cannot_evaluate_makes_the_record_uncheckable_with_the_reason(
    catalog: Catalog, pattern: str, why: str
) -> None:
    checker = checker_with_pattern(catalog, pattern)

    started = time.monotonic()
    checked = checker.check(customer_record(POISON))

    assert time.monotonic() - started < SECONDS
    [finding] = [f for f in checked.findings if f.code is Reason.UNCHECKABLE]
    assert "cannot be evaluated" in finding.message and why in finding.message


@SETTINGS
@given(
    pattern=HOSTILE_PATTERNS,
    text=st.one_of(st.just(POISON), st.text(alphabet="a!\n\u2028 ", max_size=64)),
)
def test_any_pattern_on_any_text_answers_within_the_bound(catalog: Catalog, pattern: str, text: str) -> None:
    checker = checker_with_pattern(catalog, pattern)

    started = time.monotonic()
    checked = checker.check(customer_record(text))

    assert time.monotonic() - started < SECONDS
    assert all(isinstance(f.code, Reason) for f in checked.findings)

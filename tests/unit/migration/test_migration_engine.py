"""Each op of the migration language, applied to payloads; envelope rules built into the engine."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from contract_platform.errors import ContractPlatformError, MessageNotMigratable, MigrationSpecError
from contract_platform.migration import migrate_envelope, migrate_payload

AMOUNT = """
- {op: decimalToMinorUnits, from: /amount, to: /amountMinorUnits, exponentTo: /currencyExponent,
   currencyFrom: /currency, exponents: {JPY: 0, KWD: 3}, defaultExponent: 2}
"""


def test_copy_renames_moves_and_creates_intermediate_objects(spec_of):
    spec = spec_of("""
    - {op: copy, from: /invoiceId, to: /invoiceId}
    - {op: copy, from: /customerId, to: /customer/id}
    - {op: copy, from: /billing/email, to: /customer/contact/email}
    - {op: copy, from: /lines, to: /items}
    """)
    source = {"invoiceId": "inv-1", "customerId": "cus-9", "billing": {"email": "a@b.example"}, "lines": [{"n": 1}]}

    result = migrate_payload(spec, source)

    assert result == {
        "invoiceId": "inv-1",
        "customer": {"id": "cus-9", "contact": {"email": "a@b.example"}},
        "items": [{"n": 1}],
    }
    result["items"][0]["n"] = 2
    assert source["lines"] == [{"n": 1}], "the new payload must not share objects with the old one"


def test_an_absent_optional_field_stays_absent(spec_of):
    spec = spec_of("- {op: copy, from: /note, to: /comment}\n- {op: copy, from: /id, to: /id}")
    assert migrate_payload(spec, {"id": "x"}) == {"id": "x"}


@pytest.mark.parametrize(
    ("amount", "currency", "minor_units", "exponent"),
    [
        ("129.95", "EUR", 12995, 2),  # not in exponents: defaultExponent
        ("15800", "JPY", 15800, 0),
        ("42.125", "KWD", 42125, 3),
        ("0.5", "KWD", 500, 3),
        ("-12.30", "USD", -1230, 2),  # credit note; trailing zero is exact
        ("129.950", "EUR", 12995, 2),  # more digits, but nothing to round
        ("123456789012345678901234567890.12", "EUR", 12345678901234567890123456789012, 2),  # beyond float and prec 28
    ],
)
def test_decimal_to_minor_units_takes_the_exponent_from_the_currency(spec_of, amount, currency, minor_units, exponent):
    result = migrate_payload(spec_of(AMOUNT), {"amount": amount, "currency": currency})
    assert result == {"amountMinorUnits": minor_units, "currencyExponent": exponent}
    assert type(result["amountMinorUnits"]) is int


def test_decimal_to_minor_units_with_a_fixed_exponent(spec_of):
    spec = spec_of("- {op: decimalToMinorUnits, from: /price, to: /priceMinorUnits, exponent: 4}")
    assert migrate_payload(spec, {"price": "1.2345"}) == {"priceMinorUnits": 12345}


@pytest.mark.parametrize(
    ("amount", "currency"),
    [("129.955", "EUR"), ("1.5", "JPY"), ("0.0001", "KWD")],
)
def test_an_amount_with_too_many_decimals_is_refused_not_rounded(spec_of, amount, currency):
    with pytest.raises(MessageNotMigratable) as caught:
        migrate_payload(spec_of(AMOUNT), {"amount": amount, "currency": currency})
    assert caught.value.pointer == "/payload/amount"
    assert "not rounded" in caught.value.reason


@pytest.mark.parametrize(
    ("payload", "pointer"),
    [
        ({"amount": 129.95, "currency": "EUR"}, "/payload/amount"),  # a JSON number, not a decimal string
        ({"amount": "1e3", "currency": "EUR"}, "/payload/amount"),
        ({"amount": "12,50", "currency": "EUR"}, "/payload/amount"),
        ({"amount": "NaN", "currency": "EUR"}, "/payload/amount"),
        ({"amount": "12.50"}, "/payload/currency"),  # no currency: no exponent
        ({"amount": "12.50", "currency": 978}, "/payload/currency"),
    ],
)
def test_amounts_that_are_not_decimal_strings_are_refused(spec_of, payload, pointer):
    with pytest.raises(MessageNotMigratable) as caught:
        migrate_payload(spec_of(AMOUNT), payload)
    assert caught.value.pointer == pointer


def test_a_currency_without_exponent_and_no_default_is_refused(spec_of):
    spec = spec_of("- {op: decimalToMinorUnits, from: /a, to: /m, currencyFrom: /c, exponents: {JPY: 0}}")
    assert migrate_payload(spec, {"a": "7", "c": "JPY"}) == {"m": 7}
    with pytest.raises(MessageNotMigratable) as caught:
        migrate_payload(spec, {"a": "7", "c": "EUR"})
    assert caught.value.pointer == "/payload/c"


def test_map_enum_maps_and_falls_back_to_default(spec_of):
    spec = spec_of("- {op: mapEnum, from: /state, to: /status, mapping: {OPEN: ISSUED, SETTLED: PAID}, default: VOID}")
    assert migrate_payload(spec, {"state": "OPEN"}) == {"status": "ISSUED"}
    assert migrate_payload(spec, {"state": "SETTLED"}) == {"status": "PAID"}
    assert migrate_payload(spec, {"state": "CANCELLED"}) == {"status": "VOID"}


def test_map_enum_refuses_an_unmapped_value_without_default(spec_of):
    spec = spec_of("- {op: mapEnum, from: /state, to: /status, mapping: {OPEN: ISSUED}}")
    with pytest.raises(MessageNotMigratable) as caught:
        migrate_payload(spec, {"state": "CANCELLED"})
    assert caught.value.pointer == "/payload/state" and "'CANCELLED'" in caught.value.described


@pytest.mark.parametrize(
    ("json_text", "expected"),
    [
        ("0.1", "0.1"),
        ("0.30000000000000004", "0.30000000000000004"),
        ("42", "42"),
        ("-7.25", "-7.25"),
        ("1e16", "10000000000000000"),
        ("1.5e-7", "0.00000015"),
    ],
)
def test_to_string_writes_canonical_decimal_text_without_float_artefacts(spec_of, json_text, expected):
    spec = spec_of("- {op: toString, from: /rate, to: /rateText}")
    payload = json.loads(f'{{"rate": {json_text}}}')
    assert migrate_payload(spec, payload) == {"rateText": expected}
    assert migrate_payload(spec, {"rate": Decimal("0.10")}) == {"rateText": "0.10"}


@pytest.mark.parametrize("value", [True, "0.1", None, [1]])
def test_to_string_refuses_what_is_not_a_number(spec_of, value):
    with pytest.raises(MessageNotMigratable) as caught:
        migrate_payload(spec_of("- {op: toString, from: /rate, to: /rateText}"), {"rate": value})
    assert caught.value.pointer == "/payload/rate"


def test_default_fills_only_what_is_absent_and_constant_always_wins(spec_of):
    # Listed first on purpose: a default never shadows a later copy, and a constant beats a later copy.
    spec = spec_of("""
    - {op: default, to: /channel, value: email}
    - {op: constant, to: /source, value: {system: migration, v: 1}}
    - {op: copy, from: /channel, to: /channel}
    - {op: copy, from: /origin, to: /source}
    """)
    assert migrate_payload(spec, {"channel": "post", "origin": "x"}) == {
        "channel": "post",
        "source": {"system": "migration", "v": 1},
    }
    assert migrate_payload(spec, {}) == {"channel": "email", "source": {"system": "migration", "v": 1}}


def test_drop_leaves_the_field_behind(spec_of):
    spec = spec_of("""
    - {op: copy, from: /id, to: /id}
    - {op: drop, from: /legacyCode, reason: "nobody reads it since 2024"}
    """)
    assert migrate_payload(spec, {"id": "x", "legacyCode": "L1"}) == {"id": "x"}
    assert spec.ops[1].reason == "nobody reads it since 2024"


def test_a_payload_that_is_not_an_object_is_not_migratable(spec_of):
    with pytest.raises(MessageNotMigratable) as caught:
        migrate_payload(spec_of("- {op: copy, from: /id, to: /id}"), ["id"])
    assert caught.value.pointer == "/payload"


def test_envelope_rules(v1, v2, spec_of, real_raw, catalog):
    spec = spec_of(json.dumps(real_raw))
    old = next(f.document for f in v1.fixtures if f.valid)

    new = migrate_envelope(spec, old, v2)

    assert new["metadata"] == {
        **old["metadata"],
        "messageType": "billing.invoice-issued.v2",
        "schemaVersion": 2,
        "messageVersion": v2.version,
    }
    assert list(new) == ["metadata", "payload"]


def test_an_envelope_of_another_type_is_not_migratable(v2, spec_of, real_raw, catalog):
    spec = spec_of(json.dumps(real_raw))
    other = next(f.document for f in catalog.get("billing.generate-invoice.v1").fixtures if f.valid)
    with pytest.raises(MessageNotMigratable) as caught:
        migrate_envelope(spec, other, v2)
    assert caught.value.pointer == "/metadata/messageType"
    with pytest.raises(MessageNotMigratable) as caught:
        migrate_envelope(spec, {"payload": {}}, v2)
    assert caught.value.pointer == "/metadata"


def test_migrating_into_another_contract_than_the_spec_names_is_a_spec_error(v1, spec_of, real_raw):
    spec = spec_of(json.dumps(real_raw))
    with pytest.raises(MigrationSpecError) as caught:
        migrate_envelope(spec, next(f.document for f in v1.fixtures), v1)
    assert caught.value.problems[0].pointer == "/to"


@pytest.mark.parametrize(
    ("ops", "payload", "pointer"),
    [
        (AMOUNT, {"amount": "4242.98765", "currency": "EUR"}, "/payload/amount"),  # too many decimals
        (AMOUNT, {"amount": "4242,98765", "currency": "EUR"}, "/payload/amount"),  # not a decimal string
        (  # no exponent for the currency
            "- {op: decimalToMinorUnits, from: /a, to: /m, currencyFrom: /c, exponents: {JPY: 0}}",
            {"a": "7", "c": "ZZ4242"},
            "/payload/c",
        ),
        ("- {op: minorUnitsToDecimal, from: /m, to: /a, exponentFrom: /e}", {"m": 7, "e": "4242"}, "/payload/e"),
        ("- {op: mapEnum, from: /state, to: /status, mapping: {OPEN: ISSUED}}", {"state": "X4242X"}, "/payload/state"),
    ],
)
def test_a_refusal_names_the_rule_and_the_pointer_and_never_the_value(spec_of, ops, payload, pointer):
    """The reason and the message go into dead-letter and parking-lot headers and into evidence: no value of the
    message in them. Only ``described``, for the author of a file checked locally, shows it."""
    with pytest.raises(MessageNotMigratable) as caught:
        migrate_payload(spec_of(ops), payload)
    error = caught.value
    assert error.pointer == pointer and pointer in error.reason
    assert "4242" not in error.reason and "4242" not in str(error)
    assert "4242" in error.described


def test_a_message_error_is_not_a_spec_error():
    """The bridge parks a bad message but stops on a bad spec: one must not be caught as the other."""
    assert issubclass(MessageNotMigratable, ContractPlatformError)
    assert not issubclass(MessageNotMigratable, MigrationSpecError)
    error = MessageNotMigratable("has 3 decimal places", "/payload/amount")
    assert (error.reason, error.pointer) == ("has 3 decimal places", "/payload/amount")

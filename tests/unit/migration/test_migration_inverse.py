"""A migration.yaml read backwards (migration.inverse): the newer major read as the older one, op by op, refused
with the op named where the forward op loses what the older major needs."""

from __future__ import annotations

import json

import pytest

from contract_platform.errors import MessageNotMigratable, MigrationSpecError
from contract_platform.migration import check_spec, migrate_envelope, migrate_payload
from contract_platform.migration.checking import _writes
from contract_platform.migration.inverse import read_backwards

S = {"type": "string"}
I = {"type": "integer"}  # noqa: E741


def test_the_catalogues_invoice_migration_reads_every_v2_fixture_back_as_its_v1_fixture(
    spec_of, real_raw, v1, v2, validator
):
    inverse = read_backwards(spec_of(json.dumps(real_raw)), v2)

    assert (inverse.source, inverse.target) == (v2.message_type, v1.message_type)
    assert check_spec(inverse, v2, v1, validator) == []  # fixtures included: each v2 fixture becomes its v1 twin
    twins = {f.name: f.document for f in v1.fixtures if f.valid}
    for fixture in (f for f in v2.fixtures if f.valid):
        back = migrate_envelope(inverse, fixture.document, v1)
        assert back["payload"] == twins[fixture.name]["payload"]
        assert back["metadata"]["messageId"] == fixture.document["metadata"]["messageId"]  # the same business fact
        assert (back["metadata"]["messageType"], back["metadata"]["schemaVersion"]) == (v1.message_type, 1)


@pytest.mark.parametrize(
    ("minor_units", "exponent", "amount"),
    [(12995, 2, "129.95"), (15800, 0, "15800"), (42125, 3, "42.125"), (-1230, 2, "-12.30"), (5, 2, "0.05")],
)
def test_minor_units_are_read_back_as_the_exact_decimal_with_the_exponents_places(
    spec_of, minor_units, exponent, amount, newer
):
    forward = spec_of(
        "- {op: decimalToMinorUnits, from: /amount, to: /minor, exponentTo: /exp, defaultExponent: 2, currencyFrom: /currency}\n- {op: copy, from: /currency, to: /currency}"
    )
    backward = read_backwards(forward, newer(forward))

    assert migrate_payload(backward, {"minor": minor_units, "exp": exponent, "currency": "EUR"}) == {
        "amount": amount,
        "currency": "EUR",
    }


def test_without_exponent_field_the_exponent_is_looked_up_again_from_the_carried_currency(spec_of, newer):
    forward = spec_of(
        "- {op: decimalToMinorUnits, from: /amount, to: /minor, currencyFrom: /currency, exponents: {JPY: 0},"
        " defaultExponent: 2}\n- {op: copy, from: /currency, to: /ccy}"
    )
    backward = read_backwards(forward, newer(forward))

    assert migrate_payload(backward, {"minor": 1580, "ccy": "JPY"}) == {"amount": "1580", "currency": "JPY"}
    assert migrate_payload(backward, {"minor": 1580, "ccy": "EUR"}) == {"amount": "15.80", "currency": "EUR"}


def test_a_minor_unit_amount_that_is_not_an_integer_is_not_migratable_at_its_pointer(spec_of, newer):
    forward = spec_of("- {op: decimalToMinorUnits, from: /amount, to: /minor, exponent: 2}")
    backward = read_backwards(forward, newer(forward))

    for bad in ("12995", 129.95, True, None, [1]):
        with pytest.raises(MessageNotMigratable) as caught:
            migrate_payload(backward, {"minor": bad})
        assert caught.value.pointer == "/payload/minor"


def test_an_exponent_field_out_of_range_is_not_migratable_at_its_pointer(spec_of, newer):
    forward = spec_of("- {op: decimalToMinorUnits, from: /amount, to: /minor, exponentTo: /exp, exponent: 2}")
    backward = read_backwards(forward, newer(forward))
    assert migrate_payload(backward, {"minor": 5, "exp": 7}) == {"amount": "0.05"}  # the fixed exponent wins

    forward = spec_of(
        "- {op: decimalToMinorUnits, from: /amount, to: /minor, exponentTo: /exp, currencyFrom: /c, defaultExponent: 2}"
    )
    backward = read_backwards(forward, newer(forward))
    for bad in (-1, 19, "2", 2.0):
        with pytest.raises(MessageNotMigratable) as caught:
            migrate_payload(backward, {"minor": 5, "exp": bad})
        assert caught.value.pointer == "/payload/exp"


def test_a_one_to_one_enum_mapping_is_turned_round(spec_of, newer):
    forward = spec_of("- {op: mapEnum, from: /state, to: /status, mapping: {OPEN: ISSUED, DONE: PAID}}")
    backward = read_backwards(forward, newer(forward))

    assert migrate_payload(backward, {"status": "PAID"}) == {"state": "DONE"}
    with pytest.raises(MessageNotMigratable):  # a value the newer major added has no older name
        migrate_payload(backward, {"status": "VOID"})


@pytest.mark.parametrize(
    ("ops", "pointer", "gist"),
    [
        ("- {op: toString, from: /n, to: /text}", "/payload/0", "does not say which JSON number"),
        ("- {op: mapEnum, from: /s, to: /t, mapping: {A: X, B: X}}", "/payload/0/mapping", "both become 'X'"),
        ("- {op: mapEnum, from: /s, to: /t, mapping: {A: X}, default: Y}", "/payload/0/default", "folds every"),
        ("- {op: mapEnum, from: /s, to: /t, mapping: {A: 1}}", "/payload/0/mapping", "not a string"),
        (
            "- {op: decimalToMinorUnits, from: /amount, to: /minor, currencyFrom: /currency, defaultExponent: 2}",
            "/payload/0/currencyFrom",
            "no op carries",
        ),
    ],
)
def test_an_op_that_loses_what_the_older_major_had_is_refused_at_the_op(spec_of, ops, pointer, gist, newer):
    forward = spec_of(ops + "\n- {op: copy, from: /keep, to: /keep}")

    with pytest.raises(MigrationSpecError) as caught:
        read_backwards(forward, newer(forward))

    assert [(p.pointer, gist in p.message) for p in caught.value.problems] == [(pointer, True)]


def test_fields_only_the_newer_major_has_are_dropped_and_a_field_only_the_older_had_is_refused_by_the_check(
    spec_of, toy
):
    v1, v2, validator = toy({"id": S, "legacy": S}, {"id": S, "region": S, "added": I}, optional_old=())
    forward = spec_of(
        "- {op: copy, from: /id, to: /id}\n- {op: constant, to: /region, value: eu}\n"
        "- {op: drop, from: /legacy, reason: nobody reads it}"
    )
    backward = read_backwards(forward, v2)

    assert migrate_payload(backward, {"id": "a", "region": "eu", "added": 3}) == {"id": "a"}
    problems = check_spec(backward, v2, v1, validator)
    assert [p.message for p in problems if "/legacy" in p.message] == [
        "toy.thing.v1 requires /legacy but no op produces it; add a copy, a conversion, a default or a constant"
    ]
    assert not [p for p in problems if "neither used" in p.message]  # /region and /added are dropped, with reasons


@pytest.fixture()
def newer(toy):
    """``newer(spec)``: a real ``toy.thing.v2`` contract whose payload has exactly the fields ``spec`` writes."""

    def make(spec):
        written = {pointer.strip("/").split("/")[0] for op in spec.ops for pointer, _ in _writes(op)}
        return toy({}, {name: {} for name in sorted(written)})[1]

    return make


def test_minor_units_to_decimal_is_an_op_of_the_language_with_its_exponent_given_one_way(spec_of):
    spec = spec_of("- {op: minorUnitsToDecimal, from: /minor, to: /amount, exponentFrom: /exp}")
    assert migrate_payload(spec, {"minor": 12995, "exp": 2}) == {"amount": "129.95"}

    for ops, gist in [
        ("- {op: minorUnitsToDecimal, from: /minor, to: /amount}", "needs an exponent"),
        ("- {op: minorUnitsToDecimal, from: /minor, to: /amount, exponent: 2, exponentFrom: /e}", "one way"),
        (
            "- {op: minorUnitsToDecimal, from: /minor, to: /amount, exponentFrom: /e, defaultExponent: 2}",
            "only applies",
        ),
        ("- {op: decimalToMinorUnits, from: /amount, to: /minor, exponentFrom: /e}", "unknown key 'exponentFrom'"),
    ]:
        with pytest.raises(MigrationSpecError) as caught:
            spec_of(ops)
        assert any(gist in p.message for p in caught.value.problems), (ops, caught.value.problems)

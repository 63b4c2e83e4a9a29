"""check_spec: a spec that does not fit its two contracts is refused before anything runs, with every problem."""

from __future__ import annotations

import json

import pytest

from contract_platform.migration import check_spec

S = {"type": "string"}
I = {"type": "integer"}  # noqa: E741


def ops_of(raw: dict) -> list[dict]:
    return raw["payload"]


def index_of(raw: dict, **match: str) -> int:
    return next(i for i, op in enumerate(ops_of(raw)) if all(op.get(k) == v for k, v in match.items()))


def check(spec_of, raw, source, target, validator):
    spec = spec_of(json.dumps(raw))
    return check_spec(spec, source, target, validator)


def found(problems) -> set[tuple[str, str]]:
    return {(p.pointer, p.message) for p in problems}


def test_a_required_v2_field_produced_by_no_op(spec_of, real_raw, v1, v2, validator):
    del ops_of(real_raw)[index_of(real_raw, op="copy", to="/aggregateVersion")]
    ops_of(real_raw).append({"op": "drop", "from": "/aggregateVersion", "reason": "test"})

    [problem] = check(spec_of, real_raw, v1, v2, validator)

    assert problem.file.endswith("v2/migration.yaml") and problem.pointer == "/payload"
    assert "requires /aggregateVersion but no op produces it" in problem.message


def test_a_v1_field_neither_used_nor_dropped(spec_of, real_raw, v1, v2, validator):
    ops_of(real_raw)[index_of(real_raw, op="copy", to="/billingEmail")] = {
        "op": "constant",
        "to": "/billingEmail",
        "value": "billing@example.com",
    }

    [problem] = check(spec_of, real_raw, v1, v2, validator)
    assert problem.pointer == "/payload"
    assert "field /billingEmail is neither used by an op nor dropped" in problem.message

    ops_of(real_raw).append({"op": "drop", "from": "/billingEmail", "reason": "PII; v2 consumers look it up"})
    problems = check(spec_of, real_raw, v1, v2, validator)
    # The spec now checks clean, so the fixtures run: their v2 twins still hold the real e-mail addresses.
    assert sorted((p.file, p.pointer) for p in problems) == sorted(
        (str(f.path), "/payload/billingEmail") for f in v2.fixtures if f.valid
    )


@pytest.mark.parametrize(
    ("op", "key", "gist"),
    [
        (
            {"op": "copy", "from": "/amount", "to": "/amountMinorUnits"},
            "to",
            "(string) into /amountMinorUnits (integer)",
        ),
        ({"op": "toString", "from": "/amount", "to": "/amountMinorUnits"}, "from", "/amount is string"),
        (
            {"op": "decimalToMinorUnits", "from": "/aggregateVersion", "to": "/amountMinorUnits", "exponent": 2},
            "from",
            "reads a decimal string, but /aggregateVersion is integer",
        ),
        (
            {"op": "decimalToMinorUnits", "from": "/amount", "to": "/currency", "exponent": 2},
            "to",
            "writes an integer, but /currency is string",
        ),
    ],
)
def test_types_that_do_not_line_up(spec_of, real_raw, v1, v2, validator, op, key, gist):
    ops_of(real_raw).append(op)
    problems = check(spec_of, real_raw, v1, v2, validator)
    at = f"/payload/{len(ops_of(real_raw)) - 1}/{key}"
    assert [p.pointer for p in problems if gist in p.message] == [at], problems


def test_map_enum_values_must_be_in_the_target_enum(spec_of, real_raw, v1, v2, validator):
    at = index_of(real_raw, to="/status")
    ops_of(real_raw)[at] = {
        "op": "mapEnum",
        "from": "/status",
        "to": "/status",
        "mapping": {"ISSUED": "OPEN", "PAID": "PAID", "CANCELLED": "VOID"},
    }
    assert found(check(spec_of, real_raw, v1, v2, validator)) == {
        (
            f"/payload/{at}/mapping/ISSUED",
            "'OPEN' is not valid for /status: 'OPEN' is not one of ['ISSUED', 'PAID', 'VOID']",
        ),
        (f"/payload/{at}/mapping/CANCELLED", "'CANCELLED' is not a value of /status"),
        (f"/payload/{at}/mapping", "values ['VOID'] of /status have no mapping and there is no default"),
    }


def test_a_constant_or_default_that_does_not_validate_against_the_target(spec_of, real_raw, v1, v2, validator):
    ops_of(real_raw)[index_of(real_raw, op="decimalToMinorUnits")].pop("exponentTo")
    ops_of(real_raw).append({"op": "constant", "to": "/currencyExponent", "value": 7})
    ops_of(real_raw).append({"op": "default", "to": "/dueDate", "value": "next month"})
    last = len(ops_of(real_raw)) - 1

    problems = check(spec_of, real_raw, v1, v2, validator)

    assert [p.pointer for p in problems] == [f"/payload/{last - 1}/value", f"/payload/{last}/value"]
    assert "7 is greater than the maximum of 4" in problems[0].message
    assert "is not a 'date'" in problems[1].message


def test_exponents_must_validate_against_the_exponent_field(spec_of, real_raw, v1, v2, validator):
    at = index_of(real_raw, op="decimalToMinorUnits")
    ops_of(real_raw)[at]["exponents"]["XBT"] = 8
    [problem] = check(spec_of, real_raw, v1, v2, validator)
    assert problem.pointer == f"/payload/{at}/exponents/XBT"


def test_from_naming_the_wrong_contract(spec_of, real_raw, catalog, v2, validator):
    problems = check(spec_of, real_raw, catalog.get("billing.generate-invoice.v1"), v2, validator)
    assert problems[0].pointer == "/from"
    assert "billing.generate-invoice.v1" in problems[0].message


def test_fields_that_the_schemas_do_not_have(spec_of, real_raw, v1, v2, validator):
    ops_of(real_raw).append({"op": "copy", "from": "/amount", "to": "/amountText"})
    ops_of(real_raw).append({"op": "drop", "from": "/legacy", "reason": "gone"})
    last = len(ops_of(real_raw)) - 1
    problems = found(check(spec_of, real_raw, v1, v2, validator))
    assert (f"/payload/{last - 1}/to", "billing.invoice-issued.v2 has no payload field /amountText") in problems
    assert (f"/payload/{last}/from", "billing.invoice-issued.v1 has no payload field /legacy") in problems


def test_a_migrated_fixture_that_does_not_validate_is_reported_with_fixture_and_pointer(
    spec_of, real_raw, v1, v2, validator
):
    ops_of(real_raw)[index_of(real_raw, to="/orderId")] = {"op": "copy", "from": "/customerId", "to": "/orderId"}
    ops_of(real_raw).append({"op": "drop", "from": "/orderId", "reason": "test"})

    problems = check(spec_of, real_raw, v1, v2, validator)

    assert sorted((p.file, p.pointer) for p in problems) == sorted(
        (str(f.path), "/payload/orderId") for f in v1.fixtures if f.valid
    )
    assert all("not a valid billing.invoice-issued.v2" in p.message and "pattern" in p.message for p in problems)


def test_every_problem_is_listed(spec_of, real_raw, catalog, v2, validator):
    ops = ops_of(real_raw)
    ops[index_of(real_raw, to="/billingEmail")] = {"op": "constant", "to": "/aggregateVersion", "value": 0}
    del ops[index_of(real_raw, to="/aggregateVersion")]
    ops[index_of(real_raw, to="/status")] = {"op": "copy", "from": "/amount", "to": "/status"}

    problems = check(spec_of, real_raw, catalog.get("billing.invoice-issued.v1"), v2, validator)

    assert all(p.file.endswith("v2/migration.yaml") for p in problems)
    messages = " | ".join(p.message for p in problems)
    for gist in (
        "requires /billingEmail but no op produces it",  # required v2 field produced by nobody
        "field /status is neither used",  # v1 fields neither used nor dropped
        "field /aggregateVersion is neither used",
        "field /billingEmail is neither used",
        "0 is not valid for /aggregateVersion",  # constant that does not validate
    ):
        assert gist in messages
    assert len(problems) == 5


# -- toy contracts: nested fields, optional sources, overwrites ---------------------------------------------------


def test_nested_fields_are_followed(spec_of, toy):
    address = {"type": "object", "required": ["street", "city"], "properties": {"street": S, "city": S}}
    customer = {"type": "object", "required": ["id", "name"], "properties": {"id": S, "name": S}}
    source, target, validator = toy({"address": address, "customerId": S}, {"customer": customer})
    spec = spec_of("""
    - {op: copy, from: /customerId, to: /customer/id}
    - {op: copy, from: /address/street, to: /customer/name}
    """)

    assert found(check_spec(spec, source, target, validator)) >= {
        (
            "/payload",
            "toy.thing.v1 field /address/city is neither used by an op nor dropped; "
            "copy or convert it, or drop it with a reason",
        ),
    }
    spec = spec_of("""
    - {op: copy, from: /customerId, to: /customer/id}
    - {op: drop, from: /address, reason: "v2 has no address"}
    """)
    assert [p.message for p in check_spec(spec, source, target, validator)] == [
        "toy.thing.v2 requires /customer/name but no op produces it; add a copy, a conversion, a default or a constant"
    ]


def test_a_required_field_fed_only_by_an_optional_one_needs_a_default(spec_of, toy):
    source, target, validator = toy({"note": S}, {"comment": S}, optional_old=("note",))
    spec = spec_of("- {op: copy, from: /note, to: /comment}")
    [problem] = check_spec(spec, source, target, validator)
    assert problem.pointer == "/payload/0/from" and "add a default" in problem.message

    spec = spec_of("- {op: copy, from: /note, to: /comment}\n- {op: default, to: /comment, value: ''}")
    assert check_spec(spec, source, target, validator) == []


def test_a_field_written_twice_or_dropped_and_read(spec_of, toy):
    source, target, validator = toy({"a": S, "b": S}, {"x": S})
    spec = spec_of("""
    - {op: copy, from: /a, to: /x}
    - {op: constant, to: /x, value: fixed}
    - {op: drop, from: /b, reason: unused}
    - {op: copy, from: /b, to: /x}
    """)
    assert found(check_spec(spec, source, target, validator)) == {
        ("/payload/1/to", "/x is already written by the op at /payload/0"),
        ("/payload/3/to", "/x is already written by the op at /payload/0"),
        ("/payload/2/from", "/b is dropped, yet the op at /payload/3 reads /b"),
    }


def test_map_enum_and_to_string_on_toy_contracts(spec_of, toy):
    source, target, validator = toy(
        {"state": {"type": "string", "enum": ["OPEN", "DONE"]}, "rate": {"type": "number"}},
        {"status": {"type": "string", "enum": ["ISSUED", "PAID", "VOID"]}, "rate": S},
    )
    spec = spec_of("""
    - {op: mapEnum, from: /state, to: /status, mapping: {OPEN: ISSUED}, default: VOID}
    - {op: toString, from: /rate, to: /rate}
    """)
    assert check_spec(spec, source, target, validator) == []

    spec = spec_of(
        "- {op: mapEnum, from: /rate, to: /status, mapping: {OPEN: ISSUED}, default: LOST}\n"
        "- {op: toString, from: /state, to: /rate}"
    )
    messages = {p.pointer: p.message for p in check_spec(spec, source, target, validator)}
    assert messages["/payload/0/from"] == "mapEnum maps strings, but /rate is number"
    assert messages["/payload/0/default"].startswith("'LOST' is not valid for /status")
    assert messages["/payload/1/from"] == "toString turns numbers into text, but /state is string"


def test_currencies_of_an_enum_need_an_exponent(spec_of, toy):
    source, target, validator = toy(
        {"amount": S, "currency": {"type": "string", "enum": ["EUR", "JPY"]}}, {"minor": I, "currency": S}
    )
    spec = spec_of("""
    - {op: decimalToMinorUnits, from: /amount, to: /minor, currencyFrom: /currency, exponents: {JPY: 0}}
    - {op: copy, from: /currency, to: /currency}
    """)
    [problem] = check_spec(spec, source, target, validator)
    assert problem.pointer == "/payload/0/exponents" and "['EUR']" in problem.message

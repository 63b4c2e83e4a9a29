"""Parsing migration.yaml: typed ops, and every problem of a bad file reported with file and JSON pointer."""

from __future__ import annotations

import pytest
import yaml

from contract_platform.errors import MigrationSpecError
from contract_platform.migration import OPS, Copy, DecimalToMinorUnits, Drop, MapEnum, parse_spec

FILE = "contracts/billing/invoice-issued/v2/migration.yaml"
HEAD = "from: billing.invoice-issued.v1\nto: billing.invoice-issued.v2\ndescription: test\n"


def problems_of(text: str) -> list[tuple[str, str]]:
    with pytest.raises(MigrationSpecError) as caught:
        parse_spec(yaml.safe_load(text), FILE)
    assert all(problem.file == FILE for problem in caught.value.problems)
    return [(problem.pointer, problem.message) for problem in caught.value.problems]


def pointers_of(text: str) -> list[str]:
    return [pointer for pointer, _ in problems_of(text)]


def test_the_real_spec_parses_into_typed_ops(v2):
    spec = parse_spec(v2.migration, str(v2.migration_file))
    assert spec.file == str(v2.migration_file)
    assert [type(op) for op in spec.ops].count(Copy) == 9
    [amount] = [op for op in spec.ops if isinstance(op, DecimalToMinorUnits)]
    assert (amount.source, amount.target, amount.exponent_target) == (
        "/amount",
        "/amountMinorUnits",
        "/currencyExponent",
    )
    assert amount.exponents["KWD"] == 3 and amount.default_exponent == 2 and amount.at == "/payload/3"


def test_ops_remember_where_they_are_and_keep_their_options():
    spec = parse_spec(
        yaml.safe_load(
            HEAD
            + """payload:
  - {op: mapEnum, from: /s, to: /s, mapping: {A: B}, default: null}
  - {op: mapEnum, from: /t, to: /t, mapping: {A: B}}
  - {op: drop, from: /x, reason: unused}
"""
        ),
        FILE,
    )
    first, second, drop = spec.ops
    assert isinstance(first, MapEnum) and first.has_default and first.default is None and first.at == "/payload/0"
    assert isinstance(second, MapEnum) and not second.has_default
    assert isinstance(drop, Drop) and drop.reason == "unused"


def test_an_unknown_op_names_the_ops_there_are():
    [(pointer, message)] = problems_of(
        HEAD + "payload:\n  - {op: copy, from: /a, to: /a}\n  - {op: rename, from: /a, to: /b}"
    )
    assert pointer == "/payload/1/op"
    assert all(name in message for name in OPS)


def test_an_op_without_to_is_refused_at_the_op():
    assert problems_of(HEAD + "payload:\n  - {op: copy, from: /a}") == [
        ("/payload/0", "copy needs `to`: the JSON pointer of the new payload field to write")
    ]


@pytest.mark.parametrize(
    ("op", "pointer"),
    [
        ("{op: copy, from: /a, to: /b, reason: x}", "/payload/0/reason"),  # a key another op has
        ("{op: drop, from: /a, reason: x, to: /b}", "/payload/0/to"),
        ("{op: copy, form: /a, to: /b}", "/payload/0/form"),  # typo; `from` is then missing too
        ("{op: constant, to: /a, value: 1, vaule: 2}", "/payload/0/vaule"),
    ],
)
def test_unknown_keys_per_op_are_refused(op, pointer):
    assert pointer in pointers_of(HEAD + f"payload:\n  - {op}")


@pytest.mark.parametrize(
    ("op", "pointer"),
    [
        ("{op: copy, from: amount, to: /a}", "/payload/0/from"),  # not a pointer
        ("{op: copy, from: /a, to: 5}", "/payload/0/to"),
        ("{op: copy, from: /a~2b, to: /a}", "/payload/0/from"),  # bad escape
        ("{op: copy, from: /a//b, to: /a}", "/payload/0/from"),  # empty segment
        ("{op: copy, from: /a, to: ''}", "/payload/0/to"),  # the whole payload
        ("{op: drop, from: /a, reason: ''}", "/payload/0/reason"),
        ("{op: drop, from: /a, reason: [x]}", "/payload/0/reason"),
        ("{op: mapEnum, from: /a, to: /a, mapping: [A, B]}", "/payload/0/mapping"),
        ("{op: mapEnum, from: /a, to: /a, mapping: {ON: OPEN}}", "/payload/0/mapping"),  # YAML reads ON as true
        ("{op: decimalToMinorUnits, from: /a, to: /b, exponent: -1}", "/payload/0/exponent"),
        ("{op: decimalToMinorUnits, from: /a, to: /b, exponent: 2.5}", "/payload/0/exponent"),
        ("{op: decimalToMinorUnits, from: /a, to: /b, exponent: true}", "/payload/0/exponent"),
        (
            "{op: decimalToMinorUnits, from: /a, to: /b, currencyFrom: /c, exponents: {JPY: x}}",
            "/payload/0/exponents/JPY",
        ),
        ("{op: decimalToMinorUnits, from: /a, to: /b, currencyFrom: /c, exponents: [JPY]}", "/payload/0/exponents"),
        ("{op: constant, to: /a, value: .nan}", "/payload/0/value"),
        ("{op: 7, from: /a, to: /a}", "/payload/0/op"),
        ("[copy, /a, /b]", "/payload/0"),
    ],
)
def test_wrong_types_are_refused_at_their_key(op, pointer):
    assert pointers_of(HEAD + f"payload:\n  - {op}") == [pointer]


@pytest.mark.parametrize(
    ("op", "pointer"),
    [
        ("{op: decimalToMinorUnits, from: /a, to: /b}", "/payload/0"),  # no exponent at all
        ("{op: decimalToMinorUnits, from: /a, to: /b, currencyFrom: /c}", "/payload/0"),
        (
            "{op: decimalToMinorUnits, from: /a, to: /b, exponent: 2, currencyFrom: /c, defaultExponent: 2}",
            "/payload/0/exponent",
        ),
        ("{op: decimalToMinorUnits, from: /a, to: /b, exponent: 2, exponents: {JPY: 0}}", "/payload/0/exponents"),
    ],
)
def test_decimal_to_minor_units_needs_exactly_one_way_to_the_exponent(op, pointer):
    assert pointers_of(HEAD + f"payload:\n  - {op}") == [pointer]


@pytest.mark.parametrize(
    ("head", "pointer", "gist"),
    [
        ("from: billing.generate-invoice.v1\nto: billing.invoice-issued.v2\n", "/from", "another message"),
        ("from: billing.invoice-issued.v2\nto: billing.invoice-issued.v2\n", "/from", "not an older major"),
        ("from: billing.invoice-issued.v3\nto: billing.invoice-issued.v2\n", "/from", "not an older major"),
        ("from: billing.invoice-issued.v1\nto: Billing.InvoiceIssued\n", "/to", "not a messageType"),
        ("to: billing.invoice-issued.v2\n", "", "missing `from`"),
    ],
)
def test_from_and_to_must_name_two_majors_of_one_message(head, pointer, gist):
    [(found, message)] = problems_of(head + "description: test\npayload:\n  - {op: copy, from: /a, to: /a}")
    assert found == pointer and gist in message


@pytest.mark.parametrize(
    ("text", "pointer"),
    [
        (HEAD + "payload: []", "/payload"),
        (HEAD + "payload: {op: copy}", "/payload"),
        (HEAD, ""),  # no payload
        (HEAD + "payload:\n  - {op: copy, from: /a, to: /a}\nsteps: []", "/steps"),
        (
            "from: billing.invoice-issued.v1\nto: billing.invoice-issued.v2\n"
            "payload:\n  - {op: copy, from: /a, to: /a}",
            "",
        ),  # no description
        ("- {op: copy, from: /a, to: /a}", ""),  # not a mapping
    ],
)
def test_the_file_shape(text, pointer):
    assert pointers_of(text) == [pointer]


def test_every_problem_is_listed_not_just_the_first():
    text = """
from: billing.generate-invoice.v1
to: billing.invoice-issued.v2
description: ""
extra: 1
payload:
  - {op: copy, from: /invoiceId}
  - {op: rename, from: /a, to: /b}
  - {op: copy, from: amount, to: /amount, typo: 1}
  - {op: mapEnum, from: /status, to: /status, mapping: {A: B}, default: [1, .inf]}
  - {op: drop, from: /billingEmail}
  - "copy /a /b"
"""
    assert pointers_of(text) == [
        "/extra",
        "/from",
        "/description",
        "/payload/0",
        "/payload/1/op",
        "/payload/2/typo",
        "/payload/2/from",
        "/payload/3/default/1",
        "/payload/4",
        "/payload/5",
    ]

"""Properties: amounts survive migration exactly; no junk spec makes the language raise anything unexpected."""

from __future__ import annotations

import contextlib
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contract_platform.envelope import EnvelopeValidator
from contract_platform.errors import MessageNotMigratable, MigrationSpecError, Problem
from contract_platform.migration import (
    OPS,
    MigrationSpec,
    check_spec,
    migrate_envelope,
    migrate_payload,
    minor_units_to_decimal,
    parse_spec,
)

EXPONENTS = {"JPY": 0, "EUR": 2, "KWD": 3, "CLF": 4}


def amount_spec() -> MigrationSpec:
    return parse_spec(
        {
            "from": "toy.thing.v1",
            "to": "toy.thing.v2",
            "description": "amounts",
            "payload": [
                {
                    "op": "decimalToMinorUnits",
                    "from": "/amount",
                    "to": "/minor",
                    "exponentTo": "/exponent",
                    "currencyFrom": "/currency",
                    "exponents": EXPONENTS,
                }
            ],
        },
        "migration.yaml",
    )


@st.composite
def amounts(draw: Any) -> tuple[str, Decimal]:
    """A currency and an amount with at most as many decimal places as the currency has."""
    currency = draw(st.sampled_from(sorted(EXPONENTS)))
    places = draw(st.integers(min_value=0, max_value=EXPONENTS[currency]))
    bound = Decimal(10) ** draw(st.integers(min_value=0, max_value=20))
    value = draw(st.decimals(min_value=-bound, max_value=bound, places=places, allow_nan=False, allow_infinity=False))
    return currency, value


@given(amounts())
def test_an_amount_migrated_then_formatted_back_is_the_same_value(case):
    currency, value = case
    result = migrate_payload(amount_spec(), {"amount": format(value, "f"), "currency": currency})
    assert result["exponent"] == EXPONENTS[currency] and isinstance(result["minor"], int)
    back = minor_units_to_decimal(result["minor"], result["exponent"])
    assert back == value
    assert back.as_tuple().exponent == -EXPONENTS[currency]  # formatted with the currency's places


@given(st.sampled_from(sorted(EXPONENTS)), st.integers(min_value=-(10**15), max_value=10**15), st.integers(1, 9))
def test_an_amount_with_one_decimal_place_too_many_is_refused(currency, whole, digit):
    places = EXPONENTS[currency] + 1
    text = format(Decimal(whole * 10 + (digit if whole >= 0 else -digit)).scaleb(-places), "f")
    with pytest.raises(MessageNotMigratable) as caught:
        migrate_payload(amount_spec(), {"amount": text, "currency": currency})
    assert caught.value.pointer == "/payload/amount"


# -- junk specs --------------------------------------------------------------------------------------------

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
junk = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=6) | st.integers() | st.booleans(), children, max_size=4)
    ),
    max_leaves=12,
)
pointers = st.sampled_from(["/amount", "/currency", "/status", "/amountMinorUnits", "/a/b", "/", "amount", "", "/x~2"])
keys = st.sampled_from(
    [
        "op",
        "from",
        "to",
        "exponentTo",
        "currencyFrom",
        "exponents",
        "defaultExponent",
        "exponent",
        "mapping",
        "default",
        "value",
        "reason",
        "typo",
    ]
)
values = (
    pointers
    | st.sampled_from(list(OPS))
    | st.integers(min_value=-2, max_value=20)
    | st.dictionaries(st.sampled_from(["JPY", "ISSUED", "PAID", "X"]), scalars, max_size=3)
    | junk
)
ops = st.dictionaries(keys, values, max_size=7) | junk
message_types = (
    st.sampled_from(["billing.invoice-issued.v1", "billing.invoice-issued.v2", "billing.generate-invoice.v1", "nope"])
    | junk
)
junk_specs = (
    st.fixed_dictionaries(
        {},
        optional={
            "from": message_types,
            "to": message_types,
            "description": st.text(max_size=5) | junk,
            "payload": st.lists(ops, max_size=6) | junk,
            "extra": junk,
        },
    )
    | junk
)

# Specs that often parse, so the checker and the engine meet odd but well-formed ops too.
OLD_FIELDS = ["/invoiceId", "/amount", "/currency", "/status", "/aggregateVersion", "/billingEmail", "/nested/x"]
NEW_FIELDS = ["/invoiceId", "/amountMinorUnits", "/currencyExponent", "/status", "/customerId", "/new/y", "/status/z"]
VALUE_FOR = {
    "from": st.sampled_from(OLD_FIELDS),
    "currencyFrom": st.sampled_from(OLD_FIELDS),
    "to": st.sampled_from(NEW_FIELDS),
    "exponentTo": st.sampled_from(NEW_FIELDS),
    "exponentFrom": st.sampled_from(OLD_FIELDS),
    "exponents": st.dictionaries(st.sampled_from(["JPY", "EUR", "KWD"]), st.integers(0, 5), max_size=3),
    "defaultExponent": st.integers(0, 5),
    "exponent": st.integers(0, 5),
    "mapping": st.dictionaries(st.sampled_from(["ISSUED", "PAID", "VOID", "X"]), scalars, min_size=1, max_size=3),
    "default": scalars,
    "value": scalars | junk,
    "reason": st.just("why"),
}


@st.composite
def plausible_ops(draw: Any) -> dict[str, Any]:
    name = draw(st.sampled_from(list(OPS)))
    shape = OPS[name]
    op: dict[str, Any] = {"op": name}
    for key in [*shape.required, *(k for k in shape.optional if draw(st.booleans()))]:
        op[key] = draw(VALUE_FOR[key])
    if draw(st.integers(0, 9)) == 0:
        op[draw(keys)] = draw(values)  # now and then, one defect
    return op


plausible_specs = st.fixed_dictionaries(
    {
        "from": st.just("billing.invoice-issued.v1"),
        "to": st.just("billing.invoice-issued.v2"),
        "description": st.just("random"),
        "payload": st.lists(plausible_ops(), min_size=1, max_size=8),
    }
)
specs = plausible_specs | junk_specs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs)
def test_junk_specs_raise_nothing_but_migration_spec_error(catalog, raw):
    try:
        spec = parse_spec(raw, "migration.yaml")
    except MigrationSpecError as exc:
        assert exc.problems and all(isinstance(p, Problem) and p.file == "migration.yaml" for p in exc.problems)
        return
    v1, v2 = catalog.get("billing.invoice-issued.v1"), catalog.get("billing.invoice-issued.v2")
    assert all(isinstance(p, Problem) for p in check_spec(spec, v1, v2, EnvelopeValidator(catalog)))
    for fixture in v1.fixtures:
        with contextlib.suppress(MessageNotMigratable, MigrationSpecError):
            migrate_envelope(spec, fixture.document, v2)

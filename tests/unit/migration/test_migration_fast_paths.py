"""The engine's fast paths give what the plain ones give: integer amounts vs Decimal, compiled specs vs their ops."""

from __future__ import annotations

import copy
import json
import pickle
from collections import OrderedDict
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contract_platform.errors import MessageNotMigratable, MigrationSpecError
from contract_platform.migration import compile_spec, decimal_to_minor_units, migrate_envelope, migrate_payload
from contract_platform.migration.conversions import _decimal_to_minor_units_by_decimal
from contract_platform.migration.steps import copied


def outcome(function: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "value", function(*args)
    except ValueError as exc:
        return "refused", str(exc)


def exact(text: str, exponent: int) -> int | None:
    """An independent oracle: the minor units as a fraction, None when they are not a whole number."""
    scaled = Fraction(text) * Fraction(10) ** exponent
    return scaled.numerator if scaled.denominator == 1 else None


@st.composite
def decimal_texts(draw: Any) -> str:
    sign = draw(st.sampled_from(["", "-"]))
    zeros = "0" * draw(st.integers(0, 3))
    whole = str(draw(st.integers(0, 10**30) | st.integers(10**590, 10**620)))  # around the integer path's limit
    fraction = draw(st.none() | st.text("0123456789", min_size=1, max_size=12))
    trailing = "0" * draw(st.integers(0, 4))
    return f"{sign}{zeros}{whole}" + ("" if fraction is None else f".{fraction}{trailing}")


@settings(max_examples=1000, deadline=None)
@given(decimal_texts(), st.integers(min_value=0, max_value=8) | st.integers(min_value=0, max_value=30))
def test_integer_amounts_equal_decimal_amounts(text, exponent):
    fast = outcome(decimal_to_minor_units, text, exponent)
    assert fast == outcome(_decimal_to_minor_units_by_decimal, text, exponent)
    assert type(fast[1]) is (int if fast[0] == "value" else str)
    assert (fast[1] if fast[0] == "value" else None) == exact(text, exponent)


@pytest.mark.parametrize(
    ("text", "exponent", "expected"),
    [
        ("129.95", 2, 12995),
        ("129.950000", 2, 12995),  # trailing zeros: nothing to round
        ("129.9", 2, 12990),
        ("-12.30", 2, -1230),
        ("-0.00", 2, 0),
        ("-0", 0, 0),
        ("000042.5", 1, 425),
        ("0", 8, 0),
        ("15800", 0, 15800),
        ("1.00000000", 0, 1),
        ("0.00000001", 8, 1),
        ("123456789012345678901234567890.12", 2, 12345678901234567890123456789012),
        ("9" * 599, 18, int("9" * 599 + "0" * 18)),  # the longest text done with integers
        ("9" * 700, 2, int("9" * 700 + "00")),  # longer: through Decimal
        ("1.5", 19, 15 * 10**18),  # past the integer path's exponents
        ("12300", -2, 123),  # a negative exponent (never in a spec): Decimal's answer
    ],
)
def test_decimal_to_minor_units_edge_cases(text, exponent, expected):
    assert decimal_to_minor_units(text, exponent) == expected
    assert outcome(decimal_to_minor_units, text, exponent) == outcome(
        _decimal_to_minor_units_by_decimal, text, exponent
    )


@pytest.mark.parametrize(
    ("text", "exponent", "message"),
    [
        ("129.955", 2, "has 3 decimal places but the exponent is 2; it is not rounded"),
        ("-0.0010", 2, "has 3 decimal places but the exponent is 2; it is not rounded"),
        ("1.5", 0, "has 1 decimal places but the exponent is 0; it is not rounded"),
        ("0.000000001", 8, "has 9 decimal places but the exponent is 8; it is not rounded"),
        ("1" * 700 + ".001", 2, "has 3 decimal places but the exponent is 2; it is not rounded"),
    ],
)
def test_too_many_places_are_refused_by_both_paths(text, exponent, message):
    assert outcome(decimal_to_minor_units, text, exponent) == ("refused", message)
    assert outcome(_decimal_to_minor_units_by_decimal, text, exponent) == ("refused", message)


@pytest.mark.parametrize(
    "text", ["", "-", "+1", "1.", ".5", "1e3", "12,50", " 1", "1\n", "--1", "1.2.3", "NaN", "\u0661", "٣.5", 12, None]
)
def test_what_is_not_a_decimal_string_is_refused(text):
    with pytest.raises(ValueError, match="is not a decimal string such as 129.95"):
        decimal_to_minor_units(text, 2)


# -- compiled specs --------------------------------------------------------------------------------------


def test_a_spec_is_compiled_once_per_object(spec_of):
    spec = spec_of("- {op: copy, from: /id, to: /id}")
    assert compile_spec(spec) is compile_spec(spec)
    assert compile_spec(spec_of("- {op: copy, from: /id, to: /id}")) is not compile_spec(spec)
    assert pickle.loads(pickle.dumps(compile_spec(spec))).payload({"id": "x"}) == {"id": "x"}


def test_for_target_migrates_as_migrate_envelope_does(v1, v2, spec_of, real_raw):
    spec = spec_of(json.dumps(real_raw))
    migrate = compile_spec(spec).for_target(v2)
    for fixture in v1.fixtures:
        try:
            expected: Any = migrate_envelope(spec, fixture.document, v2)
        except MessageNotMigratable as exc:
            expected = (exc.reason, exc.pointer)
            with pytest.raises(MessageNotMigratable) as caught:
                migrate(fixture.document)
            assert (caught.value.reason, caught.value.pointer) == expected
        else:
            assert migrate(fixture.document) == expected
    with pytest.raises(MigrationSpecError):  # the wrong target is refused message by message, as before
        compile_spec(spec).for_target(v1)(v1.fixtures[0].document)


def test_no_value_is_shared_with_the_old_payload_or_the_spec(spec_of):
    spec = spec_of("""
    - {op: copy, from: /tags, to: /tags}
    - {op: copy, from: /lines, to: /items}
    - {op: copy, from: /meta, to: /about/meta}
    - {op: mapEnum, from: /kind, to: /kind, mapping: {A: {code: 1}}}
    - {op: default, to: /channel, value: [email, post]}
    - {op: constant, to: /source, value: {system: migration}}
    """)
    source = {"tags": ["a", "b"], "lines": [{"n": 1, "sub": [1]}], "meta": {"k": "v"}, "kind": "A"}
    before = copy.deepcopy(source)

    first = migrate_payload(spec, source)
    first["tags"].append("c")
    first["items"][0]["sub"].append(2)
    first["about"]["meta"]["k"] = "changed"
    first["channel"].append("fax")
    first["kind"]["code"] = 9
    first["source"]["system"] = "changed"

    assert source == before
    assert migrate_payload(spec, source) == {
        "tags": ["a", "b"],
        "items": [{"n": 1, "sub": [1]}],
        "about": {"meta": {"k": "v"}},
        "kind": {"code": 1},
        "channel": ["email", "post"],
        "source": {"system": "migration"},
    }


def test_copies_run_in_file_order_and_later_ones_win(spec_of):
    spec = spec_of("""
    - {op: copy, from: /a, to: /x}
    - {op: copy, from: /b, to: /x}
    - {op: copy, from: /list/1, to: /second}
    - {op: copy, from: /x~1y, to: /tilde~0}
    - {op: copy, from: /absent, to: /x}
    """)
    assert migrate_payload(spec, {"a": 1, "b": 2, "list": [10, 20], "x/y": True}) == {
        "x": 2,
        "second": 20,
        "tilde~": True,
    }


def test_writing_under_a_field_that_is_not_an_object_is_not_migratable(spec_of):
    spec = spec_of("- {op: copy, from: /a, to: /x}\n- {op: copy, from: /b, to: /x/y/z}")
    with pytest.raises(MessageNotMigratable) as caught:
        migrate_payload(spec, {"a": [1], "b": 2})
    assert caught.value.pointer == "/payload"
    assert caught.value.reason == "cannot write /x/y/z: the new payload already holds a non-object at /x"


def test_a_default_sees_what_the_copies_wrote_even_inside_a_list(spec_of):
    spec = spec_of("- {op: copy, from: /l, to: /l}\n- {op: default, to: /l/0, value: 5}")
    with pytest.raises(MessageNotMigratable) as caught:  # /l/0 is absent from an empty list: the write fails
        migrate_payload(spec, {"l": []})
    assert "non-object at /l" in caught.value.reason
    assert migrate_payload(spec, {"l": [1]}) == {"l": [1]}


@pytest.mark.parametrize(
    "payload",
    [OrderedDict(a="1.5", c="EUR"), MappingProxyType({"a": "1.5", "c": "EUR"})],
)
def test_payloads_that_are_other_mappings_are_read_as_before(spec_of, payload):
    spec = spec_of("""
    - {op: copy, from: /a, to: /a}
    - {op: decimalToMinorUnits, from: /a, to: /m, currencyFrom: /c, exponents: {EUR: 2}}
    """)
    expected = {"a": "1.5", "m": 150} if isinstance(payload, dict) else {}  # resolve_pointer reads dicts only
    assert migrate_payload(spec, payload) == expected


def test_copied_equals_deepcopy():
    values: list[Any] = [
        "s",
        1,
        None,
        [1, "a"],
        {"a": 1},
        {"a": [1]},
        [{"a": 1}],
        OrderedDict(a=1),
        {1: "int key"},
        {(1, 2): "tuple key"},
    ]
    for value in values:
        result = copied(value)
        assert result == copy.deepcopy(value) and type(result) is type(value)
        if isinstance(value, dict | list):
            assert result is not value

"""Where a schema change lands in the envelope, and whether a consumer's read covers it (impact.pointers)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.contracts import schema_with

from contract_platform.compat import Mode, check_compatibility
from contract_platform.impact.pointers import PositionIndex, covers, format_pointer, instance_paths, parse_read


@pytest.mark.parametrize(
    ("read", "change", "covered"),
    [
        ("/payload/lines/*/sku", "/payload/lines/*/sku", True),  # the same place
        ("/payload/lines/*/sku", "/payload/lines", True),  # an ancestor: the array itself changed
        ("/payload/lines/*/sku", "/payload", True),  # the whole payload
        ("/payload/customer", "/payload/customer/email", True),  # a descendant of what is read
        ("/payload/lines/*/sku", "/payload/lines/*/price", False),  # a sibling inside the items
        ("/payload/lines/*/sku", "/payload/lines/0/sku", True),  # * stands for every index
        ("/payload/lines/0/sku", "/payload/lines/*/sku", True),
        ("/payload/lines/1/sku", "/payload/lines/0/sku", False),  # two tuple places
        ("/payload/amount", "/payload/amountMinorUnits", False),  # tokens, not text prefixes
        ("/metadata/tenantId", "/payload", False),  # the payload never holds the envelope's metadata
        ("/payload", "/payload/lines/*/sku", True),  # reading the whole payload
    ],
)
def test_a_read_covers_a_change_at_its_place_an_ancestor_or_a_descendant(read: str, change: str, covered: bool) -> None:
    assert covers(parse_read(read), parse_read(change)) is covered


ORDER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "customer": {"type": "object", "properties": {"email": {"type": "string"}}},
        "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}},
        "attributes": {"type": "object", "additionalProperties": {"type": "string"}},
        "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
    },
    "$defs": {"Line": {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}}}},
}


def _landed(old: Any, new: Any) -> dict[str, list[str]]:
    """rule at path -> the envelope pointers it lands on."""
    verdict = check_compatibility(old, new, mode=Mode.BACKWARD)
    new_index, old_index = PositionIndex(new), PositionIndex(old)
    return {
        f"{c.rule} {c.path}": [format_pointer(p) for p in instance_paths(c.path, c.message, new_index, old_index)]
        for c in verdict.changes
    }


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        # a change inside a definition lands wherever a $ref reaches it: here every line of the array
        (("$defs", "Line", "properties", "sku", "maxLength"), 8, "/payload/lines/*/sku"),
        (("properties", "customer", "properties", "email", "format"), "email", "/payload/customer/email"),
        # a map's values (additionalProperties schema): any member name, shown as *
        (("properties", "attributes", "additionalProperties", "maxLength"), 3, "/payload/attributes/*"),
        # a tuple place keeps its index
        (("properties", "pair", "prefixItems", 1, "minimum"), 0, "/payload/pair/1"),
    ],
)
def test_an_engine_path_lands_on_the_envelope_pointer_it_constrains(
    path: tuple[Any, ...], value: Any, expected: str
) -> None:
    landed = _landed(ORDER, schema_with(ORDER, *path, value=value))
    assert [pointers for pointers in landed.values()] == [[expected]]


def test_a_required_change_lands_on_the_property_it_names_not_on_the_whole_object() -> None:
    new = schema_with(ORDER, "$defs", "Line", "required", value=["qty"])
    assert _landed(ORDER, new) == {"required-added /$defs/Line/required": ["/payload/lines/*/qty"]}


def test_a_property_removed_is_placed_through_the_old_schema() -> None:
    new = schema_with(ORDER, "properties", "customer", "properties", value={})
    assert _landed(ORDER, new) == {
        "property-removed-open-model /properties/customer/properties/email": ["/payload/customer/email"]
    }


CARD = {
    "type": "object",
    "properties": {"kind": {"const": "card"}, "card": {"type": "object", "properties": {"number": {"type": "string"}}}},
    "required": ["kind", "card"],
}
IBAN = {
    "type": "object",
    "properties": {"kind": {"const": "iban"}, "iban": {"type": "string"}},
    "required": ["kind", "iban"],
}


def test_a_change_inside_a_oneof_branch_lands_on_the_field_that_branch_declares() -> None:
    payment = {"oneOf": [CARD, IBAN]}  # disjoint branches: kind tells them apart
    new = schema_with(payment, "oneOf", 1, "properties", "iban", "maxLength", value=34)
    assert _landed(payment, new) == {"max-length-added /oneOf/1/properties/iban/maxLength": ["/payload/iban"]}


def test_draft07_tuple_items_land_on_their_index() -> None:
    old = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "array",
        "items": [{"type": "string"}, {"type": "integer"}],
    }
    new = schema_with(old, "items", 1, value={"type": "integer", "maximum": 9})
    assert _landed(old, new) == {"maximum-added /items/1/maximum": ["/payload/1"]}


@pytest.mark.parametrize(
    ("read", "exists"),
    [
        ("/lines/*/sku", True),
        ("/lines/0/sku", True),
        ("/lines/*/price", False),
        ("/lines/sku", False),  # an array's items are reached through *
        ("/attributes/colour", True),  # a member an additionalProperties schema governs
        ("/pair/1", True),
        ("/pair/*", True),
        ("/customer/email", True),
        ("/customer/*", False),  # * is an array item, and customer is an object
        ("", True),
    ],
)
def test_a_read_resolves_through_refs_items_and_map_values(read: str, exists: bool) -> None:
    assert PositionIndex(ORDER).resolves(parse_read(read)) is exists

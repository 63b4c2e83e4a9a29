"""The metaschema check's fast path never accepts a schema jsonschema itself refuses (catalog.schemas)."""

from __future__ import annotations

import json

import pytest
from jsonschema.exceptions import SchemaError

from contract_platform.catalog.schemas import DRAFTS

SCHEMAS = [
    {"type": "object", "properties": {"id": {"type": "string", "pattern": "^ord-[0-9]+$"}}},
    {"type": "nope"},
    {"minLength": 1.0},
    {"minLength": -1},
    {"pattern": "["},
    {"pattern": "(?<=a)b"},  # lookbehind: no linear-time evaluation
    {"properties": {"a": {"items": {"pattern": "(a"}}}},
    {"patternProperties": {"[": {}}},
    {"patternProperties": {"^x-": {"type": "string"}}},
    {"const": {"pattern": "("}},  # data, not a schema: a pattern there asserts nothing
    {"$schema": "not a uri"},
    {"$id": "urn:x:y#frag"},
    {"$ref": "#/$defs/a b"},
    {"$vocabulary": {"not a uri": True}},
    {"allOf": [{"enum": 3}]},
    {"$defs": {"a": {"required": ["x", "x"]}}},
]


def _verdict(check, schema) -> str | None:
    try:
        check(schema)
    except SchemaError as exc:
        return f"{list(exc.absolute_path)} {exc.message}"
    return None


@pytest.mark.parametrize("name", ["draft-06", "draft-07", "2019-09", "2020-12"])
@pytest.mark.parametrize("schema", SCHEMAS, ids=[json.dumps(s)[:40] for s in SCHEMAS])
def test_the_fast_path_agrees_with_jsonschema(name, schema):
    draft = DRAFTS[name]
    cls = draft.validator

    def jsonschema_alone(s):
        cls.check_schema(s, format_checker=cls.FORMAT_CHECKER)

    assert _verdict(draft.check_schema, schema) == _verdict(jsonschema_alone, schema)


def test_the_order_schema_is_valid_and_a_bad_one_is_named(catalog_dir):
    schema = json.loads((catalog_dir / "order/order-created/v1/payload.schema.json").read_text())
    DRAFTS["2020-12"].check_schema(schema)
    schema["properties"]["orderId"]["pattern"] = "(unclosed"
    with pytest.raises(SchemaError) as raised:
        DRAFTS["2020-12"].check_schema(schema)
    assert list(raised.value.absolute_path) == ["properties", "orderId", "pattern"]

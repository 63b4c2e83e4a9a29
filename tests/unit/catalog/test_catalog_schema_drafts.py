"""Payload schemas in every supported draft: detected from $schema, checked against their own metaschema,
references walked at schema positions only, validators that resolve nothing outside the schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from referencing.exceptions import Unresolvable

from contract_platform.catalog import load_catalog
from contract_platform.catalog.schemas import DRAFTS, dialect_of, iter_refs, schema_problems, validator_for
from contract_platform.errors import CatalogError

QA = Path("quote/quote-approved/v1")

DRAFT_SCHEMAS = {
    "draft-04": {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
                 "properties": {"n": {"type": "integer", "minimum": 0, "exclusiveMinimum": True}}},
    "draft-06": {"$schema": "http://json-schema.org/draft-06/schema#", "type": "object",
                 "properties": {"n": {"type": "integer", "exclusiveMinimum": 0}}, "propertyNames": {"maxLength": 8}},
    "draft-07": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                 "properties": {"t": {"type": "array", "items": [{"type": "string"}], "additionalItems": False}}},
    "2019-09": {"$schema": "https://json-schema.org/draft/2019-09/schema", "type": "object",
                "dependentRequired": {"a": ["b"]}, "unevaluatedProperties": True},
    "2020-12": {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                "properties": {"t": {"type": "array", "prefixItems": [{"type": "string"}], "items": False}}},
}  # fmt: skip


@pytest.mark.parametrize("name", list(DRAFT_SCHEMAS))
def test_each_draft_is_detected_and_valid_under_its_own_metaschema(name: str) -> None:
    schema = DRAFT_SCHEMAS[name]
    assert dialect_of(schema) is DRAFTS[name]
    assert schema_problems("payload.schema.json", schema) == []


def test_without_schema_the_keywords_then_the_default_dialect_apply() -> None:
    assert dialect_of({"type": "string"}) is DRAFTS["2020-12"]
    assert dialect_of({"type": "string"}, default="draft-07") is DRAFTS["draft-07"]
    tuple_items = {"type": "array", "items": [{"type": "string"}]}
    assert dialect_of(tuple_items) is DRAFTS["draft-07"]  # array-form items: draft-04..07
    assert schema_problems("s.json", tuple_items) == []
    with_schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **tuple_items}
    [problem] = schema_problems("s.json", with_schema)  # $schema decides: 2020-12 items must be one schema
    assert problem.pointer == "/items" and "2020-12" in problem.message


def test_a_keyword_is_checked_with_its_own_drafts_meaning() -> None:
    boolean_exclusive = {"type": "number", "minimum": 0, "exclusiveMinimum": True}
    assert schema_problems("s.json", {"$schema": "http://json-schema.org/draft-04/schema#", **boolean_exclusive}) == []
    assert dialect_of(boolean_exclusive) is DRAFTS["draft-04"]  # only draft-04 accepts it: it reads it
    [problem] = schema_problems("s.json", {"$schema": DRAFTS["2020-12"].uri, **boolean_exclusive})
    assert problem.pointer == "/exclusiveMinimum" and "2020-12" in problem.message
    # draft-04 exclusiveMinimum: 0 is excluded; 2020-12 numeric form means the same
    draft04 = validator_for({"$schema": "http://json-schema.org/draft-04/schema#", **boolean_exclusive})
    assert not draft04.is_valid(0) and draft04.is_valid(1)


def test_an_unsupported_draft_names_the_supported_ones() -> None:
    [problem] = schema_problems("s.json", {"$schema": "http://json-schema.org/draft-03/schema#"})
    assert problem.pointer == "/$schema" and "draft-04" in problem.message and "2020-12" in problem.message


@pytest.mark.parametrize("schema", [True, False])
def test_boolean_schemas_are_schemas(schema: bool) -> None:
    assert schema_problems("s.json", schema) == []
    assert validator_for(schema).is_valid({"any": "thing"}) is schema


def test_references_are_found_at_schema_positions_only() -> None:
    schema = {
        "properties": {"const": {"$ref": "#/$defs/a"}, "enum": {"$dynamicRef": "#/$defs/a"}},
        "$defs": {"a": {"type": "string", "default": {"$ref": "not-a-reference"}}},
        "const": {"$ref": "data, not a reference"},
        "examples": [{"$ref": "data too"}],
        "dependentSchemas": {"x": {"$recursiveRef": "#"}},
    }
    found = {(ref.pointer, ref.keyword) for ref in iter_refs(schema)}
    assert found == {
        ("/properties/const/$ref", "$ref"),
        ("/properties/enum/$dynamicRef", "$dynamicRef"),
        ("/dependentSchemas/x/$recursiveRef", "$recursiveRef"),
    }


@pytest.mark.parametrize(
    ("ref", "allowed"),
    [
        ("#/$defs/a", True),
        ("urn:example:root#/$defs/a", True),  # the schema's own $id
        ("#here", True),
        ("http://127.0.0.1:9/schema.json", False),
        ("file:///etc/hostname", False),
        ("other.json", False),
        ("urn:example:other", False),
    ],
)
def test_a_reference_may_only_name_the_schemas_own_resources(ref: str, allowed: bool) -> None:
    schema = {"$id": "urn:example:root", "properties": {"p": {"$ref": ref}}, "$defs": {"a": {"$anchor": "here"}}}
    problems = schema_problems("s.json", schema)
    assert (problems == []) is allowed
    if not allowed:
        assert problems[0].pointer == "/properties/p/$ref" and "forbidden reference" in problems[0].message


def test_validators_never_retrieve_a_reference() -> None:
    validator = validator_for({"properties": {"a": {"$ref": "http://127.0.0.1:9/never.json"}}})
    with pytest.raises(Unresolvable):
        validator.is_valid({"a": 1})


def _replace_payload_schema(catalog: Path, schema: Any) -> Path:
    path = catalog / QA / "payload.schema.json"
    path.write_text(json.dumps(schema))
    return path


def test_the_loader_accepts_a_draft07_payload_schema(catalog_copy: Path) -> None:
    original = json.loads((catalog_copy / QA / "payload.schema.json").read_text())
    _replace_payload_schema(catalog_copy, {**original, "$schema": "http://json-schema.org/draft-07/schema#"})
    contract = load_catalog(catalog_copy).contracts["quote.quote-approved.v1"]
    assert contract.payload_schema["$schema"].startswith("http://json-schema.org/draft-07")


def test_the_loader_reports_a_forbidden_reference_with_file_and_pointer(catalog_copy: Path) -> None:
    original = json.loads((catalog_copy / QA / "payload.schema.json").read_text())
    original["properties"]["const"] = {"$ref": "http://127.0.0.1:9/const.json"}
    path = _replace_payload_schema(catalog_copy, original)
    with pytest.raises(CatalogError) as raised:
        load_catalog(catalog_copy)
    assert any(p.file == str(path) and p.pointer == "/properties/const/$ref" for p in raised.value.problems)


@pytest.mark.parametrize("schema", [True, False])
def test_a_boolean_payload_schema_keeps_its_meaning_in_the_catalogue(catalog_copy: Path, schema: bool) -> None:
    _replace_payload_schema(catalog_copy, schema)
    contract = load_catalog(catalog_copy).contracts["quote.quote-approved.v1"]
    assert validator_for(contract.payload_schema).is_valid({"quoteId": "q-1"}) is schema

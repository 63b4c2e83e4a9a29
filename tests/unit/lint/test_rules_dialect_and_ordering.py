"""The dialect a payload schema is read in (catalog.yaml's defaultDialect, --default-dialect), the lint
finding for a schema mixing both draft families, and partitionKey required only by its ordering key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contract_platform.catalog import load_catalog
from contract_platform.cli.main import main
from contract_platform.docs.markdown import render_contract_page
from contract_platform.errors import CatalogError
from contract_platform.lint import RuleId, lint_catalog

OC = "order/order-created/v1"


def _findings(root: Path, rule: RuleId, **load: Any) -> list[Any]:
    return [f for f in lint_catalog(load_catalog(root, **load)) if f.rule is rule]


def _edit_schema(root: Path, change: Any) -> None:
    """Change the schema after dropping its $schema and spelling its $defs as definitions (every draft's)."""
    path = root / OC / "payload.schema.json"
    schema = json.loads(path.read_text().replace('"$defs"', '"definitions"').replace("#/$defs/", "#/definitions/"))
    del schema["$schema"]
    change(schema)
    path.write_text(json.dumps(schema))


def _drop_partition_keys(root: Path) -> None:
    for path in (root / OC / "fixtures" / "valid").glob("*.json"):
        envelope = json.loads(path.read_text())
        envelope["metadata"].pop("partitionKey", None)
        path.write_text(json.dumps(envelope))


def test_partition_key_is_required_when_the_ordering_key_is_that_field(catalog_copy: Path) -> None:
    _drop_partition_keys(catalog_copy)
    found = _findings(catalog_copy, RuleId.FIXTURE_METADATA)
    assert found and all(f.pointer == "/metadata/partitionKey" for f in found)


def test_partition_key_is_not_required_when_the_ordering_key_points_into_the_payload(catalog_copy: Path) -> None:
    contract_file = catalog_copy / OC / "contract.yaml"
    text = contract_file.read_text()
    assert "key: /metadata/partitionKey" in text
    contract_file.write_text(text.replace("key: /metadata/partitionKey", "key: /payload/orderId", 1))
    _drop_partition_keys(catalog_copy)
    assert _findings(catalog_copy, RuleId.FIXTURE_METADATA) == []


def test_a_schema_mixing_both_draft_families_is_a_finding_with_its_pointer(catalog_copy: Path) -> None:
    def mix(schema: dict[str, Any]) -> None:
        schema["properties"]["tags"] = {"type": "array", "items": [{"type": "string"}], "description": "Tags."}
        schema["dependentRequired"] = {"tags": ["orderId"]}

    _edit_schema(catalog_copy, mix)
    [finding] = _findings(catalog_copy, RuleId.SCHEMA_DIALECT_MIXED)
    assert finding.file.endswith("payload.schema.json")
    assert finding.pointer == "/dependentRequired"
    assert "array-form items at /properties/tags/items" in finding.message


def test_one_family_is_no_finding_and_the_dialect_is_on_the_docs_page(catalog_copy: Path) -> None:
    def draft07(schema: dict[str, Any]) -> None:
        schema["properties"]["tags"] = {"type": "array", "items": [{"type": "string"}], "description": "Tags."}

    _edit_schema(catalog_copy, draft07)
    catalog = load_catalog(catalog_copy)
    assert [f for f in lint_catalog(catalog) if f.rule is RuleId.SCHEMA_DIALECT_MIXED] == []
    contract = catalog.contracts["order.order-created.v1"]
    assert contract.dialect == "draft-07 (no $schema; array-form items at /properties/tags/items)"
    assert contract.payload_schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert "Schema dialect: draft-07 (no $schema; array-form items" in render_contract_page(contract, catalog)


def test_the_catalogue_sets_the_default_dialect_and_the_option_overrides_it(catalog_copy: Path) -> None:
    _edit_schema(catalog_copy, lambda schema: None)
    assert load_catalog(catalog_copy).contracts["order.order-created.v1"].dialect.startswith("2020-12 (")
    (catalog_copy / "catalog.yaml").write_text("defaultDialect: draft-07\n")
    catalog = load_catalog(catalog_copy)
    assert catalog.default_dialect == "draft-07"
    assert catalog.contracts["order.order-created.v1"].dialect.startswith("draft-07 (no $schema, no draft")
    overridden = load_catalog(catalog_copy, default_dialect="2019-09")
    assert overridden.contracts["order.order-created.v1"].payload_schema["$schema"].endswith("2019-09/schema")


@pytest.mark.parametrize(
    ("text", "pointer"),
    [("defaultDialect: draft-03\n", "/defaultDialect"), ("defaultDialekt: draft-07\n", "/defaultDialekt")],
)
def test_a_bad_catalogue_setting_names_file_and_key(catalog_copy: Path, text: str, pointer: str) -> None:
    (catalog_copy / "catalog.yaml").write_text(text)
    with pytest.raises(CatalogError) as raised:
        load_catalog(catalog_copy)
    [problem] = raised.value.problems
    assert problem.file.endswith("catalog.yaml") and problem.pointer == pointer


def test_lint_and_check_take_the_default_dialect_option(catalog_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", str(catalog_copy), "--default-dialect", "draft-07"]) == 0
    assert main(["check", str(catalog_copy), "--default-dialect", "draft-04", "--format", "json"]) == 0
    capsys.readouterr()

"""consumers[].reads / readerSchema in the catalogue: loaded, linted (consumer-reads, consumer-reader-schema,
consumer-reads-everything), and shown per consumer by ``contractctl diff``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contract_platform.catalog import load_catalog
from contract_platform.cli.main import main
from contract_platform.lint import RuleId, Severity, lint_catalog

ORDER = "order/order-created/v1"
BILLING_READS = "reads: [/payload/orderId, /payload/customerId"


def _edit(root: Path, old: str, new: str, folder: str = ORDER) -> None:
    path = root / folder / "contract.yaml"
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def _findings(root: Path, rule: RuleId) -> list:
    return [f for f in lint_catalog(load_catalog(root)) if f.rule is rule]


def test_the_demo_catalogue_declares_what_every_consumer_reads(catalog) -> None:
    assert all(consumer.reads for contract in catalog for consumer in contract.consumers)
    fulfilment = catalog.get("order.order-created.v1").consumers[1]
    assert "/payload/lineItems/*/sku" in fulfilment.reads
    assert (fulfilment.team, fulfilment.contact) == ("fulfillment-ops", "fulfillment-ops@example.com")


def test_a_read_that_names_no_field_is_an_error_at_its_pointer(catalog_copy: Path) -> None:
    _edit(
        catalog_copy, BILLING_READS, "reads: [/payload/lineItems/*/price, /payload/lineItems/sku, /payload/customerId"
    )
    findings = _findings(catalog_copy, RuleId.CONSUMER_READS)
    assert [f.pointer for f in findings] == ["/consumers/0/reads/0", "/consumers/0/reads/1"]
    assert findings[0].severity is Severity.ERROR
    assert "'/payload/lineItems/*/price'" in findings[0].message


def test_a_consumer_with_neither_reads_nor_reader_schema_reads_everything(catalog_copy: Path) -> None:
    _edit(catalog_copy, BILLING_READS, "x-drop: [/payload/orderId, /payload/customerId")
    path = catalog_copy / ORDER / "contract.yaml"
    path.write_text("\n".join(line for line in path.read_text().splitlines() if "x-drop" not in line) + "\n")
    [finding] = _findings(catalog_copy, RuleId.CONSUMER_READS_EVERYTHING)
    assert (finding.pointer, finding.severity) == ("/consumers/0", Severity.INFO)
    assert "billing-service" in finding.message
    assert load_catalog(catalog_copy).get("order.order-created.v1").consumers[0].reads is None


@pytest.mark.parametrize(
    ("declared", "content", "says"),
    [
        ("../../../envelope/envelope.v1.schema.json", None, "outside the contract folder"),
        ("/etc/hostname", None, "outside the contract folder"),
        ("readers/missing.schema.json", None, "file is missing"),
        ("readers/billing.schema.json", "{not json", "not usable JSON"),
        ("readers/billing.schema.json", json.dumps({"type": "object", "required": "orderId"}), "is not of type"),
    ],
)
def test_a_reader_schema_must_be_a_file_of_the_contract_folder_that_compiles(
    catalog_copy: Path, declared: str, content: str | None, says: str
) -> None:
    if content is not None:
        (catalog_copy / ORDER / "readers").mkdir()
        (catalog_copy / ORDER / declared).write_text(content)
    _edit(catalog_copy, BILLING_READS, f"readerSchema: {declared}\n    {BILLING_READS}")
    findings = _findings(catalog_copy, RuleId.CONSUMER_READER_SCHEMA)
    assert findings and says in findings[0].message
    assert findings[0].severity is Severity.ERROR


def test_a_reader_schema_that_compiles_is_loaded_and_clean(catalog_copy: Path) -> None:
    (catalog_copy / ORDER / "reader.schema.json").write_text(
        json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"})
    )
    _edit(catalog_copy, BILLING_READS, f"readerSchema: reader.schema.json\n    {BILLING_READS}")
    assert _findings(catalog_copy, RuleId.CONSUMER_READER_SCHEMA) == []
    consumer = load_catalog(catalog_copy).get("order.order-created.v1").consumers[0]
    assert consumer.reader_schema_document["type"] == "object"


def test_the_readers_perspective_is_read_from_the_compatibility_object(catalog_copy: Path) -> None:
    _edit(catalog_copy, "compatibility: BACKWARD", "compatibility: {mode: BACKWARD, perspective: readers}")
    contract = load_catalog(catalog_copy).get("order.order-created.v1")
    assert (contract.compatibility, contract.compatibility_perspective) == ("BACKWARD", "readers")


def _diff(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    try:
        code = main(["diff", *argv, "--format", "json"])
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, json.loads(capsys.readouterr().out)


def test_diff_names_the_broken_consumer_with_its_owner(capsys: pytest.CaptureFixture[str], catalog_copy: Path) -> None:
    schema_file = catalog_copy / ORDER / "payload.schema.json"
    candidate = catalog_copy.parent / "candidate.json"
    schema = json.loads(schema_file.read_text())
    schema["$defs"]["OrderLine"]["properties"]["sku"]["maxLength"] = 8  # fulfilment reads lineItems/*/sku
    candidate.write_text(json.dumps(schema))
    code, document = _diff(capsys, str(schema_file), str(candidate), "--catalog", str(catalog_copy))
    assert code == 1
    assert document["impact"]["broken"] == ["fulfillment-service"]
    assert len(document["impact"]["changes"]) == len(document["changes"])
    [change] = [c for c in document["impact"]["changes"] if not c["compatible"]]
    assert change["pointers"] == ["/payload/lineItems/*/sku"]
    assert change["consumers"]["broken"] == ["fulfillment-service"]
    assert change["consumers"]["untouched"] == ["billing-service"]
    [fulfilment] = [c for c in document["impact"]["consumers"] if c["broken"]]
    assert (fulfilment["team"], fulfilment["contact"]) == ("fulfillment-ops", "fulfillment-ops@example.com")


def test_diff_of_two_files_outside_the_catalogue_has_no_impact(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "a.json").write_text(json.dumps({"type": "object"}))
    (tmp_path / "b.json").write_text(json.dumps({"type": "object", "maxProperties": 2}))
    code, document = _diff(capsys, str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--catalog", str(tmp_path))
    assert code == 1
    assert "impact" not in document

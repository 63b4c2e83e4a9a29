"""The loader turns contracts/ into typed objects and reports every problem with file and pointer."""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

import pytest

from contract_platform.catalog import Kind, Status, load_catalog
from contract_platform.errors import CatalogError

EXPECTED = {
    "quote.quote-approved.v1",
    "order.create-order.v1",
    "order.order-created.v1",
    "billing.generate-invoice.v1",
    "billing.invoice-issued.v1",
    "billing.invoice-issued.v2",
}


def problems_of(root: Path) -> list[str]:
    with pytest.raises(CatalogError) as caught:
        load_catalog(root)
    return [str(p) for p in caught.value.problems]


def test_real_catalogue_loads_into_typed_contracts(catalog):
    assert {c.message_type for c in catalog} == EXPECTED
    v1 = catalog.get("billing.invoice-issued.v1")
    assert v1.kind is Kind.EVENT and v1.status is Status.DEPRECATED
    assert v1.superseded_by == "billing.invoice-issued.v2" and isinstance(v1.sunset, date)
    assert v1.retention.archive == timedelta(days=90)
    assert v1.transport.routing_key == "billing.invoice.issued.v1"
    assert catalog.successor(v1).message_type == "billing.invoice-issued.v2"
    assert catalog.predecessor(catalog.get("billing.invoice-issued.v2")) is v1
    assert catalog.get("billing.invoice-issued.v2").migration["from"] == "billing.invoice-issued.v1"
    assert all(sum(f.valid for f in c.fixtures) >= 2 and sum(not f.valid for f in c.fixtures) >= 1 for c in catalog)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


QA = "quote/quote-approved/v1"


def test_unknown_key_is_reported_with_the_allowed_keys(catalog_copy):
    edit(catalog_copy / QA / "contract.yaml", "kind: event", "kind: event\nownr: typo")
    [problem] = problems_of(catalog_copy)
    assert "contract.yaml" in problem and "unknown key(s) ownr" in problem and "owner" in problem


def test_wrong_type_is_reported_at_its_pointer(catalog_copy):
    edit(catalog_copy / QA / "contract.yaml", "containsPii: false", "containsPii: nope")
    [problem] = problems_of(catalog_copy)
    assert "#/pii/containsPii" in problem and "boolean" in problem


def test_missing_payload_schema_file(catalog_copy):
    (catalog_copy / QA / "payload.schema.json").unlink()
    [problem] = problems_of(catalog_copy)
    assert problem.endswith("payload.schema.json: file is missing")


def test_invalid_json_schema_and_unresolvable_ref(catalog_copy):
    schema_file = catalog_copy / QA / "payload.schema.json"
    schema = json.loads(schema_file.read_text())
    schema["properties"]["broken"] = {"type": "strnig"}
    schema["properties"]["dangling"] = {"$ref": "#/$defs/Nothing"}
    schema_file.write_text(json.dumps(schema))
    found = problems_of(catalog_copy)
    assert any("#/properties/broken/type" in p and "not a valid JSON Schema" in p for p in found)
    assert any("#/properties/dangling/$ref" in p and "does not resolve" in p for p in found)


def test_folder_and_message_type_disagree_and_duplicates_are_named(catalog_copy):
    edit(
        catalog_copy / "billing/invoice-issued/v2/contract.yaml",
        "billing.invoice-issued.v2",
        "billing.invoice-issued.v1",
    )
    found = problems_of(catalog_copy)
    assert any("disagrees with its folder" in p for p in found)
    assert any("duplicate messageType 'billing.invoice-issued.v1'" in p and "v1/contract.yaml" in p for p in found)


def test_yaml_duplicate_keys_and_bad_durations(catalog_copy):
    edit(catalog_copy / QA / "contract.yaml", "kind: event", "kind: event\nkind: command")
    edit(catalog_copy / "order/create-order/v1/contract.yaml", "archive: 90d", "archive: ninety days")
    found = problems_of(catalog_copy)
    assert any("duplicate key 'kind'" in p and "line" in p for p in found)
    assert any("#/retention/archive" in p and "not a duration" in p for p in found)


def test_every_problem_is_reported_not_just_the_first(catalog_copy):
    (catalog_copy / QA / "payload.schema.json").unlink()
    (catalog_copy / "order/create-order/v1/fixtures/valid").joinpath("broken.json").write_text("{")
    found = problems_of(catalog_copy)
    assert len(found) == 2 and any("broken.json: not valid JSON: line 1" in p for p in found)


def test_missing_catalogue_folder(tmp_path):
    [problem] = problems_of(tmp_path / "nowhere")
    assert "catalogue folder does not exist" in problem


def test_a_command_declares_its_callers_and_an_event_may_not(catalog, catalog_copy):
    create = catalog.get("order.create-order.v1")
    assert create.kind is Kind.COMMAND and create.callers == ("quote-service",)
    assert create.producers == ("quote-service",) and create.owner.service not in create.producers
    invoice = catalog.get("billing.invoice-issued.v2")
    assert invoice.callers == () and invoice.producers == ("billing-service",)  # an event: its owner

    contract = catalog_copy / QA / "contract.yaml"
    contract.write_text(contract.read_text() + "callers: [order-service]\n")
    [problem] = problems_of(catalog_copy)
    assert f"{QA}/contract.yaml#/callers" in problem and "remove callers" in problem


def test_callers_are_a_non_empty_list_of_distinct_services(catalog_copy):
    contract = catalog_copy / "order" / "create-order" / "v1" / "contract.yaml"
    edit(contract, "callers: [quote-service]", "callers: []")
    assert any("#/callers" in p for p in problems_of(catalog_copy))
    edit(contract, "callers: []", "callers: [quote-service, quote-service]")
    assert any("#/callers" in p and "non-unique" in p for p in problems_of(catalog_copy))


def test_a_contract_declares_its_dedup_window_up_to_30_days(catalog, catalog_copy):
    assert {c.validation.dedup_window for c in catalog} == {timedelta(hours=24)}  # none declares one: 24 h

    contract = catalog_copy / "billing" / "invoice-issued" / "v1" / "contract.yaml"
    contract.write_text(contract.read_text() + "validation: {dedupWindow: 48h}\n")
    assert load_catalog(catalog_copy).get("billing.invoice-issued.v1").validation.dedup_window == timedelta(hours=48)

    edit(contract, "dedupWindow: 48h", "dedupWindow: 31d")
    [problem] = problems_of(catalog_copy)
    assert "v1/contract.yaml#/validation/dedupWindow" in problem and "30d" in problem
    edit(contract, "dedupWindow: 31d", "dedupWindow: two days")
    [problem] = problems_of(catalog_copy)
    assert "#/validation/dedupWindow" in problem and "not a duration" in problem


def test_a_catalogue_folder_whose_entries_vanish_while_listed_is_bad_input_not_a_crash() -> None:
    """``--catalog /`` or ``/proc``: process folders come and go while the loader lists them. The loader lists
    again, and says the folder is no catalogue (a CatalogError, exit 2), never a FileNotFoundError."""
    import subprocess
    import sys
    import threading

    from contract_platform.catalog import load_catalog
    from contract_platform.errors import CatalogError

    stop = threading.Event()

    def churn() -> None:  # short-lived processes: their /proc folders vanish during the listing
        while not stop.is_set():
            subprocess.run([sys.executable, "-c", "pass"], check=False)

    workers = [threading.Thread(target=churn, daemon=True) for _ in range(2)]
    for worker in workers:
        worker.start()
    try:
        for _ in range(5):
            with pytest.raises(CatalogError):
                load_catalog(Path("/proc"))
    finally:
        stop.set()
        for worker in workers:
            worker.join()

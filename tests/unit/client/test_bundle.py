"""The contract bundle: what ``contractctl export bundle`` puts in for a service, and what loading it refuses, at once.

A bundle that cannot be used fails at ``load_bundle`` with what is wrong, where (a JSON pointer into the file)
and how to get a good one; loading reads the bundle and nothing else.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tests.support.cli import run_cli
from tests.support.contracts import build_contract, catalog_of

from contract_platform.client.bundle import FORMAT_VERSION, checksum_of, load_bundle
from contract_platform.errors import BundleError, SchemaError, UsageError
from contract_platform.export.bundle import export_bundle

INVOICE_V1, INVOICE_V2 = "billing.invoice-issued.v1", "billing.invoice-issued.v2"


def write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document), "utf-8")
    return path


def resealed(document: dict[str, Any]) -> dict[str, Any]:
    """The document with its checksum made right again, as a careless tool (or an attacker) would."""
    document["checksum"] = checksum_of(document["contents"])
    return document


def test_a_service_gets_what_the_catalogue_says_it_publishes_and_consumes(catalog):
    billing = export_bundle(catalog, service="billing-service")["contents"]["contracts"]
    accounting = export_bundle(catalog, service="accounting-service")["contents"]["contracts"]

    assert {t: e["roles"] for t, e in billing.items()} == {
        INVOICE_V1: ["publishes"],  # events it owns
        INVOICE_V2: ["publishes"],
        "billing.generate-invoice.v1": ["consumes"],  # a command it owns: it carries it out
        "order.order-created.v1": ["consumes"],  # it is listed among the consumers
    }
    assert {t: e["roles"] for t, e in accounting.items()} == {INVOICE_V1: ["consumes"], INVOICE_V2: ["consumes"]}
    v2 = accounting[INVOICE_V2]
    assert v2["migration"]["from"] == INVOICE_V1
    assert sorted(v2["fixtures"]["valid"]) == sorted(f.name for f in catalog.get(INVOICE_V2).fixtures if f.valid)


def test_the_other_majors_of_a_consumed_type_come_along_to_be_read_through_migration(catalog_copy):
    from contract_platform.catalog import load_catalog

    contract = catalog_copy / "billing" / "invoice-issued" / "v1" / "contract.yaml"
    text = contract.read_text().replace(
        "  - service: accounting-service\n    queue: accounting-service.billing.invoice-issued.v1\n",
        "  - service: ledger-service\n    queue: ledger-service.billing.invoice-issued.v1\n",
    )
    contract.write_text(text)

    contracts = export_bundle(load_catalog(catalog_copy), service="accounting-service")["contents"]["contracts"]

    assert {t: e["roles"] for t, e in contracts.items()} == {INVOICE_V1: ["migrated-on-read"], INVOICE_V2: ["consumes"]}


def test_an_exported_bundle_loads_compiled_with_its_roles_routes_and_fixtures(tmp_path, catalog):
    bundle = load_bundle(write(tmp_path / "b.json", export_bundle(catalog, service="accounting-service")))

    assert bundle.service == "accounting-service"
    assert bundle.consumes() == [INVOICE_V1, INVOICE_V2]
    assert bundle.validator.accelerated  # jsonschema-rs validators built at load, not at the first message
    assert [step.target.message_type for step in bundle.route(INVOICE_V1, INVOICE_V2) or []] == [INVOICE_V2]
    backwards = bundle.route(INVOICE_V2, INVOICE_V1) or []  # v1 -> v2's migration.yaml, read backwards
    assert [(step.target.message_type, step.file.endswith("(read backwards)")) for step in backwards] == [
        (INVOICE_V1, True)
    ]
    assert len(list(bundle.fixtures(INVOICE_V2, valid=False))) == 3


def test_a_file_that_is_not_json_fails_at_load_saying_how_to_get_one(tmp_path):
    path = tmp_path / "b.json"
    path.write_bytes(b'{"format": "contract-platform/bundle", ')

    with pytest.raises(BundleError) as caught:
        load_bundle(path)

    assert str(path) in str(caught.value) and "not JSON" in str(caught.value)
    assert "contractctl export bundle" in str(caught.value)


def test_another_format_version_fails_at_load_naming_both_versions(tmp_path, catalog):
    document = export_bundle(catalog, message_types=[INVOICE_V2])
    document["formatVersion"] = FORMAT_VERSION + 1

    with pytest.raises(BundleError) as caught:
        load_bundle(write(tmp_path / "b.json", document))

    message = str(caught.value)
    assert f"#/formatVersion: format version {FORMAT_VERSION + 1}" in message
    assert f"reads version {FORMAT_VERSION}" in message and "upgrade" in message


def test_a_bundle_changed_after_export_fails_its_checksum(tmp_path, catalog):
    document = export_bundle(catalog, message_types=[INVOICE_V2])
    document["contents"]["contracts"][INVOICE_V2]["payloadSchema"]["required"] = []  # validates nothing any more

    with pytest.raises(BundleError) as caught:
        load_bundle(write(tmp_path / "b.json", document))

    assert "#/checksum: does not match the contents" in str(caught.value)
    assert "changed after export" in str(caught.value)


def test_a_bundle_cut_short_fails_as_not_json_before_its_checksum(tmp_path, catalog):
    whole = json.dumps(export_bundle(catalog, message_types=[INVOICE_V2])).encode("utf-8")
    path = tmp_path / "b.json"
    path.write_bytes(whole[: len(whole) * 2 // 3])  # a copy or a download that stopped early

    with pytest.raises(BundleError) as caught:
        load_bundle(path)

    message = str(caught.value)
    assert "not JSON" in message and "cut short" in message and "contractctl export bundle" in message
    assert "#/checksum" not in message


@pytest.mark.parametrize(
    ("remove", "pointer"),
    [
        (("contents", "envelope"), "#/contents/envelope: missing"),
        (("contents", "contracts", INVOICE_V2, "payloadSchema"), f"#/contents/contracts/{INVOICE_V2}/payloadSchema"),
        (("contents", "contracts", INVOICE_V2, "contract"), f"#/contents/contracts/{INVOICE_V2}/contract: missing"),
        (("contents",), "#/contents: missing"),
    ],
)
def test_a_missing_part_fails_at_load_naming_its_pointer(tmp_path, catalog, remove, pointer):
    document = export_bundle(catalog, message_types=[INVOICE_V2])
    *parents, last = remove
    holder = document
    for key in parents:
        holder = holder[key]
    del holder[last]
    if "contents" in document:
        resealed(document)

    with pytest.raises(BundleError) as caught:
        load_bundle(write(tmp_path / "b.json", document))

    assert pointer in str(caught.value)


def test_a_contract_that_does_not_load_is_refused_with_its_pointer_in_the_bundle(tmp_path, catalog):
    document = export_bundle(catalog, message_types=[INVOICE_V2])
    document["contents"]["contracts"][INVOICE_V2]["contract"]["ownr"] = "typo"

    with pytest.raises(BundleError) as caught:
        load_bundle(write(tmp_path / "b.json", resealed(document)))

    assert f"#/contents/contracts/{INVOICE_V2}/contract#/ownr" not in str(caught.value)  # one pointer, not two
    assert f"/contents/contracts/{INVOICE_V2}/contract" in str(caught.value)
    assert "unknown key(s) ownr" in str(caught.value)


def test_a_schema_that_would_be_fetched_is_refused_at_load(tmp_path, catalog):
    document = export_bundle(catalog, message_types=[INVOICE_V2])
    schema = document["contents"]["contracts"][INVOICE_V2]["payloadSchema"]
    schema["properties"]["currency"] = {"$ref": "https://schemas.example.com/currency.json"}

    with pytest.raises(BundleError) as caught:
        load_bundle(write(tmp_path / "b.json", resealed(document)))

    assert "forbidden reference" in str(caught.value) and "/payloadSchema" in str(caught.value)


def test_a_schema_that_would_be_fetched_is_refused_at_export():
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"currency": {"$ref": "https://schemas.example.com/currency.json"}},
    }
    catalog = catalog_of(build_contract(payload_schema=schema), envelope_schema=True)

    with pytest.raises(SchemaError) as caught:
        export_bundle(catalog, message_types=["billing.invoice-issued.v1"])

    assert "forbidden reference" in str(caught.value) and "/properties/currency/$ref" in str(caught.value)


def test_a_selection_that_names_nothing_is_bad_input(catalog):
    with pytest.raises(UsageError, match="services named: .*accounting-service"):
        export_bundle(catalog, service="no-such-service")
    with pytest.raises(UsageError, match="--service NAME and/or --type"):
        export_bundle(catalog)


def test_loading_reads_the_bundle_and_nothing_else(tmp_path, catalog):
    """Every file opened and every connection attempted while loading, recorded by an audit hook in a process of
    its own: the bundle, and the library's own installed code and data; no socket at all."""
    path = write(tmp_path / "accounting.bundle.json", export_bundle(catalog, service="accounting-service"))
    script = textwrap.dedent(
        f"""
        import json, os, sys
        seen = []
        watching = False
        def hook(event, args):
            if watching and event in ("open", "socket.connect", "socket.getaddrinfo", "urllib.Request"):
                seen.append((event, str(args[0]) if args else ""))
        sys.addaudithook(hook)
        import contract_platform.client as client
        import contract_platform.client.bundle, contract_platform.validation.schemas, jsonschema_rs  # code, not data
        watching = True
        bundle = client.load_bundle({str(path)!r})
        watching = False
        print(json.dumps(seen))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, check=True, timeout=120
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    installed = (
        Path(sys.prefix).resolve(),
        Path(sys.base_prefix).resolve(),
        Path(__file__).resolve().parents[3] / "plugins",
    )

    assert [event for event, _ in seen if event != "open"] == []
    strays = [
        name
        for _, name in seen
        if Path(name).resolve() != path.resolve()
        and not any(Path(name).resolve().is_relative_to(root) for root in installed)
    ]
    assert strays == []
    assert ("open", str(path)) in [(e, n) for e, n in seen]


def test_the_cli_writes_a_bundle_the_library_loads(capsys, tmp_path, catalog_dir):
    target = tmp_path / "out" / "accounting.bundle.json"

    code, out, _ = run_cli(
        capsys, "export", "bundle", "--service", "accounting-service", "--catalog", str(catalog_dir),
        "--out", str(target), "--format", "json",
    )  # fmt: skip

    assert code == 0
    summary = json.loads(out)
    bundle = load_bundle(target)
    assert summary["checksum"] == bundle.checksum
    assert summary["messageTypes"] == {INVOICE_V1: ["consumes"], INVOICE_V2: ["consumes"]}


def test_the_cli_refuses_a_bundle_without_a_selection_or_in_another_format(capsys, tmp_path, catalog_dir):
    code, _, err = run_cli(capsys, "export", "bundle", "--catalog", str(catalog_dir))
    assert code == 2 and "--service NAME and/or --type" in err

    target = tmp_path / "b.yaml"
    code, _, err = run_cli(
        capsys, "export", "bundle", "--service", "billing-service", "--catalog", str(catalog_dir), "--out", str(target)
    )
    assert code == 2 and "a contract bundle is JSON" in err
    assert not target.exists()

    code, _, err = run_cli(capsys, "export", "asyncapi", "--service", "billing-service", "--catalog", str(catalog_dir))
    assert code == 2 and "export bundle" in err


def test_a_migration_that_cannot_be_read_backwards_is_loaded_one_way_with_the_reason_kept(catalog_copy, bundle_of):
    migration = catalog_copy / "billing" / "invoice-issued" / "v2" / "migration.yaml"
    text = migration.read_text()
    assert "{op: copy, from: /status, to: /status}" in text
    migration.write_text(
        text.replace(
            "{op: copy, from: /status, to: /status}",
            "{op: mapEnum, from: /status, to: /status, mapping: {ISSUED: ISSUED, PAID: PAID}, default: VOID}",
        )
    )

    bundle = bundle_of(service="accounting-service", source=catalog_copy)

    assert bundle.route(INVOICE_V1, INVOICE_V2) is not None
    assert bundle.route(INVOICE_V2, INVOICE_V1) is None
    why = bundle.not_backwards[(INVOICE_V2, INVOICE_V1)]
    assert why.endswith(
        "/migration#/payload/5/default: mapEnum folds every unmapped /status value into 'VOID': it cannot be mapped back"
    )

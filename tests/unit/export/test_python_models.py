"""Generated Python models round-trip every fixture: the catalogue's own, and a catalogue built here with each
schema shape and each draft the catalogue accepts.

A valid fixture parses into its version's envelope type and is written back to equal JSON (decimal strings
and timestamps as written). An invalid fixture is refused by the type where it can hold the constraint, else
by the guard; which one is recorded per fixture (``record_property``: ``refused-by:<type>/<fixture>``) and the
built catalogue asserts where each of its invalid fixtures is refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from tests.support.cli import run_cli
from tests.support.contracts import ENVELOPE_SCHEMA_FILE, REPO_ROOT, write_contract
from tests.support.models import generated_package

from contract_platform.catalog.loading import load_catalog
from contract_platform.catalog.model import Catalog
from contract_platform.client.bundle import bundle_from_document
from contract_platform.client.guard import Guard, Rejection
from contract_platform.client.testkit import delivery_of
from contract_platform.export.bundle import export_bundle
from contract_platform.export.python_models import HEADER

DRAFTS = {
    "draft-04": "http://json-schema.org/draft-04/schema#",
    "draft-06": "http://json-schema.org/draft-06/schema#",
    "draft-07": "http://json-schema.org/draft-07/schema#",
    "2019-09": "https://json-schema.org/draft/2019-09/schema",
    "2020-12": "https://json-schema.org/draft/2020-12/schema",
}


def refused_by(catalog: Catalog, registry: dict[str, type[BaseModel]]) -> dict[str, str]:
    """``<messageType>/<fixture>`` -> ``type`` or ``guard`` for every invalid fixture; every valid one round-trips."""
    bundle = bundle_from_document(export_bundle(catalog, message_types=list(catalog.contracts)))
    guard = Guard(bundle, reads=set(catalog.contracts))
    verdicts = {}
    for contract in catalog:
        model = registry[contract.message_type]
        for fixture in contract.fixtures:
            where = f"{contract.message_type}/{fixture.name}"
            if fixture.valid:
                typed = model.model_validate(fixture.document)
                written = typed.model_dump(mode="json", by_alias=True, exclude_unset=True)
                assert written == fixture.document, where
                assert json.dumps(written, sort_keys=True) == json.dumps(fixture.document, sort_keys=True), where
                continue
            try:
                model.model_validate(fixture.document)
            except ValidationError:
                verdicts[where] = "type"
                continue
            assert isinstance(guard.inspect(*delivery_of(fixture.document)), Rejection), f"{where}: nobody refused it"
            verdicts[where] = "guard"
    return verdicts


def test_the_catalogues_fixtures_round_trip_through_their_generated_types(tmp_path, record_property):
    catalog = load_catalog(REPO_ROOT / "contracts")
    package = generated_package(catalog, tmp_path / "models")

    verdicts = refused_by(catalog, package.REGISTRY)

    for where, who in verdicts.items():
        record_property(f"refused-by:{where}", who)
    invalid = {f"{c.message_type}/{f.name}" for c in catalog for f in c.fixtures if not f.valid}
    assert set(verdicts) == invalid
    # every defect the catalogue's invalid fixtures hold is one a Python type can hold
    assert set(verdicts.values()) == {"type"}


def test_a_generated_module_says_what_it_is(tmp_path):
    catalog = load_catalog(REPO_ROOT / "contracts")
    package = generated_package(catalog, tmp_path / "models")
    invoice = package.REGISTRY["billing.invoice-issued.v2"]

    assert (invoice.MESSAGE_TYPE, invoice.VERSION, invoice.SCHEMA_VERSION) == ("billing.invoice-issued.v2", "2.0.0", 2)
    assert (invoice.EXCHANGE, invoice.ROUTING_KEY) == ("billing.events", "billing.invoice.issued.v2")
    text = (tmp_path / "models" / "billing_invoice_issued_v2.py").read_text()
    assert text.splitlines()[0] == HEADER
    assert invoice.CATALOG_REVISION in text.splitlines()[2]
    assert invoice.CATALOG_REVISION.startswith(("git:", "sha256:"))
    assert "Invoiced amount before tax in minor units" in text  # descriptions as doc comments
    payload = invoice.model_fields["payload"].annotation
    assert payload.__name__ == "InvoiceIssuedV2Payload"
    # a v1 envelope is not a v2 one, even where its payload would fit
    v1 = json.loads(
        (REPO_ROOT / "contracts/billing/invoice-issued/v1/fixtures/valid/eur-issued-net30-inv-10001.json").read_text()
    )
    with pytest.raises(ValidationError):
        invoice.model_validate(v1)


def test_regenerating_removes_the_modules_of_versions_left_out(tmp_path, capsys):
    out = tmp_path / "models"
    (out).mkdir()
    (out / "handwritten.py").write_text("x = 1\n")
    catalog = str(REPO_ROOT / "contracts")

    export = ("export", "models", "--lang", "python", "--catalog", catalog, "--out", str(out))

    first = run_cli(capsys, *export, "--service", "accounting-service")
    assert first[0] == 0
    assert (out / "billing_invoice_issued_v1.py").is_file()  # consumed on read, migrated: v1 is in the selection
    second = run_cli(capsys, *export, "--type", "billing.invoice-issued.v2")

    assert second[0] == 0
    assert sorted(p.name for p in out.glob("*.py")) == ["__init__.py", "billing_invoice_issued_v2.py", "handwritten.py"]


def test_models_need_a_language_and_a_folder(tmp_path, capsys):
    catalog = str(REPO_ROOT / "contracts")
    no_lang = run_cli(
        capsys, "export", "models", "--catalog", catalog, "--type", "billing.invoice-issued.v2", "--out", str(tmp_path)
    )
    no_out = run_cli(
        capsys, "export", "models", "--lang", "python", "--catalog", catalog, "--type", "billing.invoice-issued.v2"
    )
    assert (no_lang[0], no_out[0]) == (2, 2)
    assert "--lang python" in no_lang[2] and "--out DIR" in no_out[2]
    assert list(tmp_path.iterdir()) == []


# -- a catalogue with every schema shape, in every draft ------------------------------------------------------

_DECIMAL = {"type": "string", "pattern": "^-?[0-9]+(\\.[0-9]+)?$", "description": "A decimal string."}


def shapes_schema(draft: str) -> dict[str, Any]:
    """$ref, allOf, oneOf, anyOf, nullable, closed and open models, arrays of objects, in ``draft``'s words."""
    defs = "definitions" if draft in ("draft-04", "draft-06", "draft-07") else "$defs"
    nullable: dict[str, Any] = {"type": ["string", "null"], "description": "Nullable."}
    bound: dict[str, Any] = (
        {"type": "integer", "maximum": 10, "exclusiveMaximum": True, "description": "Below 10."}
        if draft == "draft-04"
        else {"type": "integer", "exclusiveMaximum": 10, "description": "Below 10."}
    )
    return {
        "$schema": DRAFTS[draft],
        "title": "Shapes",
        "description": "Every shape a payload schema takes.",
        "type": "object",
        "required": ["id", "amount", "lines", "closed", "choice", "either", "note", "level", "bound", "dueDate"],
        "properties": {
            "id": {"type": "string", "pattern": "^s-[0-9]+$", "description": "Identifier."},
            "amount": {"$ref": f"#/{defs}/Decimal"},
            "lines": {"type": "array", "minItems": 1, "items": {"$ref": f"#/{defs}/Line"}, "description": "Lines."},
            "closed": {
                "type": "object",
                "additionalProperties": False,
                "required": ["code"],
                "properties": {"code": {"type": "string", "minLength": 2, "maxLength": 4, "description": "Code."}},
                "description": "A closed model.",
            },
            "extended": {
                "allOf": [{"$ref": f"#/{defs}/Line"}, {"properties": {"tax": _DECIMAL}, "required": ["tax"]}],
                "description": "A line with its tax (allOf).",
            },
            "choice": {
                "oneOf": [{"$ref": f"#/{defs}/ByCard"}, {"$ref": f"#/{defs}/ByTransfer"}],
                "description": "How it is paid (oneOf).",
            },
            "either": {"anyOf": [{"type": "integer", "minimum": 0}, _DECIMAL], "description": "Either (anyOf)."},
            "note": nullable,
            "level": {
                "type": "string",
                "enum": ["LOW", "HIGH"],
                "x-unknownValuePolicy": "reject",
                "description": "Level.",
            },
            "channel": {
                "type": "string",
                "enum": ["WEB", "SHOP"],
                "x-unknownValuePolicy": "passthrough",
                "description": "Channel, for reports.",
            },
            "bound": bound,
            "dueDate": {"type": "string", "format": "date", "description": "Due day."},
            "at": {"type": "string", "format": "date-time", "description": "Instant."},
        },
        defs: {
            "Decimal": _DECIMAL,
            "Line": {
                "type": "object",
                "required": ["sku", "price"],
                "properties": {
                    "sku": {"type": "string", "minLength": 1, "description": "Product."},
                    "price": {"$ref": f"#/{defs}/Decimal"},
                },
                "description": "An open line (any added field kept).",
            },
            "ByCard": {
                "type": "object",
                "additionalProperties": False,
                "required": ["kind", "last4"],
                "properties": {
                    "kind": {
                        "type": "string",
                        "enum": ["CARD"],
                        "x-unknownValuePolicy": "reject",
                        "description": "Kind.",
                    },
                    "last4": {"type": "string", "pattern": "^[0-9]{4}$", "description": "Last four digits."},
                },
                "description": "Paid by card.",
            },
            "ByTransfer": {
                "type": "object",
                "additionalProperties": False,
                "required": ["kind", "iban"],
                "properties": {
                    "kind": {
                        "type": "string",
                        "enum": ["TRANSFER"],
                        "x-unknownValuePolicy": "reject",
                        "description": "Kind.",
                    },
                    "iban": {"type": "string", "minLength": 15, "description": "Account."},
                },
                "description": "Paid by transfer.",
            },
        },
    }


def shapes_payload(**changes: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "id": "s-1",
        "amount": "129.950",
        "lines": [{"sku": "A", "price": "10.00", "addedLater": {"kept": True}}, {"sku": "B", "price": "-0.5"}],
        "closed": {"code": "ab"},
        "extended": {"sku": "C", "price": "1.10", "tax": "0.21"},
        "choice": {"kind": "TRANSFER", "iban": "DE89370400440532013000"},
        "either": "3.14",
        "note": None,
        "level": "HIGH",
        "channel": "KIOSK",  # an unknown value of a passthrough enum: handed on as sent
        "bound": 9,
        "dueDate": "2026-07-31",
        "at": "2026-07-01T10:15:30.120+02:00",
        "added": "an open model keeps what a later minor adds",
    }
    payload.update(changes)
    return {key: value for key, value in payload.items() if value is not ...}


# invalid fixture -> (payload changes, who refuses it)
SHAPE_DEFECTS: dict[str, tuple[dict[str, Any], str]] = {
    "amount-is-a-number": ({"amount": 129.95}, "type"),
    "closed-model-with-an-added-field": ({"closed": {"code": "ab", "extra": 1}}, "type"),
    "line-without-price": ({"lines": [{"sku": "A"}]}, "type"),
    "no-lines": ({"lines": []}, "type"),
    "choice-matches-no-branch": ({"choice": {"kind": "CARD", "iban": "DE89370400440532013000"}}, "type"),
    "level-not-in-enum": ({"level": "MEDIUM"}, "type"),
    "bound-reached": ({"bound": 10}, "type"),
    "code-too-long": ({"closed": {"code": "abcde"}}, "type"),
    "at-without-offset": ({"at": "2026-07-01T10:15:30"}, "type"),
    "id-missing": ({"id": ...}, "type"),
    # the shape holds, the calendar not (date-time: a format in every draft, unlike draft-04's unknown "date")
    "at-a-day-that-does-not-exist": ({"at": "2026-02-30T10:15:30Z"}, "guard"),
}


def envelope(message_type: str, payload: dict[str, Any], number: int) -> dict[str, Any]:
    return {
        "metadata": {
            "messageId": f"00000000-0000-4000-8000-{number:012d}",
            "messageType": message_type,
            "schemaVersion": 1,
            "messageVersion": "1.0.0",
            "producer": "shapes-service",
            "occurredAt": "2026-07-01T10:15:30Z",
            "publishedAt": "2026-07-01T10:15:31.5+00:00",
            "correlationId": "8c1d6f0e-3b2a-4f5e-9d7c-1a2b3c4d5e6f",
            "causationId": "d4e5f6a7-b8c9-4d0e-8f1a-2b3c4d5e6f70",
            "traceId": "4bf92f3577b34da6a3ce929d0e0e4736",
        },
        "payload": payload,
    }


def write_shapes_catalog(root: Path) -> Path:
    (root / "envelope").mkdir(parents=True)
    (root / "envelope" / "envelope.v1.schema.json").write_bytes(ENVELOPE_SCHEMA_FILE.read_bytes())
    for number, draft in enumerate(DRAFTS):
        name = f"shapes-{draft.replace('-', '')}"
        message_type = f"shapes.{name}.v1"
        folder = write_contract(
            root,
            message_type,
            version="1.0.0",
            description=f"Every schema shape, in {draft}.",
            routing_key=f"shapes.{name}.happened.v1",
            schema=shapes_schema(draft),
        )
        valid = {
            "everything.json": shapes_payload(),
            "paid-by-card-only-required.json": shapes_payload(
                choice={"kind": "CARD", "last4": "4242"},
                extended=...,
                channel=...,
                at=...,
                added=...,
                note="late",
                either=7,
            ),
        }
        for index, (file, payload) in enumerate(valid.items()):
            document = envelope(message_type, payload, number * 100 + index)
            (folder / "fixtures" / "valid" / file).write_text(json.dumps(document, indent=2))
        for index, (defect, (changes, _who)) in enumerate(SHAPE_DEFECTS.items()):
            document = envelope(message_type, shapes_payload(**changes), number * 100 + 50 + index)
            (folder / "fixtures" / "invalid" / f"{defect}.json").write_text(json.dumps(document, indent=2))
    return root


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Catalog, Any]:
    """The shapes catalogue and its generated package (generated once: a few seconds per version)."""
    root = tmp_path_factory.mktemp("shapes")
    catalog = load_catalog(write_shapes_catalog(root / "catalog"))
    return catalog, generated_package(catalog, root / "models")


def test_every_shape_in_every_draft_round_trips_and_every_defect_is_refused(shapes, record_property):
    catalog, package = shapes
    assert sorted(c.dialect.split()[0] for c in catalog) == sorted(DRAFTS)  # each read in its own draft

    verdicts = refused_by(catalog, package.REGISTRY)

    for where, who in verdicts.items():
        record_property(f"refused-by:{where}", who)
    expected = {f"{t}/{defect}.json": who for t in catalog.contracts for defect, (_c, who) in SHAPE_DEFECTS.items()}
    assert verdicts == expected


def test_values_come_back_as_written(shapes):
    _catalog, package = shapes
    model = package.REGISTRY["shapes.shapes-202012.v1"]
    document = envelope("shapes.shapes-202012.v1", shapes_payload(), 1)

    typed = model.model_validate(document)

    assert typed.payload.amount == "129.950"  # a decimal string, trailing zero and all
    assert typed.payload.at == "2026-07-01T10:15:30.120+02:00"
    assert typed.metadata.publishedAt == "2026-07-01T10:15:31.5+00:00"
    assert typed.payload.channel == "KIOSK"
    assert typed.payload.lines[0].model_extra == {"addedLater": {"kept": True}}

"""``contractctl export models --lang java|typescript``: the files a folder gets, what a new export removes, and the
refusals of bad options. Whether the output compiles is ``tests/integration/test_typed_models_compile.py``
(javac and tsc)."""

from __future__ import annotations

import json

from tests.support.cli import run_cli
from tests.support.contracts import REPO_ROOT

from contract_platform.catalog.loading import load_catalog
from contract_platform.export.java_models import HEADER as JAVA_HEADER
from contract_platform.export.models import export_models

CATALOG = str(REPO_ROOT / "contracts")


def test_java_records_name_their_version_and_its_channel(tmp_path):
    catalog = load_catalog(REPO_ROOT / "contracts")

    models = export_models(
        catalog, language="java", message_types=["billing.invoice-issued.v2"], java_package="com.acme.c"
    )

    assert sorted(models.files) == ["ContractChecks.java", "ContractRegistry.java", "InvoiceIssuedV2.java"]
    text = models.files["InvoiceIssuedV2.java"]
    assert text.splitlines()[0] == JAVA_HEADER
    assert f"revision {models.revision}" in text.splitlines()[2]
    assert "package com.acme.c;" in text
    assert "public record InvoiceIssuedV2(Metadata metadata, InvoiceIssuedV2Payload payload)" in text
    assert 'public static final String ROUTING_KEY = "billing.invoice.issued.v2";' in text
    assert 'Map.entry("billing.invoice-issued.v2", InvoiceIssuedV2.class)' in models.files["ContractRegistry.java"]


def test_an_export_removes_only_its_own_languages_left_over_files(tmp_path, capsys):
    out = tmp_path / "models"
    first = ["export", "models", "--catalog", CATALOG, "--type", "billing.invoice-issued.v1", "--out", str(out)]
    assert run_cli(capsys, *first, "--lang", "java")[0] == 0
    python = [*first, "--lang", "python"]
    assert run_cli(capsys, *python)[0] == 0
    (out / "Handwritten.java").write_text("class Handwritten {}\n")

    code, printed, _err = run_cli(
        capsys,
        *["export", "models", "--lang", "java", "--catalog", CATALOG, "--type", "billing.invoice-issued.v2"],
        *["--out", str(out), "--format", "json"],
    )

    assert code == 0
    assert json.loads(printed)["removed"] == ["InvoiceIssuedV1.java"]
    assert (out / "billing_invoice_issued_v1.py").is_file()  # the Python export's, not this one's
    assert (out / "Handwritten.java").is_file() and (out / "InvoiceIssuedV2.java").is_file()


def test_bad_java_options_are_refused_before_anything_is_written(tmp_path, capsys):
    base = ["export", "models", "--catalog", CATALOG, "--type", "billing.invoice-issued.v2", "--out", str(tmp_path)]
    not_a_package = run_cli(capsys, *base, "--lang", "java", "--java-package", "com.acme.class")
    not_java = run_cli(capsys, *base, "--lang", "python", "--java-package", "com.acme")
    no_such_language = run_cli(capsys, *base, "--lang", "kotlin")

    assert (not_a_package[0], not_java[0], no_such_language[0]) == (2, 2, 2)
    assert "--java-package 'com.acme.class' is no Java package name" in not_a_package[2]
    assert "drop it for --lang python" in not_java[2]
    assert "python, typescript, java" in no_such_language[2]
    assert list(tmp_path.iterdir()) == []


def test_typescript_without_its_generator_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CONTRACT_NODE_MODULES", str(tmp_path / "empty"))
    out = tmp_path / "models"

    code, _out, err = run_cli(
        capsys,
        *["export", "models", "--lang", "typescript", "--catalog", CATALOG, "--type", "billing.invoice-issued.v2"],
        *["--out", str(out)],
    )

    assert code == 2
    assert "scripts/install-asyncapi-parser" in err and "CONTRACT_NODE_MODULES" in err
    assert "Traceback" not in err and not out.exists()

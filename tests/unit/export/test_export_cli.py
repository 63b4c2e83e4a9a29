"""``contractctl export asyncapi``: stdout JSON by default, JSON or YAML by --out's extension, exit 2 on bad input."""

from __future__ import annotations

import json

import yaml
from tests.support.cli import run_cli

from contract_platform.export import export_asyncapi


def test_stdout_is_the_json_document(capsys, catalog, catalog_dir):
    code, out, _ = run_cli(capsys, "export", "asyncapi", "--catalog", str(catalog_dir))
    assert code == 0
    assert json.loads(out) == export_asyncapi(catalog)


def test_out_extension_picks_the_format(capsys, tmp_path, catalog, catalog_dir):
    expected = export_asyncapi(catalog)
    for name, load in (("a.json", json.loads), ("a.yaml", yaml.safe_load), ("nested/a.YML", yaml.safe_load)):
        target = tmp_path / name
        code, out, _ = run_cli(
            capsys, "export", "asyncapi", "--catalog", str(catalog_dir), "--out", str(target), "--format", "json"
        )
        assert code == 0
        text = target.read_text("utf-8")
        assert load(text) == expected
        assert "&id" not in text  # YAML without anchors/aliases
        summary = json.loads(out)
        assert summary["messages"] == len(catalog)
        assert summary["out"] == str(target)


def test_unknown_extension_is_bad_input_and_writes_nothing(capsys, tmp_path, catalog_dir):
    target = tmp_path / "asyncapi.txt"
    code, _, err = run_cli(capsys, "export", "asyncapi", "--catalog", str(catalog_dir), "--out", str(target))
    assert code == 2
    assert "'.txt'" in err and ".yaml" in err
    assert not target.exists()


def test_unknown_target_is_a_usage_error(capsys, catalog_dir):
    code, _, err = run_cli(capsys, "export", "openapi", "--catalog", str(catalog_dir))
    assert code == 2
    assert "asyncapi" in err


def test_broken_catalogue_is_bad_input(capsys, catalog_copy):
    (catalog_copy / "billing" / "invoice-issued" / "v2" / "contract.yaml").write_text("messageType: [\n", "utf-8")
    code, out, err = run_cli(capsys, "export", "asyncapi", "--catalog", str(catalog_copy))
    assert code == 2
    assert out == ""
    assert "billing/invoice-issued/v2/contract.yaml" in err

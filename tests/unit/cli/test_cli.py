"""contractctl as a user meets it: exit codes 0/1/2, --format json everywhere, messages with file and pointer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.cli import catalogue_repo, run_cli

INV1 = "billing.invoice-issued.v1"
INV2 = "billing.invoice-issued.v2"


def test_lint_clean_catalogue(capsys, catalog_dir):
    code, out, _ = run_cli(capsys, "lint", str(catalog_dir), "--format", "json")
    assert code == 0
    assert json.loads(out) == {"ok": True, "contracts": 6, "findings": []}


def test_lint_findings_exit_1_with_rule_file_and_pointer(capsys, catalog_copy):
    schema = catalog_copy / "billing/invoice-issued/v1/payload.schema.json"
    doc = json.loads(schema.read_text())
    doc["properties"]["issuedAt"].pop("format")
    schema.write_text(json.dumps(doc))
    code, out, _ = run_cli(capsys, "lint", str(catalog_copy), "--format", "json")
    assert code == 1
    [finding] = json.loads(out)["findings"]
    assert finding["rule"] == "timestamp-format" and finding["pointer"] == "/properties/issuedAt"
    assert finding["file"] == str(schema)


def test_catalogue_that_does_not_load_exits_2_with_one_line_per_problem(capsys, catalog_copy):
    (catalog_copy / "quote/quote-approved/v1/payload.schema.json").write_text("{not json")
    code, out, err = run_cli(capsys, "check", str(catalog_copy))
    assert code == 2 and out == ""
    [line] = err.strip().splitlines()
    assert "quote-approved/v1/payload.schema.json" in line and "not valid JSON: line 1" in line


def test_missing_catalogue_exits_2(capsys, tmp_path):
    code, _, err = run_cli(capsys, "lint", str(tmp_path / "nope"))
    assert code == 2 and "catalogue folder does not exist" in err


def test_usage_errors_exit_2(capsys):
    code, _, err = run_cli(capsys, "diff", "only-one-argument")
    assert code == 2 and "usage" in err
    code, _, err = run_cli(capsys, "frobnicate")
    assert code == 2


def test_diff_of_the_breaking_major_change(capsys, catalog_dir):
    code, out, _ = run_cli(capsys, "diff", INV1, INV2, "--catalog", str(catalog_dir), "--format", "json")
    assert code == 1
    result = json.loads(out)
    assert result["compatible"] is False
    assert set(result) == {"compatible", "changes", "dialects", "impact"}  # impact: the consumers of v1
    assert result["impact"]["messageType"] == "billing.invoice-issued.v1"
    assert result["dialects"]["old"]["source"] == "declared"
    assert all(set(c) == {"rule", "path", "compatible", "message"} for c in result["changes"])
    assert any(not c["compatible"] and "amount" in c["path"] for c in result["changes"])


def test_diff_of_schema_files_and_identical_schema(capsys, catalog_dir, tmp_path):
    schema = catalog_dir / "billing/invoice-issued/v1/payload.schema.json"
    code, out, _ = run_cli(capsys, "diff", str(schema), str(schema), "--mode", "full", "--format", "json")
    assert code == 0 and json.loads(out)["compatible"] is True
    widened = json.loads(schema.read_text())
    widened["required"] = [r for r in widened["required"] if r != "dueDate"]
    new = tmp_path / "new.json"
    new.write_text(json.dumps(widened))
    code, out, _ = run_cli(capsys, "diff", str(schema), str(new), "--mode", "backward", "--format", "json")
    assert code == 0, out
    code, out, _ = run_cli(capsys, "diff", str(schema), str(new), "--mode", "forward", "--format", "json")
    assert code == 1


def test_diff_bad_inputs_exit_2_with_a_reason(capsys, tmp_path, catalog_dir):
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": 12}')
    code, _, err = run_cli(capsys, "diff", str(bad), str(bad))
    assert code == 2 and "bad.json#/type" in err
    code, _, err = run_cli(capsys, "diff", str(tmp_path / "missing.json"), str(bad))
    assert code == 2 and "missing.json" in err
    code, _, err = run_cli(capsys, "diff", "no.such-type.v1", INV1, "--catalog", str(catalog_dir))
    assert code == 2 and "no.such-type.v1" in err


def test_check_is_clean_on_the_catalogue(capsys, catalog_dir):
    code, out, _ = run_cli(capsys, "check", str(catalog_dir), "--format", "json")
    assert code == 0
    assert json.loads(out)["ok"] is True


def test_check_against_a_git_ref_catches_a_breaking_change_in_a_pull_request(capsys, tmp_path, catalog_dir):
    repo = tmp_path / "repo"
    catalogue_repo(repo, catalog_dir)
    schema = repo / "contracts/billing/invoice-issued/v2/payload.schema.json"
    doc = json.loads(schema.read_text())
    doc["required"].append("dueDate") if "dueDate" not in doc["required"] else doc["required"].append("newRequired")
    doc["properties"].setdefault("newRequired", {"type": "string", "description": "x"})
    schema.write_text(json.dumps(doc))
    code, out, _ = run_cli(capsys, "check", str(repo / "contracts"), "--against", "main", "--format", "json")
    assert code == 1
    [result] = [r for r in json.loads(out)["compatibility"] if r["messageType"] == INV2]
    assert result["ok"] is False and result["against"] == ["2.0.0 @ main"]
    code, _, err = run_cli(capsys, "check", str(repo / "contracts"), "--against", "no-such-branch")
    assert code == 2 and "no-such-branch" in err


def test_docs_writes_a_page_per_contract(capsys, catalog_dir, tmp_path):
    code, out, _ = run_cli(capsys, "docs", str(catalog_dir), "--out", str(tmp_path / "docs"), "--format", "json")
    assert code == 0
    files = {Path(f).name for f in json.loads(out)["files"]}
    assert files == {
        f"{t}.md"
        for t in (
            "quote.quote-approved.v1",
            "order.create-order.v1",
            "order.order-created.v1",
            "billing.generate-invoice.v1",
            INV1,
            INV2,
        )
    } | {"index.md"}
    page = (tmp_path / "docs" / f"{INV1}.md").read_text()
    for expected in (
        "billing.events",
        "billing.invoice.issued.v1",
        "| `amount` |",
        "/payload/billingEmail",
        "90d",
        "accounting-service.billing.invoice-issued.v1",
    ):
        assert expected in page
    assert "| Callers |" not in page  # an event is sent by its owner
    command = (tmp_path / "docs" / "order.create-order.v1.md").read_text()
    assert "| Callers | quote-service |" in command


@pytest.mark.parametrize("verb", ["lint", "diff", "check", "docs"])
def test_cli_imports_neither_airflow_nor_pyspark(verb, catalog_dir, tmp_path):
    schema = str(catalog_dir / "billing/invoice-issued/v1/payload.schema.json")
    argv = {
        "lint": ["lint", str(catalog_dir)],
        "diff": ["diff", schema, schema],
        "check": ["check", str(catalog_dir)],
        "docs": ["docs", str(catalog_dir), "--out", str(tmp_path)],
    }[verb]
    code = (
        "import sys\nfrom contract_platform.cli.main import main\n"
        f"rc = main({argv!r})\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('airflow', 'pyspark', 'sqlalchemy', 'pika'))\n"
        "assert not heavy, heavy\nsys.exit(rc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    "setting, value", [("CONTRACT_RECORDER_MAX_EVENTS", "lots"), ("CONTRACT_RECORDER_MAX_BYTES", "12")]
)
def test_record_activity_refuses_a_buffer_limit_it_cannot_use(capsys, monkeypatch, tmp_path, setting, value):
    monkeypatch.setenv(setting, value)
    registry = f"sqlite:///{tmp_path / 'registry.db'}"
    code, out, err = run_cli(capsys, "record-activity", "--registry", registry, "--max-seconds", "1")
    assert code == 2 and out == ""
    assert f"{setting}: {value!r} is not a whole number of at least" in err

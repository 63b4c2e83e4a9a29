"""contractctl diff on schemas without $schema: a verdict in the draft their keywords say, the dialect
shown in text and JSON, --default-dialect and the catalogue's defaultDialect for the rest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contract_platform.cli.main import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _files(tmp_path: Path, old: Any, new: Any) -> tuple[str, str]:
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    return str(tmp_path / "old.json"), str(tmp_path / "new.json")


TUPLE = {"type": "array", "items": [{"type": "string"}], "additionalItems": False}


def test_tuple_items_without_schema_get_a_draft07_verdict(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    old, new = _files(tmp_path, TUPLE, {**TUPLE, "additionalItems": True})
    code, out, err = _run(capsys, "diff", old, new, "--catalog", str(tmp_path), "--mode", "forward")
    assert code == 1, err  # a second item of any kind is new data old readers refuse
    assert f"old  {old}: read as draft-07 (no $schema; additionalItems at /additionalItems" in out
    code, out, err = _run(capsys, "diff", old, new, "--catalog", str(tmp_path), "--format", "json")
    assert code == 0, err
    document = json.loads(out)
    assert document["compatible"] is True
    assert document["dialects"]["new"]["name"] == "draft-07"
    assert document["dialects"]["new"]["source"] == "keywords"
    assert {"pointer": "/items", "keyword": "items", "family": "draft-04..07"} in document["dialects"]["old"]["markers"]


def test_the_default_dialect_comes_from_the_option_then_the_catalogue(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # draft-07 ignores a sibling of $ref; 2020-12 applies it
    base = {"definitions": {"s": {"type": "string"}}, "properties": {"p": {"$ref": "#/definitions/s"}}}
    capped = {
        "definitions": {"s": {"type": "string"}},
        "properties": {"p": {"$ref": "#/definitions/s", "maxLength": 2}},
    }
    old, new = _files(tmp_path, base, capped)
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    assert _run(capsys, "diff", old, new, "--catalog", str(catalog))[0] == 1
    code, out, _ = _run(capsys, "diff", old, new, "--catalog", str(catalog), "--default-dialect", "draft-07")
    assert code == 0 and "read as draft-07 (no $schema, no draft-specific keyword: the default dialect)" in out
    (catalog / "catalog.yaml").write_text("defaultDialect: draft-07\n")
    assert _run(capsys, "diff", old, new, "--catalog", str(catalog))[0] == 0
    assert _run(capsys, "diff", old, new, "--catalog", str(catalog), "--default-dialect", "2020-12")[0] == 1


def test_only_a_schema_no_draft_accepts_is_refused_with_its_pointer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    old, new = _files(tmp_path, TUPLE, {"type": "array", "items": [{"type": "string"}], "minItems": -1})
    code, _, err = _run(capsys, "diff", old, new, "--catalog", str(tmp_path))
    assert code == 2
    assert "#/minItems" in err and "no other supported draft accepts it either" in err
    assert "Traceback" not in err


def test_verify_samples_reads_the_schemas_in_the_same_draft(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("hypothesis_jsonschema")
    old, new = _files(tmp_path, TUPLE, {**TUPLE, "additionalItems": {"type": "integer"}})
    code, out, err = _run(
        capsys, "diff", old, new, "--catalog", str(tmp_path), "--verify-samples", "50", "--format", "json"
    )
    assert code == 0, err
    assert all(sample["holds"] for sample in json.loads(out)["samples"])


def test_the_option_offers_exactly_the_supported_drafts(capsys: pytest.CaptureFixture[str]) -> None:
    from contract_platform.catalog.schemas import DRAFTS
    from contract_platform.cli.common import DIALECTS

    assert tuple(DRAFTS) == DIALECTS
    code, _, err = _run(capsys, "lint", "--default-dialect", "draft-03")
    assert code == 2 and "draft-07" in err

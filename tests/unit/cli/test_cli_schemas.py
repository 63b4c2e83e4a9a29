"""contractctl with schemas of every draft, --verify-samples, and references that must never be fetched.

A local HTTP listener counts the requests it receives: schemas that point at it (``$ref``,
``$dynamicRef``, under a property named ``const``) must be refused without a single request.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from tests.support.cli import run_cli
from tests.unit.compat.spec_pairs import SCHEMA_IN_EACH_DRAFT

from contract_platform.compat import Mode, Verdict


class Listener:
    """An HTTP server on 127.0.0.1 that answers every GET with a schema and remembers the paths asked."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        seen = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(self.path)
                body = json.dumps({"type": "integer"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/schema+json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    thread = threading.Thread(target=server.server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


def _write(path: Path, document: Any) -> str:
    path.write_text(json.dumps(document))
    return str(path)


# -- every draft gets a verdict ---------------------------------------------------------------------


def test_diff_gives_a_verdict_for_every_pair_of_drafts(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    files = {
        name: _write(tmp_path / f"{i}.json", schema) for i, (name, schema) in enumerate(SCHEMA_IN_EACH_DRAFT.items())
    }
    for old in files.values():
        for new in files.values():
            code, out, err = run_cli(capsys, "diff", old, new, "--mode", "full", "--format", "json")
            assert code in (0, 1), err
            assert isinstance(json.loads(out)["compatible"], bool)


def test_diff_of_a_draft07_and_a_2020_12_spelling_of_the_same_tuple_is_compatible(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    old = _write(tmp_path / "old.json", {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array",
                                          "items": [{"type": "string"}], "additionalItems": False})  # fmt: skip
    new = _write(tmp_path / "new.json", {"type": "array", "prefixItems": [{"type": "string"}], "items": False})
    code, out, _ = run_cli(capsys, "diff", old, new, "--mode", "full", "--format", "json")
    assert code == 0 and json.loads(out)["compatible"] is True


def test_a_boolean_root_schema_is_a_schema(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run_cli(capsys, "diff", _write(tmp_path / "t.json", True), _write(tmp_path / "f.json", False))
    assert code == 1 and "schema-made-false" in out


def test_a_5000_digit_integer_is_bad_input_not_an_internal_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    huge = tmp_path / "huge.json"
    huge.write_text('{"type": "integer", "maximum": ' + "9" * 5000 + "}")
    code, _, err = run_cli(capsys, "diff", str(huge), str(huge))
    assert code == 2 and "huge.json" in err and "internal error" not in err


# -- --verify-samples -------------------------------------------------------------------------------


def test_verify_samples_confirms_a_compatible_verdict(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    old = _write(tmp_path / "old.json", {"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}}})
    new = _write(
        tmp_path / "new.json", {"type": "object", "properties": {"n": {"type": "integer", "exclusiveMinimum": 2}}}
    )
    code, out, _ = run_cli(capsys, "diff", old, new, "--mode", "full", "--verify-samples", "30", "--format", "json")
    assert code == 0
    samples = json.loads(out)["samples"]
    assert [(s["direction"], s["holds"]) for s in samples] == [("backward", True), ("forward", True)]


def test_verify_samples_reports_a_counterexample_with_a_minimal_instance(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An engine that wrongly calls a narrowing compatible: the sampling must catch it.
    monkeypatch.setattr(
        "contract_platform.compat.check_compatibility",
        lambda old, new, *, mode, policy, **_: Verdict(Mode(mode), True, []),
    )
    old = _write(tmp_path / "old.json", {"type": "integer"})
    new = _write(tmp_path / "new.json", {"type": "integer", "maximum": 3})
    code, out, _ = run_cli(capsys, "diff", old, new, "--verify-samples", "100", "--format", "json")
    assert code == 1
    document = json.loads(out)
    assert document["compatible"] is False
    [backward] = document["samples"]
    assert backward["holds"] is False and backward["counterexample"]["instance"] == 4


def test_verify_samples_must_be_a_positive_count(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    schema = _write(tmp_path / "s.json", {"type": "string"})
    code, _, err = run_cli(capsys, "diff", schema, schema, "--verify-samples", "many")
    assert code == 2 and "--verify-samples" in err


# -- references never leave the catalogue ------------------------------------------------------------


def _hostile_schemas(url: str) -> dict[str, tuple[dict[str, Any], str]]:
    """name -> (schema, JSON pointer of the forbidden reference)"""
    return {
        "dynamic-ref": (
            {"type": "object", "properties": {"a": {"$dynamicRef": f"{url}/x"}}},
            "/properties/a/$dynamicRef",
        ),
        "ref-under-a-property-named-const": (
            {"type": "object", "properties": {"const": {"$ref": f"{url}/const"}}},
            "/properties/const/$ref",
        ),
        "ref-under-a-property-named-enum": (
            {"type": "object", "properties": {"enum": {"items": {"$ref": f"{url}/enum"}}}},
            "/properties/enum/items/$ref",
        ),
        "file-uri": ({"type": "object", "properties": {"a": {"$ref": "file:///etc/hostname"}}}, "/properties/a/$ref"),
        "recursive-ref": (
            {
                "$schema": "https://json-schema.org/draft/2019-09/schema",
                "$id": f"{url}/root",
                "properties": {"a": {"$ref": f"{url}/other"}},
            },
            "/properties/a/$ref",
        ),  # fmt: skip
    }


@pytest.mark.parametrize("case", list(_hostile_schemas("http://x")))
def test_diff_refuses_forbidden_references_without_fetching(
    case: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, listener: Listener
) -> None:
    schema, pointer = _hostile_schemas(listener.url)[case]
    hostile = _write(tmp_path / "hostile.json", schema)
    plain = _write(tmp_path / "plain.json", {"type": "object"})
    code, _, err = run_cli(capsys, "diff", plain, hostile)
    assert code == 2
    assert f"hostile.json#{pointer}" in err and "forbidden reference" in err
    assert listener.requests == []


@pytest.mark.parametrize("verb", ["lint", "check"])
def test_lint_and_check_report_a_forbidden_reference_with_file_and_pointer_and_fetch_nothing(
    verb: str, capsys: pytest.CaptureFixture[str], catalog_copy: Path, listener: Listener
) -> None:
    schema_file = catalog_copy / "billing/invoice-issued/v1/payload.schema.json"
    schema = json.loads(schema_file.read_text())
    schema["properties"]["const"] = {"$ref": f"{listener.url}/const"}
    schema["properties"]["note"] = {"$dynamicRef": f"{listener.url}/note"}
    schema_file.write_text(json.dumps(schema))
    code, _, err = run_cli(capsys, verb, str(catalog_copy))
    assert code == 2
    assert f"{schema_file}#/properties/const/$ref" in err
    assert f"{schema_file}#/properties/note/$dynamicRef" in err
    assert listener.requests == []


def test_verify_samples_without_the_generator_installed_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "hypothesis_jsonschema", None)  # what a missing package looks like
    schema = _write(tmp_path / "s.json", {"type": "string"})
    code, _, err = run_cli(capsys, "diff", schema, schema, "--verify-samples", "5")
    assert code == 2 and "hypothesis_jsonschema" in err and "internal error" not in err

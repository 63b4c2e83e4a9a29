"""``contractctl export asyncapi --out FILE.yaml`` says what the JSON export says, value for value.

YAML reads many plain words as something else (YAML 1.1: ``yes``/``on`` as booleans, ``~`` as null, ``0o17``
as an octal, a date as a timestamp, ``- x`` or ``a: b`` as structure): each such string of a catalogue must
come back as the same string, and the JSON and YAML exports of one catalogue must load to the same data.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from tests.support.cli import run_cli

# Strings a YAML reader would take for something else if they were written plain.
LOOKALIKES = [
    "yes",
    "No",
    "on",
    "off",
    "true",
    "null",
    "~",
    "",
    "007",
    "0o17",
    "0x1F",
    "1e3",
    ".inf",
    "-.5",
    "2026-11-27",
    "2026-11-27T10:00:00Z",
    "12:30:45",
    "- not a list",
    "key: not a mapping",
    "# not a comment",
    "&anchor",
    "*alias",
    "!tag",
    "[1, 2]",
    "{a: 1}",
    "'single'",
    '"double"',
    "trailing space ",
    " leading space",
    "two\nlines",
    "line with trailing spaces  \nnext",
    "tab\there",
    "Zürich, 東京, ✓",
    "x" * 300,
]


@pytest.fixture()
def lookalike_catalogue(catalog_copy: Path) -> Path:
    """The catalogue with a payload property whose enum, default and examples are the lookalike strings."""
    schema_file = catalog_copy / "billing" / "invoice-issued" / "v2" / "payload.schema.json"
    schema = json.loads(schema_file.read_text("utf-8"))
    schema["properties"]["remark"] = {
        "type": "string",
        "description": "yes: it looks like YAML",
        "enum": LOOKALIKES,
        "default": "on",
        "examples": LOOKALIKES[:5],
    }
    schema_file.write_text(json.dumps(schema, indent=2, ensure_ascii=False), "utf-8")
    return catalog_copy


def export(capsys: pytest.CaptureFixture[str], catalogue: Path, target: Path) -> str:
    code, _, err = run_cli(capsys, "export", "asyncapi", "--catalog", str(catalogue), "--out", str(target))
    assert code == 0, err
    return target.read_text("utf-8")


def test_the_yaml_export_loads_to_the_json_export(capsys, tmp_path, lookalike_catalogue):
    as_json = json.loads(export(capsys, lookalike_catalogue, tmp_path / "asyncapi.json"))
    as_yaml = yaml.safe_load(export(capsys, lookalike_catalogue, tmp_path / "asyncapi.yaml"))

    assert as_yaml == as_json
    [remark] = [
        schema["properties"]["remark"]
        for schema in as_yaml["components"]["schemas"].values()
        if "remark" in schema.get("properties", {})
    ]
    assert remark["enum"] == LOOKALIKES and remark["default"] == "on"


def test_the_yaml_export_has_no_anchors_and_leaves_only_the_document(capsys, tmp_path, lookalike_catalogue):
    target = tmp_path / "out" / "asyncapi.yaml"
    target.parent.mkdir()
    target.write_text("an older export\n", "utf-8")

    text = export(capsys, lookalike_catalogue, target)

    events = list(yaml.parse(text))
    assert not [e for e in events if isinstance(e, yaml.AliasEvent) or getattr(e, "anchor", None)]
    assert sum(isinstance(e, yaml.DocumentStartEvent) for e in events) == 1
    assert [p.name for p in target.parent.iterdir()] == ["asyncapi.yaml"]  # replaced, no partial file left


def test_without_libyaml_the_same_text_is_written(capsys, tmp_path, monkeypatch, lookalike_catalogue):
    with_libyaml = export(capsys, lookalike_catalogue, tmp_path / "c.yaml")
    monkeypatch.delattr(yaml, "CSafeDumper")  # what PyYAML built without libyaml offers

    assert export(capsys, lookalike_catalogue, tmp_path / "python.yaml") == with_libyaml

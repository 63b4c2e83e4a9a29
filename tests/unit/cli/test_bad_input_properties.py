"""Property-based: mutated contracts, schemas and fixtures never produce a traceback; exit is 1 or 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contract_platform.cli.main import main

REPO = Path(__file__).resolve().parents[3]
CONTRACT_DIRS = sorted(
    p.parent.relative_to(REPO / "contracts") for p in (REPO / "contracts").glob("*/*/v*/contract.yaml")
)

# Values of the wrong type for any field of contract.yaml or a JSON Schema keyword.
WRONG = st.sampled_from([42, -1, 3.5, True, None, [], {}, "", "x" * 300, ["a", 1], {"k": []}])
SCHEMA_KEYWORDS = [
    "type",
    "required",
    "properties",
    "items",
    "minLength",
    "enum",
    "$ref",
    "pattern",
    "additionalProperties",
]


def run(root: Path, capsys) -> tuple[int, str]:
    try:
        code = main(["check", str(root)])
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.err


def fresh_copy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mutant") / "contracts"
    shutil.copytree(REPO / "contracts", root)
    return root


def assert_clean_failure(code: int, err: str) -> None:
    assert "Traceback" not in err and "internal error" not in err, err
    assert code in (1, 2), (code, err)
    assert err.strip() == "" or all(line.startswith("contractctl: ") for line in err.strip().splitlines())


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(folder=st.sampled_from(CONTRACT_DIRS), data=st.data())
def test_contract_yaml_mutations(tmp_path_factory, capsys, folder, data):
    import yaml

    root = fresh_copy(tmp_path_factory)
    path = root / folder / "contract.yaml"
    doc = yaml.safe_load(path.read_text())
    mutation = data.draw(st.sampled_from(["drop", "wrong", "unknown", "truncate"]))
    if mutation == "drop":
        doc.pop(
            data.draw(st.sampled_from(["messageType", "kind", "owner", "transport", "retention", "pii", "version"]))
        )
        path.write_text(yaml.safe_dump(doc))
    elif mutation == "wrong":
        key = data.draw(st.sampled_from(sorted(doc)))
        harmless = {"consumers": [[]], "holds": [[]], "description": ["x" * 300]}
        # blocks whose keys all have defaults: empty, they are valid (compatibility: {} is the default mode)
        harmless.update(
            {block: [{}] for block in ("topology", "limits", "quality", "validation", "retirement", "compatibility")}
        )
        doc[key] = data.draw(WRONG.filter(lambda v, k=key: v not in harmless.get(k, [])))
        path.write_text(yaml.safe_dump(doc))
    elif mutation == "unknown":
        doc[
            data.draw(st.text("abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=12).filter(lambda k: k not in doc))
        ] = 1
        path.write_text(yaml.safe_dump(doc))
    else:
        raw = path.read_bytes()
        cut = data.draw(st.integers(min_value=0, max_value=len(raw) // 2))
        path.write_bytes(raw[:cut] + data.draw(st.sampled_from([b"", b"\xff\xfe", b": : :", b"{[", b"\t- x"])))
    assert_clean_failure(*run(root, capsys))


@SETTINGS
@given(folder=st.sampled_from(CONTRACT_DIRS), keyword=st.sampled_from(SCHEMA_KEYWORDS), value=WRONG, data=st.data())
def test_payload_schema_mutations(tmp_path_factory, capsys, folder, keyword, value, data):
    root = fresh_copy(tmp_path_factory)
    path = root / folder / "payload.schema.json"
    schema = json.loads(path.read_text())
    target = schema
    props = list(schema.get("properties", {}))
    if props and data.draw(st.booleans()):
        target = schema["properties"][data.draw(st.sampled_from(props))]
    if keyword == "$ref":
        value = data.draw(st.sampled_from(["#/$defs/Missing", "other.json#/x", 7, "#/properties/nope"]))
    schema_valued = keyword in ("items", "additionalProperties")
    if isinstance(value, dict) and keyword != "properties" or value == {} or schema_valued and isinstance(value, bool):
        value = 42  # a dict or a boolean is a (permissive) schema for these keywords: harmless, not a mutation
    if keyword in ("minLength", "required") and (value == [] or isinstance(value, int) and not isinstance(value, bool)):
        value = -1
    if keyword == "pattern" and (value is None or isinstance(value, str)):
        value = "(unclosed["
    if keyword == "type" and value is None:
        value = "strnig"
    if keyword == "enum" and isinstance(value, list) and len(value) > 0:
        value = []
    target[keyword] = value
    path.write_text(json.dumps(schema))
    assert_clean_failure(*run(root, capsys))


@SETTINGS
@given(folder=st.sampled_from(CONTRACT_DIRS), cut=st.floats(min_value=0.05, max_value=0.95))
def test_fixture_truncations(tmp_path_factory, capsys, folder, cut):
    root = fresh_copy(tmp_path_factory)
    fixture = sorted((root / folder / "fixtures" / "valid").glob("*.json"))[0]
    raw = fixture.read_bytes()
    fixture.write_bytes(raw[: int(len(raw) * cut)])
    code, err = run(root, capsys)
    assert_clean_failure(code, err)
    assert code == 2 and fixture.name in err

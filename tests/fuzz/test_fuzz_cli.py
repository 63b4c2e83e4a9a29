"""Every contractctl verb that reads the catalogue, on a catalogue with one hostile file: a clear exit, fast.

Exit codes are 0, 1 or 2 (never 70, "internal error"), stderr is one ``contractctl:`` line per problem
(never a traceback), and every run ends within seconds. Each example copies the real catalogue, makes
one file hostile (a value replaced by deep, huge, aliased or odd YAML/JSON, or the whole file replaced
by bytes) and runs one verb on it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.fuzz.hostile import (
    BACKTRACKING_TEXT,
    CATASTROPHIC_PATTERN,
    HOSTILE_BYTES,
    HOSTILE_PATTERNS,
    JSON_TEXTS,
    YAML_FLOW_VALUES,
)

from contract_platform.cli.main import main

REPO = Path(__file__).resolve().parents[2]
FAMILY = Path("billing") / "invoice-issued"
PLACEHOLDER = "HOSTILE-VALUE-HERE"
SECONDS = 60.0  # the slowest verb (check) takes a few seconds on an idle machine; this is a bound, not a figure


def verbs(root: Path, tmp: Path, schema: Path) -> dict[str, list[str]]:
    original = REPO / "contracts" / FAMILY / "v1" / "payload.schema.json"
    return {
        "lint": ["lint", str(root)],
        "check": ["check", str(root), "--format", "json"],
        "docs": ["docs", str(root), "--out", str(tmp / "docs")],
        "export": ["export", "asyncapi", "--catalog", str(root), "--out", str(tmp / "asyncapi.json")],
        "status": ["status", "--catalog", str(root), "--registry", f"sqlite:///{tmp / 'registry.db'}"],
        "diff": ["diff", str(original), str(schema), "--mode", "full"],
        "bridge-route": ["bridge", str(root / FAMILY / "v2" / "migration.yaml"), "--catalog", str(root)],
    }


def hostile_yaml(path: Path, data: st.DataObject) -> None:
    document = yaml.safe_load(path.read_text())
    key = data.draw(st.sampled_from(sorted(document)), label="key")
    document[key] = PLACEHOLDER
    value = data.draw(YAML_FLOW_VALUES, label="yaml value")
    path.write_text(yaml.safe_dump(document, sort_keys=False).replace(PLACEHOLDER, value, 1))


def hostile_json(path: Path, data: st.DataObject) -> None:
    document = json.loads(path.read_text())
    key = data.draw(st.sampled_from(sorted(document)), label="key")
    document[key] = PLACEHOLDER
    value = data.draw(JSON_TEXTS, label="json value")
    path.write_text(json.dumps(document).replace(json.dumps(PLACEHOLDER), value, 1))


def hostile_pattern(version: Path, data: st.DataObject) -> None:
    """A payload property under a hostile regular expression (``pattern`` or a ``patternProperties`` name),
    and a fixture's value for it that backtracking engines take forever to refuse."""
    schema_file = version / "payload.schema.json"
    schema = json.loads(schema_file.read_text())
    name = data.draw(st.sampled_from(sorted(schema["properties"])), label="property")
    pattern = data.draw(HOSTILE_PATTERNS, label="pattern")
    if data.draw(st.booleans(), label="as a patternProperties name"):
        schema["patternProperties"] = {pattern: {"type": "string"}}
        schema["properties"][BACKTRACKING_TEXT] = {"type": "string", "description": "a name the pattern almost matches"}
    else:
        schema["properties"][name] = {**schema["properties"][name], "type": "string", "pattern": pattern}
    schema_file.write_text(json.dumps(schema))
    fixture = sorted((version / "fixtures" / "valid").glob("*.json"))[0]
    document = json.loads(fixture.read_text())
    document["payload"][name] = BACKTRACKING_TEXT
    fixture.write_text(json.dumps(document))


def make_hostile(root: Path, data: st.DataObject) -> Path:
    """Make one file of ``root`` hostile; returns the payload schema the diff verb compares."""
    version = root / FAMILY / data.draw(st.sampled_from(["v1", "v2"]), label="version")
    target = data.draw(
        st.sampled_from(["contract.yaml", "migration.yaml", "payload.schema.json", "fixture", "bytes", "pattern"]),
        label="file",
    )
    schema = version / "payload.schema.json"
    if target == "pattern":
        hostile_pattern(version, data)
    elif target == "fixture":
        hostile_json(sorted((version / "fixtures" / "valid").glob("*.json"))[0], data)
    elif target == "payload.schema.json":
        hostile_json(schema, data)
    elif target == "bytes":
        name = data.draw(st.sampled_from(["contract.yaml", "payload.schema.json"]), label="replaced")
        (version / name).write_bytes(data.draw(HOSTILE_BYTES, label="bytes"))
    elif target == "migration.yaml" and (version / target).exists():
        hostile_yaml(version / target, data)
    else:
        hostile_yaml(version / "contract.yaml", data)
    return schema


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_verb_gives_a_clear_exit_on_a_hostile_catalogue(tmp_path_factory, capsys, monkeypatch, data) -> None:
    tmp = tmp_path_factory.mktemp("fuzz")
    root = tmp / "contracts"
    shutil.copytree(REPO / "contracts", root)
    schema = make_hostile(root, data)
    verb = data.draw(st.sampled_from(sorted(verbs(root, tmp, schema))), label="verb")
    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:1/%2F")  # the bridge never connects
    monkeypatch.setenv("CONTRACT_PLATFORM_HOME", str(tmp / "data"))

    started = time.monotonic()
    try:
        code = main(verbs(root, tmp, schema)[verb])
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err

    assert code in (0, 1, 2, 3), (verb, code, err[-2000:])
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]
    lines = err.rstrip("\n").split("\n") if err else []  # "\n" only: a key may hold other line breaks
    assert all(line.startswith(("contractctl: ", "usage:")) for line in lines), err[-2000:]
    assert elapsed < SECONDS, (verb, elapsed)


@pytest.mark.parametrize("verb", ["lint", "check", "docs", "export", "status", "diff", "bridge-route"])
def test_every_verb_fuzzed_accepts_the_real_catalogue(tmp_path, capsys, monkeypatch, verb) -> None:
    """The baseline: the same command lines on the untouched catalogue do not fail as bad input."""
    root = tmp_path / "contracts"
    shutil.copytree(REPO / "contracts", root)
    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:1/%2F")
    monkeypatch.setenv("CONTRACT_PLATFORM_HOME", str(tmp_path / "data"))

    code = main(verbs(root, tmp_path, root / FAMILY / "v2" / "payload.schema.json")[verb])

    expected = {3} if verb == "bridge-route" else {0, 1}  # the bridge gets as far as the (absent) broker
    assert code in expected, capsys.readouterr().err


ARGUMENT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "-", "--", "..", "/", "/dev/null", "/etc", "billing.invoice-issued.v1", "x.y.v0", "%s%n"]),
    st.builds(lambda n: "9" * n, st.sampled_from([20, 5_000])),
).filter(lambda text: "\x00" not in text)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(verb=st.sampled_from(["lint", "check", "diff", "status", "transition", "docs", "export"]), data=st.data())
def test_odd_command_line_arguments_give_a_clear_exit(tmp_path_factory, capsys, monkeypatch, verb, data) -> None:
    tmp = tmp_path_factory.mktemp("args")
    monkeypatch.setenv("CONTRACT_PLATFORM_HOME", str(tmp / "data"))
    monkeypatch.setenv("CONTRACT_REGISTRY_URL", f"sqlite:///{tmp / 'registry.db'}")
    monkeypatch.chdir(tmp)  # the default catalogue (./contracts) is missing: bad input too
    first, second = data.draw(ARGUMENT, label="first"), data.draw(ARGUMENT, label="second")
    argv = {
        "lint": ["lint", first],
        "check": ["check", first],
        "diff": ["diff", first, second],
        "status": ["status", first, "--catalog", str(REPO / "contracts")],
        "transition": ["transition", first, second, "--reason", "fuzz", "--catalog", str(REPO / "contracts")],
        "docs": ["docs", first, "--out", str(tmp / "docs")],
        "export": ["export", "asyncapi", "--catalog", first],
    }[verb]

    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    err = capsys.readouterr().err

    assert code in (0, 1, 2), (argv, code, err[-2000:])
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]


# -- regular expressions and the base side of --against: a verdict within the bound, never a hang or exit 70 ---

CLI_SECONDS = 20.0  # one contractctl call, process start included
CATASTROPHIC, POISON = CATASTROPHIC_PATTERN, BACKTRACKING_TEXT
CONTRACTCTL = [sys.executable, "-c", "import sys; from contract_platform.cli.main import main; sys.exit(main())"]


def contractctl(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """One contractctl process; a run past the bound fails the test instead of hanging it."""
    started = time.monotonic()
    try:
        done = subprocess.run([*CONTRACTCTL, *argv], capture_output=True, text=True, timeout=CLI_SECONDS, cwd=cwd)
    except subprocess.TimeoutExpired:
        pytest.fail(f"contractctl {' '.join(argv)[:200]} ran past {CLI_SECONDS} s")
    assert time.monotonic() - started < CLI_SECONDS
    assert done.returncode in (0, 1, 2), (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr[-2000:]
    return done


def edit_json(path: Path, change: Any) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


def catalogue_copy(tmp_path: Path) -> Path:
    root = tmp_path / "contracts"
    shutil.copytree(REPO / "contracts", root)
    return root


def test_lint_judges_a_fixture_against_a_backtracking_pattern_within_the_bound(tmp_path) -> None:
    root = catalogue_copy(tmp_path)
    version = root / FAMILY / "v1"
    edit_json(version / "payload.schema.json", lambda s: s["properties"]["customerId"].update(pattern=CATASTROPHIC))
    fixture = sorted((version / "fixtures" / "valid").glob("*.json"))[0]
    edit_json(fixture, lambda f: f["payload"].update(customerId=POISON))

    done = contractctl("lint", str(root), "--format", "json")

    assert done.returncode == 1
    found = [f for f in json.loads(done.stdout)["findings"] if f["rule"] == "fixture-valid-rejected"]
    assert (fixture.name, "/payload/customerId") in [(Path(f["file"]).name, f["pointer"]) for f in found]


def committed_catalogue(tmp_path: Path, edit: Any) -> tuple[Path, Path]:
    """A git checkout of the catalogue, ``edit(schema path)`` applied and committed on main; (repo, catalogue)."""
    repo = tmp_path / "repo"
    root = repo / "contracts"
    shutil.copytree(REPO / "contracts", root)
    edit(root / FAMILY / "v1" / "payload.schema.json")
    git = ["git", "-C", str(repo), "-c", "user.email=fuzz@example.com", "-c", "user.name=fuzz"]
    subprocess.run([*git[:3], "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "the base"], check=True)
    return repo, root


@pytest.mark.parametrize("verb", ["check", "diff", "diff-verify-samples"])
def test_a_backtracking_pattern_property_name_is_compared_within_the_bound(tmp_path, verb) -> None:
    """OLD governs undeclared names by a backtracking pattern; NEW declares a name it almost matches."""
    _, root = committed_catalogue(
        tmp_path, lambda path: edit_json(path, lambda s: s.update(patternProperties={CATASTROPHIC: {"type": "string"}}))
    )
    schema = root / FAMILY / "v1" / "payload.schema.json"
    old = tmp_path / "old.schema.json"
    shutil.copy(schema, old)
    declared = {"type": "string", "description": "a name the pattern almost matches"}
    edit_json(schema, lambda s: s["properties"].update({POISON: declared}))

    argv = ["check", str(root), "--against", "main"] if verb == "check" else ["diff", str(old), str(schema)]
    if verb == "diff-verify-samples":
        argv += ["--verify-samples", "20"]
    done = contractctl(*argv)

    assert done.returncode in (0, 1)


@pytest.mark.parametrize("where", ["pattern", "format-regex-value"])
def test_a_huge_repetition_count_is_a_finding_not_a_crash(tmp_path, where) -> None:
    root = catalogue_copy(tmp_path)
    version = root / FAMILY / "v1"
    if where == "pattern":
        edit_json(
            version / "payload.schema.json", lambda s: s["properties"]["customerId"].update(pattern="a{99999999999}")
        )
    else:
        edit_json(version / "payload.schema.json", lambda s: s["properties"]["customerId"].update(format="regex"))
        for fixture in (version / "fixtures" / "valid").glob("*.json"):
            edit_json(fixture, lambda f: f["payload"].update(customerId="a{99999999999}"))

    done = contractctl("lint", str(root), "--format", "json")

    findings = json.loads(done.stdout)["findings"] if done.stdout.strip() else []
    mine = [(f["rule"], f["pointer"]) for f in findings if "invoice-issued/v1" in f["file"]]
    if where == "pattern":
        assert done.returncode == 1
        assert ("pattern-evaluable", "/properties/customerId/pattern") in mine
    else:  # a regular expression by its syntax: the fixtures stay valid
        assert not [rule for rule, _ in mine if rule.startswith("fixture")], mine


@pytest.mark.parametrize(
    "base",
    [
        pytest.param(lambda: "[" * 10_000 + "]" * 10_000, id="nested-10000"),
        pytest.param(lambda: '{"type": "object", "maxProperties": ' + "9" * 5_000 + "}", id="integer-5000-digits"),
    ],
)
def test_check_against_a_git_ref_reads_the_base_with_the_working_trees_bounds(tmp_path, base) -> None:
    good = (REPO / "contracts" / FAMILY / "v1" / "payload.schema.json").read_text()
    _, root = committed_catalogue(tmp_path, lambda path: path.write_text(base()))
    (root / FAMILY / "v1" / "payload.schema.json").write_text(good)

    done = contractctl("check", str(root), "--against", "main")

    assert done.returncode == 2
    assert "payload.schema.json @ main" in done.stderr

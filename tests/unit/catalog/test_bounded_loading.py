"""Catalogue loading is bounded: alias bombs, deep nesting, huge integers and durations are bad input (exit 2).

Each case goes through ``contractctl`` on a copy of the repository's catalogue with one file made hostile;
before the bounds, these hung (alias bomb) or ended in exit 70 "internal error".
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from contract_platform.catalog.documents import MAX_YAML_NODES
from contract_platform.cli.main import main
from contract_platform.limits import DEFAULT_DEPTH_LIMIT, MAX_INTEGER_DIGITS

REPO = Path(__file__).resolve().parents[3]
VERSION = Path("billing") / "invoice-issued" / "v1"


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    root = tmp_path / "contracts"
    shutil.copytree(REPO / "contracts", root)
    return root


def contractctl(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    """Exit code and stderr lines; every line is one ``contractctl: `` message, never a traceback."""
    started = time.monotonic()
    code = main(list(argv))
    assert time.monotonic() - started < 20, "bounded input must be refused quickly"
    err = capsys.readouterr().err.strip().splitlines()
    assert all(line.startswith("contractctl: ") and "internal error" not in line for line in err), err
    return code, err


def alias_bomb() -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 10):
        previous = f"*a{level - 1}"
        lines.append(f"a{level}: &a{level} [{', '.join([previous] * 9)}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("verb", ["lint", "check"])
def test_a_yaml_alias_bomb_is_refused_before_it_expands(catalog: Path, capsys, verb: str) -> None:
    path = catalog / VERSION / "contract.yaml"
    path.write_text(path.read_text() + alias_bomb())

    code, err = contractctl(capsys, verb, str(catalog))

    assert code == 2
    expected = (
        f"contractctl: {path}#/a5: expands to more than {MAX_YAML_NODES} nodes through its aliases (*name); "
        "write the values out or use fewer aliases"
    )
    assert expected in err


def test_an_alias_inside_the_value_it_names_is_refused(catalog: Path, capsys) -> None:
    path = catalog / VERSION / "contract.yaml"
    path.write_text(path.read_text() + "loop: &x [1, *x]\n")

    code, err = contractctl(capsys, "lint", str(catalog))

    assert code == 2
    assert f"contractctl: {path}#/loop/1: the alias *x refers to a value that holds it: it never ends" in err


@pytest.mark.parametrize(
    ("line", "pointer", "says"),
    [
        ("odd: 2026-13-45", "/odd", "is not a date or time YAML can read"),
        ('odd: {"\\ud800": 1}', "/odd/\\ud800", "holds a surrogate"),
        ("odd: 0x" + "f" * 5000, "/odd", "digits is too long"),
    ],
)
def test_values_yaml_cannot_turn_into_text_are_bad_input(catalog: Path, capsys, line, pointer, says) -> None:
    path = catalog / VERSION / "contract.yaml"
    path.write_text(path.read_text() + line + "\n")

    code, err = contractctl(capsys, "lint", str(catalog))

    mine = [text for text in err if text.startswith(f"contractctl: {path}#{pointer}: ")]
    assert code == 2
    assert len(mine) == 1 and says in mine[0], err


def test_yaml_nested_ten_thousand_deep_is_one_line_naming_file_and_pointer(catalog: Path, capsys) -> None:
    path = catalog / VERSION / "contract.yaml"
    path.write_text(path.read_text() + "extra: " + "[" * 10_000 + "]" * 10_000 + "\n")

    code, err = contractctl(capsys, "lint", str(catalog))

    expected = (
        f"contractctl: {path}#/extra{'/0' * (DEFAULT_DEPTH_LIMIT - 1)}: nested deeper than {DEFAULT_DEPTH_LIMIT} "
        "levels; flatten it"
    )
    assert code == 2
    assert expected in err


def test_a_5000_digit_integer_in_contract_yaml_is_bad_input(catalog: Path, capsys) -> None:
    path = catalog / VERSION / "contract.yaml"
    path.write_text(path.read_text() + "limits:\n  maxBodyBytes: " + "7" * 5000 + "\n")

    code, err = contractctl(capsys, "check", str(catalog))

    assert code == 2
    expected = f"{path}#/limits/maxBodyBytes: an integer of 5000 digits is too long (at most {MAX_INTEGER_DIGITS})"
    assert f"contractctl: {expected}" in err


def test_a_5000_digit_integer_in_a_fixture_is_bad_input(catalog: Path, capsys) -> None:
    fixture = sorted((catalog / VERSION / "fixtures" / "valid").glob("*.json"))[0]
    document = json.loads(fixture.read_text())
    text = json.dumps(document).replace('"payload": {', '"payload": {"huge": ' + "1" * 5000 + ", ", 1)
    fixture.write_text(text)

    code, err = contractctl(capsys, "check", str(catalog))

    assert code == 2
    assert f"contractctl: {fixture}#/payload/huge: an integer of 5000 digits is too long (at most 4300)" in err


def test_a_fixture_nested_past_what_the_json_parser_reads_names_its_pointer(catalog: Path, capsys) -> None:
    fixture = sorted((catalog / VERSION / "fixtures" / "invalid").glob("*.json"))[0]
    fixture.write_text('{"metadata": {}, "payload": {"deep": ' + "[" * 5000 + "]" * 5000 + "}}")

    code, err = contractctl(capsys, "lint", str(catalog))

    mine = [line for line in err if line.startswith(f"contractctl: {fixture}#")]
    assert code == 2
    assert len(mine) == 1 and mine[0].startswith(f"contractctl: {fixture}#/payload/deep/0/0/")
    assert mine[0].endswith(f"nested deeper than {DEFAULT_DEPTH_LIMIT} levels; flatten it")


@pytest.mark.parametrize("duration", ["99999999999999999999d", "36501d", "9" * 5000 + "s"])
def test_an_out_of_range_duration_is_bad_input_at_its_pointer(catalog: Path, capsys, duration: str) -> None:
    path = catalog / VERSION / "contract.yaml"
    text = path.read_text()
    assert "retention:" in text
    path.write_text(text.replace("archive: 90d", f"archive: '{duration}'", 1))

    code, err = contractctl(capsys, "lint", str(catalog))

    mine = [line for line in err if line.startswith(f"contractctl: {path}#")]
    assert code == 2
    assert len(mine) == 1 and mine[0].startswith(f"contractctl: {path}#/retention/archive: "), err


@pytest.mark.parametrize("verb", [("lint",), ("export", "asyncapi", "--out")])
def test_a_lone_surrogate_escape_in_a_fixture_is_bad_input_at_its_pointer(
    catalog: Path, capsys, tmp_path: Path, verb: tuple[str, ...]
) -> None:
    fixture = sorted((catalog / VERSION / "fixtures" / "valid").glob("*.json"))[0]
    text = fixture.read_text()
    fixture.write_text(text.replace('"metadata": {', '"metadata": {"note": "\\ud800",', 1))

    argv = [*verb, str(tmp_path / "out.json"), "--catalog", str(catalog)] if len(verb) > 1 else [*verb, str(catalog)]
    code, err = contractctl(capsys, *argv)

    assert code == 2
    assert any(
        line.startswith(f"contractctl: {fixture}#/metadata/note: a string holds a lone surrogate") for line in err
    ), err


def test_a_key_holding_a_newline_is_named_on_one_line(catalog: Path, capsys) -> None:
    path = catalog / VERSION / "contract.yaml"
    path.write_text(path.read_text() + 'odd: {"a\\nb": {"\\ud800": 1}}\n')

    code, err = contractctl(capsys, "lint", str(catalog))

    assert code == 2
    assert f"contractctl: {path}#/odd/a\\nb/\\ud800: a string holds a surrogate" in " ".join(err), err

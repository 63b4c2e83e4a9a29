"""``--format github`` and ``--format junit`` of lint and check: what GitHub and JUnit readers show, same exit codes."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from tests.support.cli import catalogue_repo, run_cli

from contract_platform.cli.ci_formats import Annotation, escape_data, escape_property, github_command
from contract_platform.lint.model import RuleId

INV1 = "billing.invoice-issued.v1"
INV2 = "billing.invoice-issued.v2"
SCHEMA_V1 = "billing/invoice-issued/v1/payload.schema.json"


def line_of(path: Path, needle: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), start=1) if needle in line)


def commands(out: str) -> list[dict[str, str]]:
    """The workflow commands printed, as GitHub reads them: level, properties (unescaped) and message."""
    found = []
    for line in out.splitlines():
        if not line.startswith("::"):
            continue
        head, message = line[2:].split("::", 1)
        level, _, props = head.partition(" ")
        fields = dict(p.split("=", 1) for p in props.split(",")) if props else {}
        unescape = {"%3A": ":", "%2C": ",", "%0D": "\r", "%0A": "\n", "%25": "%"}
        for key, value in fields.items():
            for code, char in unescape.items():
                value = value.replace(code, char)
            fields[key] = value
        found.append({"level": level, "message": message, **fields})
    return found


@pytest.fixture
def broken(catalog_copy: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The catalogue with one error (a time without format) and one warning (an enum without policy), run from
    the folder above it as CI runs from the repository root."""
    schema = catalog_copy / SCHEMA_V1
    document = json.loads(schema.read_text())
    document["properties"]["issuedAt"].pop("format")
    document["properties"]["status"].pop("x-unknownValuePolicy")
    schema.write_text(json.dumps(document, indent=2))
    monkeypatch.chdir(catalog_copy.parent)
    return catalog_copy


def test_escaping_follows_githubs_workflow_command_rules() -> None:
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    line = github_command(Annotation("error", "no/such:file,x.json", "/a", "rule:x,y", "first\nsecond: 50%"))
    assert line == "::error file=no/such%3Afile%2Cx.json,title=rule%3Ax%2Cy::first%0Asecond: 50%25"
    assert "\n" not in line  # a value can never end the command and start another


def test_lint_github_annotates_each_finding_at_its_line(capsys, broken: Path) -> None:
    code, out, _ = run_cli(capsys, "lint", "contracts", "--format", "github")
    text_code, _, _ = run_cli(capsys, "lint", "contracts")
    assert code == text_code == 1  # the error fails the run, in every format alike
    schema = broken / SCHEMA_V1
    by_title = {c["title"]: c for c in commands(out) if c["level"] != "notice"}  # info findings aside
    assert set(by_title) == {"timestamp-format", "enum-unknown-policy"}
    error, warning = by_title["timestamp-format"], by_title["enum-unknown-policy"]
    assert error["level"] == "error" and warning["level"] == "warning"
    assert error["file"] == f"contracts/{SCHEMA_V1}"  # relative to the working directory
    assert int(error["line"]) == line_of(schema, '"issuedAt": {')
    assert int(warning["line"]) == line_of(schema, '"status": {')
    assert error["message"].startswith("/properties/issuedAt: ")


def test_strict_turns_warnings_into_errors_and_fails_in_every_format(capsys, broken: Path) -> None:
    codes = {fmt: run_cli(capsys, "lint", "contracts", "--strict", "--format", fmt)[0] for fmt in ("text", "json")}
    code, out, _ = run_cli(capsys, "lint", "contracts", "--strict", "--format", "github")
    assert {c["level"] for c in commands(out)} == {"error"}
    junit_code, _, _ = run_cli(capsys, "lint", "contracts", "--strict", "--format", "junit")
    assert codes == {"text": 1, "json": 1} and code == junit_code == 1


def test_lint_junit_has_one_testcase_per_contract_and_rule(capsys, broken: Path) -> None:
    code, out, _ = run_cli(capsys, "lint", "contracts", "--format", "junit")
    assert code == 1
    root = ET.fromstring(out.encode("utf-8"))
    [suite] = root.findall("testsuite")
    assert suite.get("name") == "contractctl lint"
    cases = {(c.get("classname"), c.get("name")): c for c in suite.findall("testcase")}
    contracts = {c for c, _ in cases}
    assert len(contracts) == 6 and len(cases) == 6 * len(RuleId) == int(suite.get("tests") or 0)
    failed = {key for key, case in cases.items() if case.find("failure") is not None}
    assert failed == {(INV1, "timestamp-format")} and suite.get("failures") == "1"
    warned = cases[(INV1, "enum-unknown-policy")]
    assert warned.find("failure") is None and "/properties/status" in (warned.findtext("system-out") or "")


def test_junit_escapes_what_a_catalogue_may_hold(capsys, catalog_copy: Path) -> None:
    schema = catalog_copy / SCHEMA_V1
    document = json.loads(schema.read_text())
    document["properties"]['odd<&"\x07>At'] = {"type": "string"}  # a time-like name XML must escape
    schema.write_text(json.dumps(document))
    code, out, _ = run_cli(capsys, "lint", str(catalog_copy), "--format", "junit")
    assert code == 1
    suite = ET.fromstring(out.encode("utf-8")).find("testsuite")
    assert suite is not None
    [failure] = [f for f in suite.iter("failure")]
    assert 'odd<&"\\x07>At' in (failure.text or "")  # a control character as an escape: still valid XML


def test_check_annotates_a_breaking_change_in_the_new_schema_at_the_changed_pointer(capsys, tmp_path, catalog_dir):
    repo = tmp_path / "repo"
    catalogue_repo(repo, catalog_dir)
    schema = repo / "contracts/billing/invoice-issued/v2/payload.schema.json"
    document = json.loads(schema.read_text())
    document["properties"]["newField"] = {"type": "string", "description": "added"}
    document["required"].append("newField")
    schema.write_text(json.dumps(document, indent=2))
    argv = ["check", str(repo / "contracts"), "--against", "main"]

    text_code, _, _ = run_cli(capsys, *argv)
    code, out, _ = run_cli(capsys, *argv, "--format", "github")
    assert code == text_code == 1
    found = commands(out)
    in_schema = {c["title"]: c for c in found if c["file"].endswith("v2/payload.schema.json")}
    assert int(in_schema["required-added"]["line"]) == line_of(schema, '"required"')
    assert in_schema["required-added"]["level"] == "error"
    version = [c for c in found if c["title"] == "version"]
    assert version and version[0]["file"].endswith("v2/contract.yaml")
    assert int(version[0]["line"]) == line_of(repo / "contracts/billing/invoice-issued/v2/contract.yaml", "version:")

    junit_code, out, _ = run_cli(capsys, *argv, "--format", "junit")
    assert junit_code == 1
    suite = ET.fromstring(out.encode("utf-8")).find("testsuite")
    assert suite is not None and suite.get("name") == "contractctl check"
    compatibility = {c.get("classname"): c for c in suite.findall("testcase") if c.get("name") == "compatibility"}
    assert {c.get("classname") for c in suite.findall("testcase")} == {
        c.get("classname") for c in suite.findall("testcase") if c.get("name") == "naming"
    }  # every contract with a test case was linted: one per rule, none for a version the run did not check
    _, out, _ = run_cli(capsys, *argv, "--format", "json")
    checked = {r["messageType"] for r in json.loads(out)["compatibility"]}
    assert set(compatibility) == checked and INV2 in checked  # every version compared, passing ones too
    assert compatibility[INV2].find("failure") is not None
    assert all(compatibility[t].find("failure") is None for t in checked - {INV2})


def test_clean_catalogue_passes_in_every_format(capsys, catalog_dir: Path) -> None:
    for fmt in ("github", "junit"):
        code, out, _ = run_cli(capsys, "check", str(catalog_dir), "--format", fmt)
        assert code == 0
        assert not commands(out) if fmt == "github" else "<failure" not in out


@pytest.mark.parametrize(("numbers", "accepted"), [([10_001, 10_002, 10_003], True), ([10_001, 7, 8], False)])
def test_replay_verdicts_in_both_formats(capsys, tmp_path, catalog_dir, monkeypatch, numbers, accepted) -> None:
    """A narrowing replay accepted on evidence is a warning; one replay refuses is an error, and replay's refusal
    an error on the whole schema file. The stricter orderId pattern of order.order-created.v1 1.3.0, replayed."""
    from datetime import UTC, datetime

    from tests.support.replay import ORDER, tighten, write_archive

    repo = tmp_path / "repo"
    catalogue = catalogue_repo(repo, catalog_dir)
    tighten(catalogue, compatibility={"mode": "BACKWARD", "tightening": "evidence", "minMessages": 3})
    archive = write_archive(tmp_path / "archive", catalogue, numbers, datetime.now(UTC))
    monkeypatch.chdir(repo)
    argv = ["check", "contracts", "--against", "main", "--replay", str(archive), "--no-in-flight", "--engine", "local"]

    code, out, _ = run_cli(capsys, *argv, "--format", "github")

    assert code == (0 if accepted else 1)
    found = commands(out)
    levels = {c["title"]: c["level"] for c in found if c["file"].startswith("contracts/order/order-created/v1/")}
    wanted = "warning" if accepted else "error"
    assert levels == {"pattern-changed": wanted, "version": wanted, "consumers": wanted} | (
        {} if accepted else {"replay": "error"}
    )
    assert all("line" not in c for c in found if c["title"] == "replay")  # the whole schema file

    code, out, _ = run_cli(capsys, *argv, "--format", "junit")
    suite = ET.fromstring(out.encode("utf-8")).find("testsuite")
    assert suite is not None and code == (0 if accepted else 1)
    cases = {(c.get("classname"), c.get("name")): c for c in suite.findall("testcase")}
    compatibility, replay = cases[(ORDER, "compatibility")], cases[(ORDER, "replay")]
    assert (compatibility.find("failure") is None, replay.find("failure") is None) == (accepted, accepted)
    said = compatibility.findtext("system-out") if accepted else compatibility.find("failure").get("message")
    assert ("accepted on evidence (replay decided)" if accepted else "refused (replay decided)") in (said or "")

"""``contractctl check --against REF`` re-checks what the change reaches, as a pull request sees it.

Each test builds a git repository holding a copy of the catalogue (``main``), changes the working tree the
way a pull request would, and reads the check's exit code and JSON: which versions were selected, which
were checked (findings, compatibility), and why.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from tests.support.cli import catalogue_repo, git, run_cli

ORDER = "order.order-created.v1"
QUOTE = "quote.quote-approved.v1"
INV1 = "billing.invoice-issued.v1"
INV2 = "billing.invoice-issued.v2"
ALL = {ORDER, QUOTE, INV1, INV2, "order.create-order.v1", "billing.generate-invoice.v1"}


@pytest.fixture()
def repo(tmp_path: Path, catalog_dir: Path) -> Path:
    """A checkout whose ``main`` holds the catalogue under ``contracts/``; returns the catalogue folder."""
    return catalogue_repo(tmp_path / "repo", catalog_dir)


def _folder(catalog: Path, message_type: str) -> Path:
    return catalog.joinpath(*message_type.split("."))


def _patch_description(catalog: Path, message_type: str) -> None:
    """A compatible change: the payload schema's description, and a patch version."""
    folder = _folder(catalog, message_type)
    schema = json.loads((folder / "payload.schema.json").read_text())
    schema["description"] = "Described again in this pull request."
    (folder / "payload.schema.json").write_text(json.dumps(schema, indent=2))
    manifest = folder / "contract.yaml"
    text = manifest.read_text()
    version = next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("version:"))
    major, minor, patch = version.split(".")
    manifest.write_text(text.replace(f"version: {version}", f"version: {major}.{minor}.{int(patch) + 1}", 1))


def _check(capsys, catalog: Path, *extra: str) -> tuple[int, dict]:
    code, out, err = run_cli(capsys, "check", str(catalog), "--against", "main", "--format", "json", *extra)
    assert code in (0, 1), err
    return code, json.loads(out)


def _checked(document: dict) -> set[str]:
    """The versions the check reported on: compatibility results and the folders of lint findings."""
    found = {r["messageType"] for r in document["compatibility"]}
    for finding in document["findings"]:
        parts = Path(finding["file"]).parts
        at = parts.index("contracts")
        found.add(".".join(parts[at + 1 : at + 4]))
    return found


def test_an_unchanged_contract_is_not_re_checked_nor_blamed(capsys, repo):
    # main already holds a problem in quote-approved; the pull request changes order-created only
    manifest = _folder(repo, QUOTE) / "contract.yaml"
    manifest.write_text(re.sub(r"contact: [^,}\s]+", "contact: nobody", manifest.read_text(), count=1))
    git(repo.parent, "commit", "-qam", "a problem already on main")
    _patch_description(repo, ORDER)

    code, document = _check(capsys, repo)

    assert code == 0, document["findings"]
    assert [v["messageType"] for v in document["selection"]["versions"]] == [ORDER]
    assert document["selection"]["versions"][0]["reasons"] == ["changed"]
    assert (document["selection"]["selected"], document["selection"]["unchanged"]) == (1, 5)
    assert _checked(document) == {ORDER}
    assert document["compatibility"][0]["against"][0].endswith("@ main")
    assert document["contracts"] == 1

    code, everything = _check(capsys, repo, "--all")  # the whole catalogue: main's problem is reported
    assert code == 1
    assert everything["selection"]["selected"] == everything["selection"]["total"] == 6
    assert any(f["rule"] == "owner-contact" and QUOTE.replace(".", "/") in f["file"] for f in everything["findings"])


def test_a_change_to_the_shared_envelope_re_checks_every_contract(capsys, repo):
    envelope = repo / "envelope" / "envelope.v1.schema.json"
    schema = json.loads(envelope.read_text())
    schema["properties"]["metadata"]["properties"]["region"] = {"type": "string"}
    schema["properties"]["metadata"]["required"].append("region")  # no fixture carries it
    envelope.write_text(json.dumps(schema, indent=2))

    code, document = _check(capsys, repo)

    assert code == 1
    selection = document["selection"]
    assert selection["selected"] == selection["total"] == 6 and selection["shared"] == [
        "envelope/envelope.v1.schema.json"
    ]
    rejected = [f for f in document["findings"] if f["rule"] == "fixture-valid-rejected"]
    assert _checked({"compatibility": [], "findings": rejected}) == ALL  # every valid fixture, of every version


def test_a_catalogue_setting_change_re_checks_every_contract(capsys, repo):
    (repo / "catalog.yaml").write_text("defaultDialect: 2020-12\n")  # untracked: a pull request adds it

    code, document = _check(capsys, repo)

    assert code == 0
    assert document["selection"]["selected"] == 6 and document["selection"]["shared"] == ["catalog.yaml"]
    assert len(document["compatibility"]) == 6


def test_a_removed_version_re_checks_the_versions_linked_to_it(capsys, repo):
    shutil.rmtree(_folder(repo, INV2))  # v1 is superseded by v2

    code, document = _check(capsys, repo)

    assert code == 1
    assert document["selection"]["removed"] == [INV2]
    assert {v["messageType"]: v["reasons"] for v in document["selection"]["versions"]} == {INV1: [f"linked to {INV2}"]}
    [finding] = [f for f in document["findings"] if f["rule"] == "superseded-by"]
    assert "billing/invoice-issued/v1/contract.yaml" in finding["file"] and INV2 in finding["message"]
    assert _checked(document) == {INV1}


def test_an_untracked_file_selects_its_version(capsys, repo):
    fixtures = _folder(repo, ORDER) / "fixtures" / "valid"
    first = sorted(fixtures.glob("*.json"))[0]
    shutil.copy(first, fixtures / "another-order.json")  # a new file the pull request adds, not yet in git

    code, document = _check(capsys, repo)

    assert code == 0
    assert {v["messageType"]: v["reasons"] for v in document["selection"]["versions"]} == {ORDER: ["changed"]}


def test_a_breaking_change_in_the_changed_contract_still_fails(capsys, repo):
    schema_file = _folder(repo, ORDER) / "payload.schema.json"
    schema = json.loads(schema_file.read_text())
    schema["required"] = [*schema.get("required", []), "brandNewField"]
    schema["properties"]["brandNewField"] = {"type": "string"}
    schema_file.write_text(json.dumps(schema, indent=2))

    code, document = _check(capsys, repo)

    assert code == 1
    [result] = document["compatibility"]
    assert result["messageType"] == ORDER and result["ok"] is False


def test_text_output_says_how_many_versions_were_selected(capsys, repo):
    _patch_description(repo, ORDER)
    code, out, _ = run_cli(capsys, "check", str(repo), "--against", "main")
    assert code == 0
    assert "1 of 6 versions changed since main; 5 unchanged not re-checked" in out.splitlines()


def test_a_ref_that_does_not_exist_or_no_checkout_is_bad_input(capsys, repo, catalog_copy):
    code, _, err = run_cli(capsys, "check", str(repo), "--against", "no-such-branch")
    assert code == 2 and "--against no-such-branch: no such commit or branch" in err
    code, _, err = run_cli(capsys, "check", str(catalog_copy), "--against", "main")
    assert code == 2 and "is not inside a git checkout" in err

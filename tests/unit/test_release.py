"""A release has a version, says what an upgrade to it asks, and ``contractctl --version`` prints it.

``pyproject.toml``'s version is raised with every release; CHANGELOG.md's newest release is that version,
with the date it was cut and an **Upgrading** section, and docs/upgrading.md has its steps from the release
before (contract_platform.release).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from contract_platform.cli.main import main
from contract_platform.release import DISTRIBUTION

REPO = Path(__file__).resolve().parents[2]
RELEASE = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?$", re.MULTILINE)


def declared() -> str:
    return str(tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["version"])


def releases() -> list[tuple[str, str | None, str]]:
    """CHANGELOG.md's releases, newest first: (version, date, the entry's text)."""
    text = (REPO / "CHANGELOG.md").read_text("utf-8")
    found = list(RELEASE.finditer(text))
    ends = [match.start() for match in found[1:]] + [len(text)]
    return [(m["version"], m["date"], text[m.end() : end]) for m, end in zip(found, ends, strict=True)]


def test_contractctl_version_prints_the_installed_release(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])

    assert done.value.code == 0
    assert capsys.readouterr().out == f"contractctl {version(DISTRIBUTION)}\n"


def test_contractctl_version_needs_no_verb_and_loads_none() -> None:
    probe = (
        "import sys\n"
        "from contract_platform.cli.main import main\n"
        "try:\n"
        "    main(['--version'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('contract_platform.cli.') and not m.endswith('.main')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)

    assert done.stdout.splitlines()[-1] == "[]"


def test_the_changelog_s_newest_release_is_the_declared_version_with_its_upgrade_steps() -> None:
    (unreleased, _, _), (newest, date, entry), *older = releases()

    assert unreleased == "Unreleased"
    assert newest == declared() and date is not None
    assert re.search(r"^### Upgrading from ", entry, re.MULTILINE), f"{newest} says nothing of an upgrade"
    assert older, "the release before it is listed too"


def test_docs_upgrading_has_the_steps_from_the_release_before_to_the_declared_one() -> None:
    (_, _, _), (newest, _, _), (previous, _, _), *_ = releases()

    assert f"## From {previous} to {newest}\n" in (REPO / "docs" / "upgrading.md").read_text("utf-8")

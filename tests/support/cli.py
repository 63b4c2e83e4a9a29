"""Running ``contractctl`` in the test's process, and a git checkout of the catalogue as a pull request sees it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from contract_platform.cli.main import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``contractctl ARGV``; argparse's usage errors give their exit code too."""
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def git(repo: Path, *args: str) -> None:
    identity = ["-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "-C", str(repo), *identity, *args], check=True, capture_output=True)


def catalogue_repo(root: Path, catalog_dir: Path) -> Path:
    """A checkout at ``root`` whose ``main`` holds a copy of ``catalog_dir`` under ``contracts/``; returns the
    catalogue folder (change its working tree as a pull request would, then ``check --against main``)."""
    shutil.copytree(catalog_dir, root / "contracts")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root / "contracts"

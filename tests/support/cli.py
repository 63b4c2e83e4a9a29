"""Running ``contractctl`` in the test's process or as a user's shell does (its output to a reader that leaves),
and a git checkout of the catalogue as a pull request sees it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
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


CONTRACTCTL = Path(sys.executable).with_name("contractctl")  # the installed command, as a user runs it


@dataclass(frozen=True)
class Left:
    """What a ``contractctl`` process did when the reader of its output left: its exit code, what it wrote on
    stderr, and the lines the reader took before leaving."""

    code: int
    stderr: str
    read: tuple[str, ...] = ()


def into_closed_pipe(argv: list[str], env: Mapping[str, str], *, timeout: float = 120) -> Left:
    """``contractctl ARGV`` whose standard output is a pipe nobody reads any more: the reader closed it
    before the command wrote anything (``contractctl ... | true``)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [str(CONTRACTCTL), *argv],
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=dict(env),
            timeout=timeout,
            check=False,
        )
    finally:
        os.close(write_end)
    return Left(done.returncode, done.stderr.decode("utf-8", "replace"))


def reading_one_line(argv: list[str], env: Mapping[str, str], *, timeout: float = 120) -> Left:
    """``contractctl ARGV | head -1``: the reader takes the first line, then closes the pipe."""
    process = subprocess.Popen(
        [str(CONTRACTCTL), *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
    )
    assert process.stdout is not None and process.stderr is not None
    try:
        first = process.stdout.readline().decode("utf-8", "replace")
        process.stdout.close()
        stderr = process.stderr.read().decode("utf-8", "replace")  # until the process ends
        code = process.wait(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return Left(code, stderr, (first,))


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

"""Earlier versions of a contract's schema, from git (pull requests) — the registry keeps its own.

``contractctl check --against origin/main`` compares each contract with the same major at a git
ref, so a pull request that breaks a contract is refused before it merges. The schema at the ref is
read by the working tree's own reader (``documents.parse_json_document``), with the same depth and
integer bounds: a base schema past them is bad input at ``<path> @ <ref>`` and its pointer.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from contract_platform.catalog.documents import DocumentProblem, parse_json_document, parse_yaml_document
from contract_platform.catalog.model import Contract
from contract_platform.errors import SchemaError, UsageError

__all__ = ["schema_at_git_ref", "schemas_at_git_ref"]


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False)
    except FileNotFoundError as exc:
        raise UsageError("--against needs git on PATH") from exc


def _top_and_ref(folder: Path, ref: str) -> Path:
    """The checkout's top folder, once ``ref`` is known to name a commit there (else a ``UsageError``)."""
    top = _git(folder, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise UsageError(f"--against {ref}: {folder} is not inside a git checkout")
    if _git(folder, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        raise UsageError(f"--against {ref}: no such commit or branch (fetch it first, e.g. git fetch origin main)")
    return Path(top.stdout.strip()).resolve()


def _parsed(relative: str, ref: str, schema: str | None, manifest: str | None) -> tuple[str, Any] | None:
    if schema is None or manifest is None:
        return None
    try:
        raw = parse_yaml_document(manifest, f"{relative}/contract.yaml @ {ref}")
        version = str(raw.get("version", "?")) if isinstance(raw, dict) else "?"
        return f"{version} @ {ref}", parse_json_document(schema, f"{relative}/payload.schema.json @ {ref}")
    except DocumentProblem as exc:
        if exc.problem.message.startswith(("not valid JSON", "not valid YAML")):
            return None  # the old version did not parse; nothing to compare against
        raise SchemaError(exc.problem.file, exc.problem.pointer, exc.problem.message) from None


def schema_at_git_ref(contract: Contract, ref: str) -> tuple[str, Any] | None:
    """(``<version> @ <ref>``, payload schema) as the contract was at ``ref``; None if it did not exist there."""
    top = _top_and_ref(contract.directory, ref)
    relative = contract.directory.resolve().relative_to(top).as_posix()
    schema = _git(contract.directory, "show", f"{ref}:{relative}/payload.schema.json")
    manifest = _git(contract.directory, "show", f"{ref}:{relative}/contract.yaml")
    return _parsed(
        relative,
        ref,
        schema.stdout if schema.returncode == 0 else None,
        manifest.stdout if manifest.returncode == 0 else None,
    )


def schemas_at_git_ref(contracts: Iterable[Contract], ref: str) -> dict[str, tuple[str, Any] | None]:
    """``schema_at_git_ref`` for many contracts at once: one ``git cat-file --batch`` for all of them
    (a pull-request check of thousands of versions starts two git processes, not four per version)."""
    chosen = list(contracts)
    if not chosen:
        return {}
    top = _top_and_ref(chosen[0].directory, ref)
    relatives = {c.message_type: c.directory.resolve().relative_to(top).as_posix() for c in chosen}
    names = [f"{ref}:{relative}/{name}" for relative in relatives.values() for name in _FILES]
    try:
        done = subprocess.run(
            ["git", "cat-file", "--batch"],
            cwd=top,
            input="".join(f"{name}\n" for name in names).encode("utf-8"),
            capture_output=True,
            timeout=300,
            check=False,
        )
    except FileNotFoundError as exc:
        raise UsageError("--against needs git on PATH") from exc
    if done.returncode != 0:
        raise UsageError(f"--against {ref}: git cat-file failed: {done.stderr.decode('utf-8', 'replace').strip()}")
    blobs = _read_batch(done.stdout, len(names))
    found: dict[str, tuple[str, Any] | None] = {}
    for index, (message_type, relative) in enumerate(relatives.items()):
        schema, manifest = blobs[2 * index], blobs[2 * index + 1]
        found[message_type] = _parsed(relative, ref, schema, manifest)
    return found


_FILES = ("payload.schema.json", "contract.yaml")


def _read_batch(output: bytes, count: int) -> list[str | None]:
    """The texts ``git cat-file --batch`` answered, in order; None for a name missing at the ref (or not a
    file, or not UTF-8 text: nothing to compare against)."""
    texts: list[str | None] = []
    at = 0
    for _ in range(count):
        end = output.index(b"\n", at)
        header = output[at:end].split(b" ")
        at = end + 1
        if len(header) != 3 or not header[2].isdigit():  # "<name> missing", "<name> ambiguous"...
            texts.append(None)
            continue
        size = int(header[2])
        blob = output[at : at + size]
        at += size + 1  # the blob and its newline
        try:
            texts.append(blob.decode("utf-8") if header[1] == b"blob" else None)
        except UnicodeDecodeError:
            texts.append(None)
    return texts

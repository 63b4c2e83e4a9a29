"""Earlier versions of a contract's schema, from git (pull requests) — the registry keeps its own.

``contractctl check --against origin/main`` compares each contract with the same major at a git
ref, so a pull request that breaks a contract is refused before it merges. The schema at the ref is
read by the working tree's own reader (``documents.parse_json_document``), with the same depth and
integer bounds: a base schema past them is bad input at ``<path> @ <ref>`` and its pointer.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from contract_platform.catalog.documents import DocumentProblem, parse_json_document, parse_yaml_document
from contract_platform.catalog.model import Contract
from contract_platform.errors import SchemaError, UsageError

__all__ = ["schema_at_git_ref"]


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False)
    except FileNotFoundError as exc:
        raise UsageError("--against needs git on PATH") from exc


def schema_at_git_ref(contract: Contract, ref: str) -> tuple[str, Any] | None:
    """(``<version> @ <ref>``, payload schema) as the contract was at ``ref``; None if it did not exist there."""
    top = _git(contract.directory, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise UsageError(f"--against {ref}: {contract.directory} is not inside a git checkout")
    if _git(contract.directory, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        raise UsageError(f"--against {ref}: no such commit or branch (fetch it first, e.g. git fetch origin main)")
    relative = contract.directory.resolve().relative_to(Path(top.stdout.strip()).resolve()).as_posix()
    schema = _git(contract.directory, "show", f"{ref}:{relative}/payload.schema.json")
    manifest = _git(contract.directory, "show", f"{ref}:{relative}/contract.yaml")
    if schema.returncode != 0 or manifest.returncode != 0:
        return None
    try:
        raw = parse_yaml_document(manifest.stdout, f"{relative}/contract.yaml @ {ref}")
        version = str(raw.get("version", "?")) if isinstance(raw, dict) else "?"
        return f"{version} @ {ref}", parse_json_document(schema.stdout, f"{relative}/payload.schema.json @ {ref}")
    except DocumentProblem as exc:
        if exc.problem.message.startswith(("not valid JSON", "not valid YAML")):
            return None  # the old version did not parse; nothing to compare against
        raise SchemaError(exc.problem.file, exc.problem.pointer, exc.problem.message) from None

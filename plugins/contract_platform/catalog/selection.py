"""Which contract versions a pull request reaches: ``contractctl check --against REF`` re-checks only those.

A check against a git ref looks at what changed between ``REF`` and the working tree (committed, staged,
unstaged and untracked files alike: a pull-request check runs on the checked-out tree) and selects:

| a changed file | selects | reason |
|---|---|---|
| under ``<domain>/<name>/v<N>/`` | that version | ``changed`` |
| ``envelope/...`` or ``catalog.yaml`` | every version: each is validated with the envelope, each schema read in the default draft | ``<file> changed`` |
| a version's folder, or the folder was removed | the other majors of its family (``migration.yaml`` and the predecessor rules read across majors) and every version whose ``supersededBy`` names it | ``linked to <messageType>`` |

Payload schemas ``$ref`` only their own definitions (docs/design.md#contract-format) and a contract
reads no file outside its own folder (a consumer's reader schema lies beside its contract.yaml), so no
other file is shared. A fixture naming another version's messageType is already wrong in its own
version (``fixture-metadata``), so no link is followed for it. Files of the catalogue folder that
belong to no version (a README) select nothing. With ``--all``, every version is selected.

The whole catalogue is still loaded (lint's catalogue-wide rules see every version: successor links,
predecessors, duplicate messageTypes), but only the selected versions' payload schemas are checked
against their draft's metaschema (``load_catalog(verify=...)``), and lint findings, compatibility and
replay are reported for the selected versions only. An unchanged version is taken as it was at ``REF``,
where the check that merged it ran.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract_platform.catalog.loading import CATALOG_SETTINGS_PATH, ENVELOPE_SCHEMA_PATH
from contract_platform.catalog.model import Catalog
from contract_platform.errors import UsageError

__all__ = ["CHANGED", "Changes", "Selection", "changed_since", "changes_of", "select", "unverified_problems"]

CHANGED = "changed"
_VERSION_FOLDER = re.compile(r"^v[1-9][0-9]*$")
_SHARED_FOLDERS = (ENVELOPE_SCHEMA_PATH.parts[0],)  # "envelope"
_SHARED_FILES = (CATALOG_SETTINGS_PATH.as_posix(),)  # "catalog.yaml"


@dataclass(frozen=True)
class Changes:
    """What changed under a catalogue folder since ``ref``: version folders (as messageTypes) and shared files."""

    ref: str
    versions: frozenset[str]
    shared: tuple[str, ...] = ()
    files: int = 0  # changed files under the catalogue folder, all kinds

    def loads(self, message_type: str) -> bool:
        """Whether a version's payload schema is verified while loading (``load_catalog(verify=...)``): the
        changed versions and their families; every version once a shared file changed."""
        if self.shared:
            return True
        family = message_type.rsplit(".", 1)[0]
        return message_type in self.versions or family in self.families

    @property
    def families(self) -> frozenset[str]:
        return frozenset(v.rsplit(".", 1)[0] for v in self.versions)


def changes_of(ref: str, paths: Iterable[str]) -> Changes:
    """``Changes`` from paths relative to the catalogue folder (``/``-separated)."""
    versions: set[str] = set()
    shared: set[str] = set()
    count = 0
    for path in paths:
        count += 1
        parts = path.split("/")
        if parts[0] in _SHARED_FOLDERS or path in _SHARED_FILES:
            shared.add(path)
        elif len(parts) >= 4 and _VERSION_FOLDER.match(parts[2]):
            versions.add(".".join(parts[:3]))
    return Changes(ref=ref, versions=frozenset(versions), shared=tuple(sorted(shared)), files=count)


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", "-c", "core.quotepath=false", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except FileNotFoundError as exc:
        raise UsageError("--against needs git on PATH") from exc


def changed_since(root: Path, ref: str) -> Changes:
    """Files under the catalogue folder ``root`` that differ between ``ref`` and the working tree, untracked
    files included. ``UsageError`` (exit 2) when ``root`` is not in a git checkout or ``ref`` names no commit."""
    top = _git(root, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise UsageError(f"--against {ref}: {root} is not inside a git checkout")
    if _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        raise UsageError(f"--against {ref}: no such commit or branch (fetch it first, e.g. git fetch origin main)")
    top_folder = Path(top.stdout.strip()).resolve()
    prefix = root.resolve().relative_to(top_folder).as_posix()
    scope = "." if prefix == "." else prefix
    listed: set[str] = set()
    for args in (
        ("diff", "--name-only", "--no-renames", "-z", ref, "--", scope),
        ("ls-files", "--others", "--exclude-standard", "-z", "--", scope),
    ):
        done = _git(top_folder, *args)
        if done.returncode != 0:
            raise UsageError(f"--against {ref}: git {args[0]} failed: {done.stderr.strip()}")
        listed.update(name for name in done.stdout.split("\0") if name)
    start = "" if prefix == "." else prefix + "/"
    return changes_of(ref, sorted(name[len(start) :] for name in listed if name.startswith(start)))


@dataclass(frozen=True)
class Selection:
    """The versions a check re-checks, each with why; ``ref`` None: every version (``--all``, or no ref)."""

    total: int
    reasons: Mapping[str, tuple[str, ...]]
    ref: str | None = None
    removed: tuple[str, ...] = ()
    shared: tuple[str, ...] = ()
    unverified: frozenset[str] = field(default_factory=frozenset)  # selected, loaded without the metaschema check

    @property
    def selected(self) -> list[str]:
        return sorted(self.reasons)

    @property
    def everything(self) -> bool:
        return len(self.reasons) == self.total

    def __contains__(self, message_type: object) -> bool:
        return message_type in self.reasons

    def __len__(self) -> int:
        return len(self.reasons)

    def describe(self) -> str:
        """One line for people: how many versions were selected, since when, and why."""
        count, total = len(self.reasons), self.total
        if self.ref is None:
            return f"{count} of {total} versions checked (all)"
        if self.shared:
            return f"{count} of {total} versions re-checked: {', '.join(self.shared)} changed since {self.ref}"
        changed = sum(1 for reasons in self.reasons.values() if CHANGED in reasons)
        linked = count - changed
        line = f"{changed} of {total} versions changed since {self.ref}"
        if linked:
            line += f", {linked} linked to them re-checked"
        if self.removed:
            line += f", {len(self.removed)} removed ({', '.join(self.removed)})"
        return line + f"; {total - count} unchanged not re-checked"

    def to_dict(self) -> dict[str, Any]:
        return {
            "against": self.ref,
            "total": self.total,
            "selected": len(self.reasons),
            "unchanged": self.total - len(self.reasons),
            "removed": list(self.removed),
            "shared": list(self.shared),
            "versions": [{"messageType": m, "reasons": list(self.reasons[m])} for m in self.selected],
        }


def select(catalog: Catalog, changes: Changes | None) -> Selection:
    """The versions of ``catalog`` that ``changes`` reach (module docstring); every version when None."""
    if changes is None:
        return Selection(total=len(catalog), reasons={c.message_type: ("all",) for c in catalog})
    if changes.shared:
        reason = f"{', '.join(changes.shared)} changed"
        return Selection(
            total=len(catalog),
            reasons={c.message_type: (reason,) for c in catalog},
            ref=changes.ref,
            shared=changes.shared,
        )
    reasons: dict[str, list[str]] = {m: [CHANGED] for m in changes.versions if m in catalog}
    removed = tuple(sorted(m for m in changes.versions if m not in catalog))
    touched = set(changes.versions)
    families = changes.families
    for contract in catalog:
        links = [
            m
            for m in sorted(touched)
            if m != contract.message_type and (m.rsplit(".", 1)[0] == contract.family or contract.superseded_by == m)
        ]
        if contract.family not in families and contract.superseded_by not in touched:
            continue
        for linked in links:
            reasons.setdefault(contract.message_type, []).append(f"linked to {linked}")
    unverified = frozenset(m for m in reasons if not changes.loads(m))
    return Selection(
        total=len(catalog),
        reasons={m: tuple(r) for m, r in reasons.items()},
        ref=changes.ref,
        removed=removed,
        unverified=unverified,
    )


def unverified_problems(catalog: Catalog, selection: Selection) -> list[Any]:
    """The metaschema problems of selected versions loaded without that check (linked through ``supersededBy``
    only): a version that is re-checked is checked whole."""
    from contract_platform.catalog.documents import DocumentProblem, read_json
    from contract_platform.catalog.schemas import schema_problems

    problems: list[Any] = []
    for message_type in sorted(selection.unverified):
        contract = catalog.get(message_type)
        if contract is None:
            continue
        try:
            schema = read_json(contract.schema_file)
        except DocumentProblem as exc:
            problems.append(exc.problem)
            continue
        problems.extend(schema_problems(str(contract.schema_file), schema, default=catalog.default_dialect))
    return problems

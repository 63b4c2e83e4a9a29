"""Retention holds: what stops retention from deleting a contract's archive (docs/design.md#retention).

Two sources, one answer (``holds_in_force``), which the ``archive_retention`` DAG, ``contractctl retention`` and
the Contracts page all ask:

- **catalogue holds**: ``holds:`` in contract.yaml (audit, legal, replay; in force through their ``until`` day).
  The same holds that keep a version from retiring (``retirement.policy.check_holds``) keep its archive: a hold
  is a promise to keep the evidence, and the archive is that evidence;
- **investigation holds**: set and released by hand for an investigation, with a reason and an owner, and an
  ``until`` day or none (in force until released), in ``<data>/retention/holds.json``. A file in the data
  folder rather than a store table, so that it lives beside the archive it protects (the same volume every
  worker mounts) and is written with the archive's own tools: an ``flock`` around the read-change-write and an
  atomic ``os.replace``, so two workers never lose each other's change.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from contract_platform import settings
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.errors import ArchiveError, UsageError

__all__ = [
    "CATALOGUE",
    "INVESTIGATION",
    "InvestigationHold",
    "RetentionHold",
    "holds_file",
    "holds_in_force",
    "read_investigation_holds",
    "release_hold",
    "set_hold",
]

CATALOGUE = "catalogue"
INVESTIGATION = "investigation"


@dataclass(frozen=True)
class InvestigationHold:
    """A hold set by hand: ``message_type``'s archive is kept while an investigation needs it."""

    message_type: str
    reason: str
    owner: str
    set_at: datetime
    until: date | None = None  # None: until released

    def in_force(self, today: date) -> bool:
        return self.until is None or today <= self.until

    def to_dict(self) -> dict[str, Any]:
        return {
            "messageType": self.message_type,
            "reason": self.reason,
            "owner": self.owner,
            "setAt": self.set_at.isoformat(),
            "until": self.until.isoformat() if self.until else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str) -> InvestigationHold:
        try:
            return cls(
                str(data["messageType"]),
                str(data["reason"]),
                str(data["owner"]),
                datetime.fromisoformat(str(data["setAt"])).astimezone(UTC),
                date.fromisoformat(str(data["until"])) if data.get("until") else None,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ArchiveError(
                f"{source}: a hold must have messageType, reason, owner, setAt and an ISO until or null ({exc}); "
                "fix the entry or release it with contractctl retention release"
            ) from exc


@dataclass(frozen=True)
class RetentionHold:
    """A hold in force on one version's archive, whichever source declared it."""

    message_type: str
    source: str  # CATALOGUE or INVESTIGATION
    kind: str  # audit | legal | replay, or "investigation"
    reason: str
    until: date | None
    owner: str | None = None

    def describe(self) -> str:
        until = f"until {self.until.isoformat()}" if self.until else "until released"
        owner = f", owner {self.owner}" if self.owner else ""
        return f"{self.kind} hold on {self.message_type} {until} ({self.reason}{owner})"


def holds_file(data: Path | None = None) -> Path:
    """``<data>/retention/holds.json``: the investigation holds."""
    return (data or settings.data_dir()) / "retention" / "holds.json"


def read_investigation_holds(path: Path) -> tuple[InvestigationHold, ...]:
    """Every investigation hold in ``path`` (none when the file does not exist)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ()
    except OSError as exc:
        raise ArchiveError(f"{path}: cannot read the retention holds ({exc.strerror or exc})") from exc
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ArchiveError(f"{path}: not JSON ({exc}); fix it or restore it from a backup") from exc
    entries = document.get("holds") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise ArchiveError(f'{path}: expected {{"holds": [...]}}; fix it or restore it from a backup')
    return tuple(
        InvestigationHold.from_dict(entry if isinstance(entry, dict) else {}, f"{path}#/holds/{n}")
        for n, entry in enumerate(entries)
    )


def holds_in_force(
    catalog: Catalog, investigations: Sequence[InvestigationHold], today: date
) -> dict[str, tuple[RetentionHold, ...]]:
    """messageType -> the holds in force on its archive today, from the catalogue and from investigations."""
    found: dict[str, list[RetentionHold]] = {}
    for contract in catalog:
        for hold in contract.holds_in_force(today):
            found.setdefault(contract.message_type, []).append(
                RetentionHold(contract.message_type, CATALOGUE, hold.kind, hold.reason, hold.until)
            )
    for held in investigations:
        if held.in_force(today):
            found.setdefault(held.message_type, []).append(
                RetentionHold(held.message_type, INVESTIGATION, INVESTIGATION, held.reason, held.until, held.owner)
            )
    return {message_type: tuple(holds) for message_type, holds in found.items()}


def set_hold(
    path: Path, contract: Contract, *, reason: str, owner: str, until: date | None, now: datetime
) -> InvestigationHold:
    """Add an investigation hold on ``contract``'s archive; an owner's earlier hold on it is replaced."""
    if not reason.strip() or not owner.strip():
        raise UsageError("a retention hold needs a --reason and an --owner: who to ask before it is released")
    hold = InvestigationHold(contract.message_type, reason.strip(), owner.strip(), now.astimezone(UTC), until)
    with _locked(path):
        kept = [
            h
            for h in read_investigation_holds(path)
            if not (h.message_type == hold.message_type and h.owner == hold.owner)
        ]
        _write(path, [*kept, hold])
    return hold


def release_hold(path: Path, message_type: str, *, owner: str | None = None) -> tuple[InvestigationHold, ...]:
    """Remove the investigation holds on ``message_type`` (only ``owner``'s when given); the ones removed."""
    with _locked(path):
        holds = read_investigation_holds(path)
        released = tuple(h for h in holds if h.message_type == message_type and (owner is None or h.owner == owner))
        if released:
            _write(path, [h for h in holds if h not in released])
    return released


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ArchiveError(f"{path}: cannot lock the retention holds ({exc.strerror or exc})") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _write(path: Path, holds: Sequence[InvestigationHold]) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        temporary.write_text(json.dumps({"holds": [h.to_dict() for h in holds]}, indent=2) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        raise ArchiveError(f"{path}: cannot write the retention holds ({exc.strerror or exc})") from exc

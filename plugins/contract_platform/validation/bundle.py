"""The catalogue as data that travels: its files' contents, a fingerprint, and a per-process cache.

Spark executors may not see the driver's disk (a ``spark://`` or YARN cluster), so the job ships
the catalogue as a ``CatalogBundle`` (every file under the catalogue folder, as bytes) and each
worker process rebuilds it with the one loader, ``load_catalog``, in a temporary folder. The
compiled ``RecordChecker`` is cached in this module, keyed by catalogue path, fingerprint and
options, so schemas compile once per worker process, not once per batch.
"""

from __future__ import annotations

import hashlib
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from contract_platform.catalog.loading import load_catalog
from contract_platform.catalog.model import Catalog
from contract_platform.validation.records import RecordChecker

__all__ = ["CatalogBundle", "checker_for"]


@dataclass(frozen=True)
class CatalogBundle:
    """Every file of a catalogue folder (relative POSIX path -> bytes) and their fingerprint."""

    root: str
    files: Mapping[str, bytes]
    fingerprint: str

    @classmethod
    def read(cls, root: str | Path) -> CatalogBundle:
        """Read every file under ``root`` (hidden folders and files left out)."""
        root = Path(root)
        files: dict[str, bytes] = {}
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(root)
            if any(part.startswith(".") for part in relative.parts) or not path.is_file():
                continue
            files[relative.as_posix()] = path.read_bytes()
        return cls(root=str(root), files=files, fingerprint=fingerprint(files))

    def load(self) -> Catalog:
        """The catalogue, loaded by ``load_catalog`` from a temporary copy of the files."""
        with tempfile.TemporaryDirectory(prefix="contract-catalog-") as folder:
            for name, content in self.files.items():
                target = Path(folder, *name.split("/"))
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
            return load_catalog(folder)


def fingerprint(files: Mapping[str, bytes]) -> str:
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode("utf-8") + b"\0" + hashlib.sha256(files[name]).digest())
    return "sha256:" + digest.hexdigest()


_CHECKERS: dict[tuple[str, str, int, tuple[tuple[str, str], ...]], RecordChecker] = {}
_LOCK = threading.Lock()


def checker_for(
    bundle: CatalogBundle, *, oversize_bytes: int, statuses: Mapping[str, str] | None = None
) -> RecordChecker:
    """This process's ``RecordChecker`` for ``bundle`` and options, built on first use."""
    key = (bundle.root, bundle.fingerprint, oversize_bytes, tuple(sorted((statuses or {}).items())))
    with _LOCK:
        checker = _CHECKERS.get(key)
        if checker is None:
            checker = RecordChecker(bundle.load(), oversize_bytes=oversize_bytes, statuses=statuses)
            _CHECKERS[key] = checker
        return checker

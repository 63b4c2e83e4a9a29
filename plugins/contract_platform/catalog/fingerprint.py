"""Fingerprints of contract folders: which contract versions changed since the platform last looked."""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["fingerprint_catalog", "fingerprint_folder"]


def fingerprint_folder(folder: Path) -> str:
    """sha256 over every file's relative path and bytes, in a stable order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def fingerprint_catalog(root: Path) -> dict[str, str]:
    """messageType (from the folder) -> fingerprint, for every version folder, loadable or not."""
    envelope = fingerprint_folder(root / "envelope") if (root / "envelope").is_dir() else ""
    result = {}
    for folder in sorted(root.glob("*/*/v*")):
        if folder.is_dir():
            message_type = ".".join(folder.relative_to(root).parts)
            result[message_type] = hashlib.sha256((envelope + fingerprint_folder(folder)).encode()).hexdigest()
    return result

"""Catalogue -> typed message models for services (``contractctl export models``).

The versions are chosen as for a contract bundle (``export.bundle.select_versions``: ``--service`` and/or
``--type``); each becomes one module of a payload type and an envelope type (``export.typed_schema`` says
what the generator is given, ``export.python_models`` what it writes and why). Every file names the catalogue
revision it came from (``catalog_revision``).

Writing a folder: the new files replace the old; a file of an earlier export (its first line is the
``Auto-generated - DO NOT EDIT`` header) that this export does not write any more is removed, so a version
left out of the selection disappears from the code, and the compiler says who still uses it. Anything else in
the folder (hand-written files, another language's export) is left alone.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from contract_platform.catalog.model import Catalog
from contract_platform.errors import UsageError
from contract_platform.export.asyncapi import catalog_fingerprint
from contract_platform.export.bundle import select_versions
from contract_platform.export.java_models import HEADER as JAVA_HEADER
from contract_platform.export.java_models import java_files
from contract_platform.export.python_models import HEADER, package_module, python_module
from contract_platform.export.typed_schema import typed_version
from contract_platform.export.typescript_models import HEADER as TYPESCRIPT_HEADER
from contract_platform.export.typescript_models import typescript_files

__all__ = ["LANGUAGES", "ModelFiles", "catalog_revision", "export_models", "write_models"]

LANGUAGES = ("python", "typescript", "java")
_HEADERS = {"python": HEADER, "typescript": TYPESCRIPT_HEADER, "java": JAVA_HEADER}  # a file of an export starts so
JAVA_PACKAGE = "contracts"


@dataclass(frozen=True)
class ModelFiles:
    """What an export writes: file name -> text, and where it came from."""

    language: str
    revision: str
    message_types: tuple[str, ...]
    files: dict[str, str]


def catalog_revision(catalog: Catalog) -> str:
    """``git:<commit>`` when the catalogue folder is committed and unchanged in a git checkout; otherwise
    ``sha256:<digest>`` of its contents (the AsyncAPI export's fingerprint), so the same files name the same
    revision wherever they are exported."""
    root = catalog.root
    head: subprocess.CompletedProcess[str] | None
    dirty: subprocess.CompletedProcess[str] | None
    try:
        head = subprocess.run(
            ["git", "log", "-1", "--format=%H", "--", "."], cwd=root, capture_output=True, text=True, timeout=30
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all", "--", "."],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        head = dirty = None
    if head is not None and dirty is not None and head.returncode == 0 and dirty.returncode == 0:
        commit = head.stdout.strip()
        if commit and not dirty.stdout.strip():
            return f"git:{commit}"
    return f"sha256:{catalog_fingerprint(catalog)}"


def export_models(
    catalog: Catalog,
    *,
    language: str,
    service: str | None = None,
    message_types: Iterable[str] = (),
    java_package: str = JAVA_PACKAGE,
) -> ModelFiles:
    """The model files of the chosen versions, in ``language`` (one of ``LANGUAGES``); Java's in ``java_package``."""
    if language not in LANGUAGES:
        raise UsageError(f"--lang {language}: models are generated for {', '.join(LANGUAGES)}")
    chosen = sorted(select_versions(catalog, service=service, message_types=message_types))
    revision = catalog_revision(catalog)
    versions = [typed_version(catalog, catalog.contracts[message_type]) for message_type in chosen]
    files: dict[str, str] = {}
    if language == "typescript":
        files = typescript_files(versions, revision=revision)
    elif language == "java":
        files = java_files(versions, revision=revision, package=java_package)
    else:
        for typed in versions:
            files[f"{typed.module}.py"] = python_module(typed, revision=revision)
        files["__init__.py"] = package_module([name.removesuffix(".py") for name in files], revision=revision)
    return ModelFiles(language, revision, tuple(chosen), files)


def write_models(models: ModelFiles, out: Path) -> list[Path]:
    """Write ``models`` into the folder ``out`` (module docstring); the paths removed as left over."""
    removed = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in models.files.items():
            path = out / name
            partial = out / f".{name}.{os.getpid()}.partial"
            partial.write_text(text, encoding="utf-8")
            os.replace(partial, path)
        for path in sorted(out.iterdir()):
            if path.name not in models.files and path.is_file() and _generated(path, _HEADERS[models.language]):
                path.unlink()
                removed.append(path)
    except OSError as exc:
        raise UsageError(f"cannot write the models into {out}: {exc.strerror or exc}") from exc
    return removed


def _generated(path: Path, header: str) -> bool:
    with path.open("rb") as stream:
        return stream.readline().rstrip(b"\r\n").decode("utf-8", "replace") == header

"""What every route needs: the catalogue, the registry (through ``RegistryHook``), and its URLs."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Depends, HTTPException, Request, status

from contract_platform import settings
from contract_platform.catalog import Catalog, load_catalog
from contract_platform.store import SqlRegistry

__all__ = ["CatalogDep", "RegistryDep", "Urls", "UrlsDep", "known_contract"]

MOUNT = "/contracts"  # where the plugin mounts this app on the Airflow api-server


RECHECK_SECONDS = 2.0  # the catalogue's files are walked at most this often (10,000 files: ~0.3 s)

_lock = threading.Lock()
_catalogs: dict[Path, tuple[tuple[tuple[str, int, int], ...], Catalog]] = {}
_checked: dict[Path, float] = {}  # when the files of a catalogue were last walked (time.monotonic)
_registries: dict[str, Any] = {}


def _files(root: Path) -> tuple[tuple[str, int, int], ...]:
    """Every file under ``root`` with its mtime and size: what changes when git changes the catalogue."""
    found = []
    for folder, _dirs, names in os.walk(root):
        for name in names:
            stat = os.stat(os.path.join(folder, name))
            found.append((os.path.join(folder, name), stat.st_mtime_ns, stat.st_size))
    return tuple(sorted(found))


def get_catalog() -> Catalog:
    """The catalogue from ``settings.catalog_dir()``, loaded again only when one of its files changed.

    Whether one changed is checked at most every ``RECHECK_SECONDS``: a git pull shows within that.
    """
    root = settings.catalog_dir()
    cached = _catalogs.get(root)
    if cached is not None and time.monotonic() - _checked.get(root, 0.0) < RECHECK_SECONDS:
        return cached[1]
    signature = _files(root)
    if cached is not None and cached[0] == signature:
        _checked[root] = time.monotonic()
        return cached[1]
    catalog = load_catalog(root)  # a CatalogError is answered with 503 and the problems
    with _lock:
        _catalogs[root] = (signature, catalog)
        _checked[root] = time.monotonic()
    return catalog


def get_registry() -> Any:
    """The registry store ``RegistryHook`` names (its connection, else the default URL), one engine per URL.

    The hook is asked on every request, so a changed connection takes effect at once; the opened
    store (an SQLAlchemy engine with its pool) is kept for the life of the api-server process.
    """
    from contract_platform_airflow.hooks.registry import RegistryHook

    hook = RegistryHook()
    url = hook.get_url()
    with _lock:
        registry = _registries.get(url)
        if registry is None:
            registry = _registries[url] = SqlRegistry.open(url)
    return registry


class Urls:
    """Links that work wherever Airflow is served: this app's prefix and the Airflow UI's root."""

    def __init__(self, request: Request) -> None:
        self.base = str(request.scope.get("root_path", "")).rstrip("/")
        self.airflow = self.base[: -len(MOUNT)] if self.base.endswith(MOUNT) else ""

    def contract(self, message_type: str) -> str:
        return f"{self.base}/c/{quote(message_type, safe='')}"

    def dag_run(self, dag_id: str, run_id: str) -> str:
        """The run's page in Airflow 3's UI (route ``dags/:dagId/runs/:runId``)."""
        return f"{self.airflow}/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"

    def dag(self, dag_id: str) -> str:
        return f"{self.airflow}/dags/{quote(dag_id, safe='')}"


def get_urls(request: Request) -> Urls:
    return Urls(request)


CatalogDep = Annotated[Catalog, Depends(get_catalog)]
RegistryDep = Annotated[Any, Depends(get_registry)]
UrlsDep = Annotated[Urls, Depends(get_urls)]


def known_contract(catalog: Catalog, message_type: str) -> None:
    if message_type not in catalog:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"{message_type!r} is not a messageType of the catalogue ({len(catalog)} contracts); "
            "GET /contracts/api/contracts lists them",
        )

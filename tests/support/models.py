"""Python models generated from a catalogue (``contractctl export models --lang python``) and imported."""

from __future__ import annotations

import importlib.util
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contract_platform.catalog.model import Catalog
from contract_platform.export.models import export_models, write_models

__all__ = ["generated_package"]


def generated_package(catalog: Catalog, out: Path, message_types: Sequence[str] | None = None) -> Any:
    """The models of ``message_types`` (every version of ``catalog`` by default) generated into ``out`` and
    imported as a package of its own name."""
    chosen = list(catalog.contracts) if message_types is None else list(message_types)
    write_models(export_models(catalog, language="python", message_types=chosen), out)
    name = f"generated_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, out / "__init__.py", submodule_search_locations=[str(out)])
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    spec.loader.exec_module(package)
    return package

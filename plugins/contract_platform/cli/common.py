"""Arguments and loading shared by several verbs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from contract_platform import settings

if TYPE_CHECKING:  # the loader pulls in jsonschema and PyYAML: only verbs that load pay for it
    from contract_platform.catalog.model import Catalog

__all__ = ["add_catalog_argument", "add_format_argument", "load"]


def add_format_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=["text", "json"], default="text", help="output format (default text)")


def add_catalog_argument(parser: argparse.ArgumentParser, *, positional: bool = True) -> None:
    if positional:
        parser.add_argument(
            "catalog", nargs="?", type=Path, default=None, help="catalogue folder (default ./contracts)"
        )
    else:
        parser.add_argument("--catalog", type=Path, default=None, help="catalogue folder (default ./contracts)")


def load(path: Path | None) -> Catalog:
    from contract_platform.catalog import load_catalog

    return load_catalog(path or settings.catalog_dir())

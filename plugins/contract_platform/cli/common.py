"""Arguments and loading shared by several verbs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the loader pulls in jsonschema and PyYAML: only verbs that load pay for it
    from contract_platform.catalog.model import Catalog

__all__ = ["add_catalog_argument", "add_dialect_argument", "add_format_argument", "load"]


def add_format_argument(parser: argparse.ArgumentParser, *, ci: bool = False) -> None:
    """``--format text|json``; ``ci``: also ``github`` (workflow annotations) and ``junit`` (cli/ci_formats.py)."""
    choices = ["text", "json", "github", "junit"] if ci else ["text", "json"]
    parser.add_argument(
        "--format",
        choices=choices,
        default="text",
        help="output format (default text)"
        + ("; github: annotations at file and line, junit: JUnit XML for CI test reports" if ci else ""),
    )


def add_catalog_argument(parser: argparse.ArgumentParser, *, positional: bool = True) -> None:
    if positional:
        parser.add_argument(
            "catalog", nargs="?", type=Path, default=None, help="catalogue folder (default ./contracts)"
        )
    else:
        parser.add_argument("--catalog", type=Path, default=None, help="catalogue folder (default ./contracts)")


DIALECTS = ("draft-04", "draft-06", "draft-07", "2019-09", "2020-12")  # catalog.schemas.DRAFTS, without jsonschema


def add_dialect_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--default-dialect",
        choices=DIALECTS,
        default=None,
        help="the draft of a schema without $schema whose keywords do not say (default: the catalogue's "
        "defaultDialect in catalog.yaml, else 2020-12)",
    )


def load(path: Path | None, default_dialect: str | None = None) -> Catalog:
    """The catalogue a verb's ``CATALOG``/``--catalog`` and ``--default-dialect`` name (``load_catalog``, which
    falls back to ``$CONTRACT_CATALOG``); imported here, when a verb loads, so the others start without it."""
    from contract_platform.catalog import load_catalog

    return load_catalog(path, default_dialect=default_dialect)

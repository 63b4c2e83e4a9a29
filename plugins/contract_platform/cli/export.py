"""``contractctl export asyncapi [--catalog DIR] [--out FILE]``: the catalogue in another ecosystem's format.

Without ``--out`` the document goes to stdout as JSON. With ``--out`` its extension picks the
format (``.json``, ``.yaml``/``.yml``) and a one-line summary is printed (``--format json``: as JSON).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contract_platform.cli.common import add_catalog_argument, add_format_argument, load
from contract_platform.cli.output import emit_json, out
from contract_platform.errors import UsageError

HELP = "export the catalogue as an AsyncAPI 3.0 document (JSON or YAML)"
TARGETS = ("asyncapi",)
_SUFFIXES = {".json": "json", ".yaml": "yaml", ".yml": "yaml"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", choices=TARGETS, help="what to export: asyncapi (AsyncAPI 3.0.0)")
    add_catalog_argument(parser, positional=False)
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="file to write; .json, .yaml or .yml picks the format (default: JSON on stdout)",
    )
    add_format_argument(parser)


def run(args: argparse.Namespace) -> int:
    from contract_platform.export import export_asyncapi

    if args.out is None:
        emit_json(export_asyncapi(load(args.catalog)))
        return 0
    render = _renderer(args.out)  # a bad extension fails before the catalogue is loaded
    document = export_asyncapi(load(args.catalog))
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(render(document), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {args.out}: {exc.strerror or exc}") from exc
    summary = {
        "out": str(args.out),
        "asyncapi": document["asyncapi"],
        "version": document["info"]["version"],
        "messages": len(document["components"]["messages"]),
        "channels": len(document["channels"]),
        "operations": len(document["operations"]),
    }
    if args.format == "json":
        emit_json(summary)
    else:
        out(
            f"wrote AsyncAPI {summary['asyncapi']} to {args.out}: {summary['messages']} messages, "
            f"{summary['channels']} channels, {summary['operations']} operations (version {summary['version']})"
        )
    return 0


def _renderer(path: Path) -> Callable[[Any], str]:
    kind = _SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise UsageError(f"--out {path}: unknown extension {path.suffix!r}; use one of {', '.join(_SUFFIXES)}")
    return _json if kind == "json" else _yaml


def _json(document: Any) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _yaml(document: Any) -> str:
    import yaml

    class _NoAliases(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True  # a shared dict is written twice, never as &id001/*id001

    return yaml.dump(document, Dumper=_NoAliases, sort_keys=False, allow_unicode=True, width=120)

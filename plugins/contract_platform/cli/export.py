"""``contractctl export asyncapi|bundle|models [--catalog DIR] [--out FILE]``: the catalogue in another format.

- ``asyncapi``: the catalogue as an AsyncAPI 3.0 document.
- ``bundle --service NAME | --type MESSAGE_TYPE ...``: the contract bundle a service loads
  (``contract_platform.client``, docs/service-client.md): the versions it publishes or consumes, with the
  envelope standard, payload schemas, migration specs, fixtures and a checksum, in one JSON file.
- ``models --lang python --out DIR`` with the bundle's selection: typed message models (``cli.export_models``).

Without ``--out`` the document goes to stdout as JSON. With ``--out`` its extension picks the
format (``.json``, ``.yaml``/``.yml``; a bundle is JSON only) and a one-line summary is printed
(``--format json``: as JSON).
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from contract_platform.cli import export_models
from contract_platform.cli.common import add_catalog_argument, add_format_argument, load
from contract_platform.cli.output import emit_json, out
from contract_platform.errors import UsageError

HELP = "export the catalogue as an AsyncAPI 3.0 document, a service's contract bundle, or typed message models"
TARGETS = ("asyncapi", "bundle", "models")
_SUFFIXES = {".json": "json", ".yaml": "yaml", ".yml": "yaml"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        choices=TARGETS,
        help="what to export: asyncapi (AsyncAPI 3.0.0), bundle (the contracts of one service, for its guards), "
        "or models (typed message classes of the bundle's versions, into the folder --out)",
    )
    add_catalog_argument(parser, positional=False)
    parser.add_argument(
        "--service",
        default=None,
        help="bundle, models: the service whose versions go in (as owner, caller or consumer in the catalogue)",
    )
    parser.add_argument(
        "--type",
        dest="message_types",
        action="append",
        default=[],
        metavar="MESSAGE_TYPE",
        help="bundle, models: a version to include (repeat for more); with --service, in addition to its own",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="file to write; .json, .yaml or .yml picks the format (default: JSON on stdout); models: a folder",
    )
    export_models.add_arguments(parser)
    add_format_argument(parser)


def run(args: argparse.Namespace) -> int:
    if args.target == "bundle":
        return _bundle(args)
    if args.target == "models":
        return export_models.run(args)
    if args.lang is not None:
        raise UsageError("--lang chooses the language of `export models`")
    if args.service is not None or args.message_types:
        raise UsageError("--service and --type choose what goes in: use them with `export bundle` or `export models`")
    from contract_platform.export import export_asyncapi

    if args.out is None:
        emit_json(export_asyncapi(load(args.catalog)))
        return 0
    render = _renderer(args.out)  # a bad extension fails before the catalogue is loaded
    document = export_asyncapi(load(args.catalog))
    _write(args.out, render, document)
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


def _bundle(args: argparse.Namespace) -> int:
    from contract_platform.export.bundle import export_bundle

    if args.out is not None and args.out.suffix.lower() != ".json":
        raise UsageError(f"--out {args.out}: a contract bundle is JSON; name the file *.json")
    if args.service is None and not args.message_types:
        raise UsageError("export bundle: choose what goes in with --service NAME and/or --type MESSAGE_TYPE")
    document = export_bundle(load(args.catalog), service=args.service, message_types=args.message_types)
    if args.out is None:
        emit_json(document)
        return 0
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_bytes(_json(document))
    except OSError as exc:
        raise UsageError(f"cannot write {args.out}: {exc.strerror or exc}") from exc
    contracts = document["contents"]["contracts"]
    summary = {
        "out": str(args.out),
        "formatVersion": document["formatVersion"],
        "checksum": document["checksum"],
        "service": args.service,
        "messageTypes": {name: entry["roles"] for name, entry in contracts.items()},
    }
    if args.format == "json":
        emit_json(summary)
    else:
        listed = ", ".join(f"{name} ({'/'.join(entry['roles'])})" for name, entry in contracts.items())
        out(
            f"wrote the contract bundle {args.out} (format {document['formatVersion']}, {document['checksum'][:19]}...): {listed}"
        )
    return 0


Renderer = Callable[[Any, IO[bytes]], None]


def _renderer(path: Path) -> Renderer:
    kind = _SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise UsageError(f"--out {path}: unknown extension {path.suffix!r}; use one of {', '.join(_SUFFIXES)}")
    return _write_json if kind == "json" else _write_yaml


def _write(path: Path, render: Renderer, document: Any) -> None:
    """``document`` rendered into ``path`` through a file beside it, which replaces ``path`` once complete: a
    failure part-way (a full disk) leaves what was there before, never half a document."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with partial.open("wb") as stream:
                render(document, stream)
            os.replace(partial, path)
        finally:
            partial.unlink(missing_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _write_json(document: Any, stream: IO[bytes]) -> None:
    stream.write(_json(document))


def _json(document: Any) -> bytes:
    """Indented JSON as UTF-8. orjson writes it in a fraction of ``json.dumps(indent=2)``'s time and memory
    (an estate's document is tens of MB); a document orjson would write otherwise (NaN or infinities, which
    it writes as null; integers past 64 bits; keys that are not strings) goes through ``json``."""
    import orjson

    if not _non_finite(document):
        try:
            return orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
        except TypeError:
            pass
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _non_finite(document: Any) -> bool:
    """Whether a float of ``document`` is NaN or infinite (an iterative walk: the document is bounded, not flat)."""
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, float) and not math.isfinite(value):
            return True
    return False


def _write_yaml(document: Any, stream: IO[bytes]) -> None:
    """Block-style YAML in UTF-8, keys in the document's order, lines up to 120 characters, no anchors or
    aliases (a mapping shared by two places is written out at each).

    The document is written as it is walked: its nodes go one by one to libyaml's emitter (PyYAML's own when
    PyYAML was built without libyaml), instead of first building PyYAML's representation of the whole
    document, a second tree several times its size, for its pure-Python emitter (benchmarks/README.md, the
    estate's export). Each scalar is still represented, tagged and resolved by the dumper itself, as
    ``yaml.dump`` does, so the text is the same."""
    import yaml

    dumper_class: Any = getattr(yaml, "CSafeDumper", None) or yaml.SafeDumper
    dumper = dumper_class(stream, allow_unicode=True, width=120, encoding="utf-8", default_flow_style=False)

    def events(value: Any) -> Iterator[yaml.Event]:
        """The events PyYAML's serializer emits for the dumper's representation of ``value``, without anchors."""
        if isinstance(value, dict):
            yield yaml.MappingStartEvent(None, "tag:yaml.org,2002:map", True, flow_style=False)
            for key, item in value.items():
                yield from events(key)
                yield from events(item)
            yield yaml.MappingEndEvent()
        elif isinstance(value, list | tuple):
            yield yaml.SequenceStartEvent(None, "tag:yaml.org,2002:seq", True, flow_style=False)
            for item in value:
                yield from events(item)
            yield yaml.SequenceEndEvent()
        else:
            node = dumper.represent_data(value)
            if not isinstance(node, yaml.ScalarNode):
                raise TypeError(f"{type(value).__name__} is not JSON data")
            detected = dumper.resolve(yaml.ScalarNode, node.value, (True, False))
            default = dumper.resolve(yaml.ScalarNode, node.value, (False, True))
            implicit = (node.tag == detected, node.tag == default)
            yield yaml.ScalarEvent(None, node.tag, implicit, node.value, style=node.style)

    try:
        dumper.emit(yaml.StreamStartEvent(encoding="utf-8"))
        dumper.emit(yaml.DocumentStartEvent(explicit=False))
        for event in events(document):
            dumper.emit(event)
        dumper.emit(yaml.DocumentEndEvent(explicit=False))
        dumper.emit(yaml.StreamEndEvent())
    finally:
        dumper.dispose()

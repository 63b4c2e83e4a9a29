"""``contractctl export models --lang python|typescript|java [--java-package P] [--service S | --type T ...]
[--catalog DIR] --out DIR``: typed message models of the chosen versions (``export.models``), one file per
version, into a folder the build regenerates; the selection is ``export bundle``'s."""

from __future__ import annotations

import argparse

from contract_platform.cli.common import load
from contract_platform.cli.output import emit_json, out
from contract_platform.errors import UsageError

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``export``'s own options for models (its parser holds ``--catalog``, ``--service``, ``--type``, ``--out``).
    ``--lang`` is checked when models are exported (``export.models.LANGUAGES``): the other exports do not load
    the generator, nor the client it imports."""
    parser.add_argument("--lang", default=None, help="models: the language to generate (python, typescript, java)")
    parser.add_argument(
        "--java-package", default=None, help="models --lang java: the package of the records (default: contracts)"
    )


def run(args: argparse.Namespace) -> int:
    from contract_platform.export.models import JAVA_PACKAGE, LANGUAGES, export_models, write_models

    if args.lang is None:
        raise UsageError(f"export models: say which language with --lang {'|'.join(LANGUAGES)}")
    if args.lang not in LANGUAGES:
        raise UsageError(f"export models: --lang {args.lang!r} is not generated; choose one of {', '.join(LANGUAGES)}")
    if args.out is None:
        raise UsageError("export models: name the folder to write the modules into with --out DIR")
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out}: models are written into a folder; it is a file")
    if args.service is None and not args.message_types:
        raise UsageError("export models: choose the versions with --service NAME and/or --type MESSAGE_TYPE")
    if args.java_package is not None and args.lang != "java":
        raise UsageError(
            f"export models: --java-package names the package of Java records; drop it for --lang {args.lang}"
        )
    models = export_models(
        load(args.catalog),
        language=args.lang,
        service=args.service,
        message_types=args.message_types,
        java_package=args.java_package or JAVA_PACKAGE,
    )
    removed = write_models(models, args.out)
    summary = {
        "out": str(args.out),
        "lang": models.language,
        "revision": models.revision,
        "messageTypes": list(models.message_types),
        "files": sorted(models.files),
        "removed": [path.name for path in removed],
    }
    if args.format == "json":
        emit_json(summary)
    else:
        gone = f"; removed {', '.join(summary['removed'])}" if removed else ""
        out(
            f"wrote {len(models.files)} {models.language} files to {args.out} from the catalogue at {models.revision}: "
            f"{', '.join(models.message_types)}{gone}"
        )
    return 0

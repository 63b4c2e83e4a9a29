"""Entry point of ``contractctl``: parse arguments, run one verb, turn errors into exit codes.

Exit codes: 0 ok, 1 the check found problems, 2 bad input or usage, 3 a service (broker, store)
is not reachable, 141 the reader of the output went away (``contractctl lint | head -1``): the
status a shell reports for git, which dies of SIGPIPE there. No traceback reaches a user;
``CONTRACTCTL_DEBUG=1`` shows one.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from contract_platform.errors import CatalogError, ContractPlatformError
from contract_platform.lazy import defer_imports

__all__ = ["READER_GONE", "main"]

READER_GONE = 141  # what a shell reports for git when the reader leaves: it dies of SIGPIPE (128 + 13)

# verb -> module under contract_platform.cli. Only the module of the verb that runs is imported (see
# build_parser), so that ``contractctl diff`` pays neither for the other verbs nor for Spark, SQLAlchemy or pika.
VERBS: dict[str, str] = {
    "lint": "lint",
    "diff": "diff",
    "check": "check",
    "docs": "docs",
    "status": "status",
    "transition": "transition",
    "validate-archive": "validate_archive",
    "bridge": "bridge",
    "archive": "archive",
    "record-activity": "record_activity",
    "export": "export",
    "audit": "audit",
    "quality": "quality",
    "migration": "migration",
    "retention": "retention",
    "housekeeping": "housekeeping",
}


class _Version(argparse.Action):
    """``--version``: the installed release (``release.installed_version``), read only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, argparse.SUPPRESS, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        from contract_platform.release import DISTRIBUTION, installed_version

        found = installed_version()
        if found is None:  # run from a tree never installed: no release to name
            parser.exit(3, f"contractctl: {DISTRIBUTION} is not installed; install it: pip install -e .\n")
        sys.stdout.write(f"contractctl {found}\n")
        parser.exit(0)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"contractctl: error: {message}\n")
        raise SystemExit(2)


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """Every verb's parser, or with ``verb`` that verb's alone (none when it names no verb of ``VERBS``): the
    module of each verb added is imported, with what it imports at module level, so a run builds only its own
    verb's parser."""
    parser = _Parser(prog="contractctl", description="Govern message contracts from proposed to retired.")
    parser.add_argument("--version", action=_Version, help="print the installed release and exit")
    sub = parser.add_subparsers(dest="verb", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, module_name in VERBS.items():
        if verb is not None and name != verb:
            continue
        module = importlib.import_module(f"contract_platform.cli.{module_name}")
        verb_parser = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(verb_parser)
        verb_parser.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    defer_imports()
    try:
        try:
            return _run(argv)
        finally:  # output still buffered is written here, where a reader that left is handled, not at exit
            sys.stdout.flush()
    except BrokenPipeError:
        return _reader_gone()


def _run(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    # The verb is the first word (contractctl has no option of its own but --help and --version); anything
    # else, such as --help or a mistyped verb, gets the whole parser, which lists every verb.
    first = words[0] if words else None
    # --version alone needs no verb's parser: build_parser("--version") adds none
    parser = build_parser(first if first in VERBS or first == "--version" else None)
    args = parser.parse_args(words)
    try:
        return int(args.run(args))
    except CatalogError as exc:
        for problem in exc.problems:
            sys.stderr.write(f"contractctl: {problem}\n")
        return exc.exit_code
    except ContractPlatformError as exc:
        sys.stderr.write(f"contractctl: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("contractctl: interrupted\n")
        return 130
    except BrokenPipeError:  # the reader left: main's to handle, no bug
        raise
    except Exception as exc:  # the last edge: a user never sees a traceback
        if os.environ.get("CONTRACTCTL_DEBUG"):
            raise
        sys.stderr.write(
            f"contractctl: internal error: {type(exc).__name__}: {exc} "
            "(this is a bug; rerun with CONTRACTCTL_DEBUG=1 for details and report it)\n"
        )
        return 70


def _reader_gone() -> int:
    """The reader of the output went away (``contractctl check ... | head -5``): a normal end, said nothing of.

    Standard output, and standard error when it too can no longer be written, are pointed at /dev/null, so
    the interpreter's last flush of what is still buffered does not fail again and complain on its own."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
        try:
            sys.stderr.flush()
        except OSError:
            os.dup2(devnull, sys.stderr.fileno())
    finally:
        os.close(devnull)
    return READER_GONE


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

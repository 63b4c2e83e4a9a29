"""Entry point of ``contractctl``: parse arguments, run one verb, turn errors into exit codes.

Exit codes: 0 ok, 1 the check found problems, 2 bad input or usage, 3 a service (broker, store)
is not reachable. No traceback reaches a user; ``CONTRACTCTL_DEBUG=1`` shows one.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from contract_platform.errors import CatalogError, ContractPlatformError

__all__ = ["main"]

# verb -> module under contract_platform.cli; imported only when that verb runs, so that
# ``contractctl diff`` does not pay for Spark, SQLAlchemy or Airflow.
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
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"contractctl: error: {message}\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="contractctl", description="Govern message contracts from proposed to retired.")
    sub = parser.add_subparsers(dest="verb", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for verb, module_name in VERBS.items():
        module = importlib.import_module(f"contract_platform.cli.{module_name}")
        verb_parser = sub.add_parser(verb, help=module.HELP, description=module.HELP)
        module.add_arguments(verb_parser)
        verb_parser.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
    except Exception as exc:  # the last edge: a user never sees a traceback
        if os.environ.get("CONTRACTCTL_DEBUG"):
            raise
        sys.stderr.write(
            f"contractctl: internal error: {type(exc).__name__}: {exc} "
            "(this is a bug; rerun with CONTRACTCTL_DEBUG=1 for details and report it)\n"
        )
        return 70


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

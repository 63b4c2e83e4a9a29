"""Every Spark job's ``main``: one skeleton (``run_job``) from arguments to exit code.

``run_job`` parses the job's arguments (the common ones, ``contract_platform.job_options``:
``--master``, ``--catalog``, ``--registry-url``, ``--run-id``, ``--no-fail-on-findings``), loads the
catalogue before a JVM starts, gives the job one Spark session for the whole call (stopped at the end
when the job created it), and maps outcomes to exit codes; ``run_parsed`` is the same skeleton for
options already parsed (a job's request object, as ``contractctl`` builds it):

* 0 the job ran and found nothing (or ``--no-fail-on-findings`` and it found something);
* 1 findings (invalid records, missed expectations, parity not holding);
* 2 bad input (``BAD_INPUT``: bad arguments, ``--until`` not after ``--since``, a catalogue that does not
  load, a missing archive): one
  ``error:`` line per problem, no traceback; ``spark-submit`` hands the code back, and the DAGs'
  operator fails such a task without retry;
* 3 the registry store failed (transient: the task retries).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from contract_platform.catalog import load_catalog
from contract_platform.catalog.model import Catalog
from contract_platform.days import check_range
from contract_platform.errors import ContractPlatformError
from contract_platform.job_options import add_job_options
from contract_platform.jvm import quick_start
from spark_jobs.session import build_session, stop_session

__all__ = ["BAD_INPUT", "FINDINGS", "JobRun", "job_parser", "print_error", "run_job", "run_parsed"]

FINDINGS = 1
BAD_INPUT = ContractPlatformError.exit_code  # 2, as contractctl's


def print_error(exc: Exception) -> None:
    """One ``error:`` line per problem on stderr: every problem of a catalogue that does not load, no traceback."""
    for problem in getattr(exc, "problems", None) or [exc]:
        print(f"error: {problem}", file=sys.stderr)


def job_parser(
    prog: str, description: str, *, catalog: bool = True, evidence: bool = True, findings: bool = True
) -> argparse.ArgumentParser:
    """An argument parser with the options every job shares; the job adds its own."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_job_options(parser, catalog=catalog, evidence=evidence, findings=findings)
    return parser


@dataclass
class JobRun:
    """One call of a job: its options, its catalogue, and the one Spark session it uses (made when first asked).

    ``args``: the parsed arguments, or the job's request object (``ValidationRequest``): either has
    the common options as attributes.
    """

    app_name: str
    args: Any
    catalog_dir: str | None = None
    catalog: Catalog | None = None
    registry_url: str | None = None
    quick_start: bool = (
        False  # set by a job that knows its input is small (``reads``), before it first asks for ``spark``
    )
    _session: SparkSession | None = field(default=None, repr=False)
    _created: bool = field(default=False, repr=False)

    @property
    def spark(self) -> SparkSession:
        if self._session is None:
            self._session, self._created = build_session(
                self.app_name, getattr(self.args, "master", None), quick_start=self.quick_start
            )
        return self._session

    def reads(self, path: str) -> str:
        """Say the job reads ``path`` before its session starts: a small local input on a local master gets a
        quick start (``contract_platform.jvm.quick_start``). Returns ``path``."""
        self.quick_start = quick_start(getattr(self.args, "master", None), path)
        return path

    def close(self) -> None:
        if self._session is not None and self._created:
            stop_session(self._session)
        self._session = None


def run_job(
    app_name: str,
    parser: argparse.ArgumentParser,
    body: Callable[[JobRun], int],
    argv: Sequence[str] | None = None,
    *,
    request: Callable[[argparse.Namespace], Any] | None = None,
) -> int:
    """Parse ``argv``, then ``run_parsed``: argparse's own usage errors exit 2 and ``--help`` exits 0.

    ``request``: what turns the parsed arguments into the job's request object (its ``UsageError`` is
    bad input, one ``error:`` line); without it the body gets the arguments themselves.
    """
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed usage (exit 2, bad input) or help (0)
        return int(exc.code or 0)
    if request is None:
        return run_parsed(app_name, args, body)
    try:
        options = request(args)
    except ContractPlatformError as exc:
        print_error(exc)
        return exc.exit_code
    return run_parsed(app_name, options, body)


def run_parsed(app_name: str, options: Any, body: Callable[[JobRun], int]) -> int:
    """Load the catalogue, run ``body`` with one session, map the outcome to an exit code.

    ``options``: the parsed arguments or a request object with the same attribute names. ``body``
    returns 0 or ``FINDINGS``; a ``ContractPlatformError`` becomes its ``exit_code`` with one
    ``error:`` line per problem. ``--no-fail-on-findings`` turns ``FINDINGS`` (only) into 0. A job with
    ``since`` and ``until`` gets them checked here (``check_range``), before the catalogue loads.
    """
    run = JobRun(app_name, options)
    try:
        check_range(getattr(options, "since", None), getattr(options, "until", None))
        if hasattr(options, "catalog"):
            run.catalog = load_catalog(options.catalog)  # fail fast, before a JVM starts
            run.catalog_dir = str(run.catalog.root)
        if hasattr(options, "registry_url"):
            run.registry_url = options.registry_url or os.environ.get("CONTRACT_REGISTRY_URL") or None
        try:
            code = body(run)
        finally:
            run.close()
    except ContractPlatformError as exc:
        print_error(exc)
        return exc.exit_code
    if code == FINDINGS and getattr(options, "no_fail_on_findings", False):
        return 0
    return code

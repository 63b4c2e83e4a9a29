"""The options every Spark job takes, defined once for ``spark-submit`` and ``contractctl`` alike.

A Spark job's parser (``spark_jobs/jobs.py``, ``job_parser``) and a ``contractctl`` verb that runs the
same job (``validate-archive``: ``contract_platform.validation.request``) add these, so an option has
one name, one type and one help text wherever it is given. Pure ``argparse``: nothing here starts Spark.
"""

from __future__ import annotations

import argparse
from datetime import date

from contract_platform.days import parse_day
from contract_platform.errors import UsageError

__all__ = ["add_job_options", "date_arg"]


def add_job_options(
    parser: argparse.ArgumentParser, *, catalog: bool = True, evidence: bool = True, findings: bool = True
) -> None:
    """``--master``, and the options of a job that reads the catalogue, records evidence or judges findings."""
    parser.add_argument("--master", default=None, help="Spark master (default: spark-submit's, else local[*])")
    if catalog:
        parser.add_argument(
            "--catalog", default=None, help="catalogue folder (default $CONTRACT_CATALOG or ./contracts)"
        )
    if evidence:
        parser.add_argument(
            "--registry-url", default=None, help="record evidence in this registry (default $CONTRACT_REGISTRY_URL)"
        )
        parser.add_argument("--run-id", default=None, help="the run the evidence belongs to (e.g. the DAG run's id)")
    if findings:
        parser.add_argument(
            "--no-fail-on-findings",
            action="store_true",
            help="exit 0 when the job ran but found something (findings are evidence); bad input still exits 2",
        )


def date_arg(text: str) -> date | None:
    """A ``YYYY-MM-DD`` option (empty: no bound), for argparse (``contract_platform.days.parse_day``)."""
    try:
        return parse_day(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None

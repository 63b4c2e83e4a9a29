"""``contractctl validate-archive PATH``: the Spark archive validation, run locally (the same job as spark-submit's).

The arguments are the job's own (``contract_platform.validation.request.add_arguments``, one
definition), plus ``--verbose``; they become one ``ValidationRequest``, which the job's one runner
takes (``spark_jobs.validate_archive.run``, found through the ``contract_platform.spark`` entry
points: ``contract_platform.cli.on_spark``). Spark's and the JVM's own output go to a log file under
the data folder, whose path is printed when the run fails or with ``--verbose``.

``--since``/``--until`` validate only the date partitions in ``[since, until)``, keeping the state
that carries duplicates and ordering across intervals (docs/archive-validation.md).
"""

from __future__ import annotations

import argparse

from contract_platform.cli import on_spark
from contract_platform.validation import request as validation
from contract_platform.validation.request import ValidationRequest

HELP = "check every archived message against the catalogue (Spark, local by default)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    validation.add_arguments(parser)
    parser.add_argument(
        "--verbose", action="store_true", help="print the path of the Spark and JVM log (kept under <data>/logs/cli)"
    )


def run(args: argparse.Namespace) -> int:
    request = ValidationRequest.from_args(args)
    job = on_spark.validate_archive()  # before anything starts: the Spark jobs may not be installed
    return on_spark.run_quietly("validate-archive", args.verbose, lambda: job(request))

"""``contractctl validate-archive PATH``: the Spark archive validation, run locally (the same job as spark-submit's).

Spark's and the JVM's own output go to a log file under the data folder (spark_jobs/quiet.py), whose path
is printed when the run fails or with ``--verbose``.

``--since``/``--until`` validate only the date partitions in ``[since, until)``, keeping the state
that carries duplicates and ordering across intervals (docs/archive-validation.md).
"""

from __future__ import annotations

import argparse

HELP = "check every archived message against the catalogue (Spark, local by default)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="archive root, exchange or date folder, or one .jsonl[.gz] file")
    parser.add_argument("--catalog", default=None, help="catalogue folder (default ./contracts)")
    parser.add_argument("--report", default=None, help="write the JSON report here")
    parser.add_argument("--quarantine", default=None, help="write invalid records with their reasons here")
    parser.add_argument("--since", default=None, help="first date partition to validate (YYYY-MM-DD)")
    parser.add_argument("--until", default=None, help="date partition to stop before (YYYY-MM-DD, exclusive)")
    parser.add_argument("--state", default=None, help="incremental state folder (default under the data folder)")
    parser.add_argument("--master", default=None, help="Spark master (default local[*])")
    parser.add_argument(
        "--verbose", action="store_true", help="print the path of the Spark and JVM log (kept under <data>/logs/cli)"
    )


def run(args: argparse.Namespace) -> int:
    import os
    import sys

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need the platform's own Python
    from spark_jobs.quiet import run_quietly
    from spark_jobs.validate_archive import main as job

    argv = [args.path]
    for flag, value in (
        ("--catalog", args.catalog),
        ("--report", args.report),
        ("--quarantine", args.quarantine),
        ("--since", args.since),
        ("--until", args.until),
        ("--state", args.state),
        ("--master", args.master),
    ):
        if value:
            argv += [flag, str(value)]
    return run_quietly("validate-archive", args.verbose, lambda: job(argv))

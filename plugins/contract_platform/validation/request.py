"""One archive validation asked for: its arguments, defined once for ``contractctl`` and ``spark-submit``.

``contractctl validate-archive`` and ``spark-submit spark_jobs/validate_archive.py`` add the same
arguments (``add_arguments``) to their own parser, so each names itself in its usage line, and turn
what they parsed into one ``ValidationRequest`` (``from_args``): dates as dates, the range checked,
the statuses a mapping. The Spark job's one runner (``spark_jobs.validate_archive.run``) takes it;
``contractctl`` reaches that runner through the ``contract_platform.spark`` entry points
(``contract_platform.cli.on_spark``), never by importing the job.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import date
from pathlib import Path

from contract_platform.days import check_range
from contract_platform.job_options import add_job_options, date_arg
from contract_platform.validation.records import DEFAULT_OVERSIZE_BYTES

__all__ = ["ValidationRequest", "add_arguments"]


@dataclass(frozen=True)
class ValidationRequest:
    """What to validate, how, and where the results go (docs/archive-validation.md).

    ``path``: an archive root, exchange or date folder, or one ``*.jsonl[.gz]`` file; ``catalog``: the
    catalogue folder (None: ``$CONTRACT_CATALOG`` or ./contracts); ``since``/``until``: only the date
    partitions in ``[since, until)``; ``state``: the incremental state's folder (None: a run with a
    range keeps it under the data folder, a direct ``run_validation`` call keeps none);
    ``statuses``: effective status per messageType (``TYPE=STATUS[@time]``; none given: the
    registry's, when there is one). The names are the command line's, so the common job options
    (``master``, ``catalog``, ``registry_url``, ``no_fail_on_findings``) read alike from either.
    """

    path: str | Path
    catalog: str | Path | None = None
    report: str | Path | None = None
    quarantine: str | Path | None = None
    since: date | None = None
    until: date | None = None
    state: str | Path | None = None
    oversize_bytes: int = DEFAULT_OVERSIZE_BYTES
    statuses: Mapping[str, str] = field(default_factory=dict)
    master: str | None = None
    registry_url: str | None = None
    run_id: str | None = None
    no_fail_on_findings: bool = False

    def __post_init__(self) -> None:
        check_range(self.since, self.until)  # UsageError: before a catalogue loads or a JVM starts

    @property
    def incremental(self) -> bool:
        """A run over a date range: it keeps the cross-day state (docs/archive-validation.md#incremental-runs)."""
        return self.since is not None or self.until is not None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ValidationRequest:
        """The request ``add_arguments``'s options describe (``UsageError``: ``--until`` not after ``--since``):
        each field is the option of its name, but ``statuses``, the mapping of the repeated ``--status``."""
        given = vars(args)
        named = {f.name: given[f.name] for f in fields(cls) if f.name != "statuses"}
        return cls(**named, statuses=dict(args.status))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Every option of an archive validation, on ``contractctl validate-archive`` and on the Spark job."""
    parser.add_argument("path", help="archive root, exchange or date folder, or one .jsonl[.gz] file")
    add_job_options(parser)
    parser.add_argument("--report", default=None, help="write the JSON report here")
    parser.add_argument("--quarantine", default=None, help="write invalid records (JSON Lines) into this folder")
    parser.add_argument("--since", type=date_arg, default=None, help="first date partition (YYYY-MM-DD; empty: all)")
    parser.add_argument("--until", type=date_arg, default=None, help="date partition to stop before (exclusive)")
    parser.add_argument(
        "--state",
        default=None,
        help="folder of the incremental state (default with --since/--until: <data>/state/archive-validation/...)",
    )
    parser.add_argument("--oversize-bytes", type=int, default=DEFAULT_OVERSIZE_BYTES, help="OVERSIZE above this")
    parser.add_argument(
        "--status",
        type=_status,
        action="append",
        default=[],
        help="TYPE=STATUS[@ISO time it took effect] effective status (repeatable)",
    )


def _status(text: str) -> tuple[str, str]:
    message_type, sep, status = text.partition("=")
    if not sep or not message_type or not status:
        raise argparse.ArgumentTypeError(f"{text!r} is not TYPE=STATUS (e.g. billing.invoice-issued.v1=retired)")
    return message_type, status

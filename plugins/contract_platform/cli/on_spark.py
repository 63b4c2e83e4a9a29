"""The Spark jobs as ``contractctl`` reaches them: declared here, found at run time, never imported.

The domain imports no ``spark_jobs`` module (``tests/unit/test_package_layers.py``). The Spark-backed
verbs (``validate-archive``, ``quality``, ``audit``, ``check --replay``) say here what they need, as
protocols; the Spark jobs provide it as entry points of the group ``contract_platform.spark``
(``pyproject.toml``), which a verb loads when it runs (``importlib.metadata``), as Airflow finds its
providers:

| name | protocol | provided by |
|---|---|---|
| ``validate_archive`` | ``ValidateArchive``: a ``ValidationRequest`` in, the job's exit code out | ``spark_jobs.validate_archive:run`` |
| ``quality`` | ``Quality``: the envelope quality report of an archive | ``spark_jobs.runners:quality`` |
| ``last_seen`` | ``LastSeenScan``: the archive's last-seen document, or None | ``spark_jobs.runners:last_seen`` |
| ``replay`` | ``Replay``: replay results of the changed versions | ``spark_jobs.runners:replay`` |
| ``quiet_spark`` | ``QuietSpark``: Spark's and the JVM's output into the verb's log | ``spark_jobs.quiet:quiet_spark`` |
| ``run_quietly`` | ``RunQuietly``: a verb's body inside ``quiet_spark`` | ``spark_jobs.quiet:run_quietly`` |

Each runner starts and stops its own session (``spark_jobs.session.local_session``). Without the Spark
jobs installed (or without pyspark), a verb that needs them stops with exit 2 and says how to install
them (``SparkJobsMissing``); ``run_quietly`` then just runs the body, since no JVM can start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import date
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from contract_platform.errors import SparkJobsMissing

if TYPE_CHECKING:
    from contract_platform.catalog.model import Catalog
    from contract_platform.quality import QualityReport
    from contract_platform.replay.run import ReplayResult, ReplayTarget
    from contract_platform.validation.request import ValidationRequest

__all__ = [
    "GROUP",
    "LastSeenScan",
    "Quality",
    "QuietSpark",
    "Replay",
    "RunQuietly",
    "SparkLog",
    "ValidateArchive",
    "last_seen",
    "quality",
    "quiet_spark",
    "replay",
    "run_quietly",
    "validate_archive",
]

GROUP = "contract_platform.spark"
INSTALL = "pip install -e . (from the repository root, in the platform's environment)"


class SparkLog(Protocol):
    """The log of one quiet verb run: a non-zero ``exit_code`` prints its path; ``announce`` prints it now."""

    exit_code: int | None

    def announce(self, *, failed: bool) -> None: ...


class QuietSpark(Protocol):
    def __call__(
        self, verb: str, *, verbose: bool = False, defer: bool = False
    ) -> AbstractContextManager[SparkLog]: ...


class RunQuietly(Protocol):
    def __call__(self, verb: str, verbose: bool, body: Callable[[], int]) -> int: ...


class ValidateArchive(Protocol):
    def __call__(self, request: ValidationRequest) -> int: ...


class Quality(Protocol):
    def __call__(
        self, archive: Path, catalog_dir: str | Path, *, gx_root: Path | None, since: date | None
    ) -> QualityReport: ...


class LastSeenScan(Protocol):
    def __call__(self, root: str) -> dict[str, dict[str, Any]] | None: ...


class Replay(Protocol):
    def __call__(
        self, archive: str, catalog: Catalog, targets: Sequence[ReplayTarget], *, in_flight: bool
    ) -> list[ReplayResult]: ...


def validate_archive() -> ValidateArchive:
    return cast("ValidateArchive", _load("validate_archive"))


def quality() -> Quality:
    return cast("Quality", _load("quality"))


def last_seen() -> LastSeenScan:
    return cast("LastSeenScan", _load("last_seen"))


def replay() -> Replay:
    return cast("Replay", _load("replay"))


def quiet_spark() -> QuietSpark:
    return cast("QuietSpark", _load("quiet_spark"))


def run_quietly(verb: str, verbose: bool, body: Callable[[], int]) -> int:
    """``body()`` with Spark's and the JVM's output in the verb's log; without the Spark jobs, ``body()`` alone."""
    try:
        quietly = cast("RunQuietly", _load("run_quietly"))
    except SparkJobsMissing:  # no Spark jobs, no JVM: nothing to keep quiet (audit --last-seen still runs)
        return body()
    return quietly(verb, verbose, body)


def _entry(name: str) -> EntryPoint | None:
    found = entry_points(group=GROUP, name=name)
    return next(iter(found), None)


def _load(name: str) -> object:
    entry = _entry(name)
    if entry is None:
        raise SparkJobsMissing(
            f"the Spark jobs are not installed: no {name!r} in the entry points {GROUP!r}; install them: {INSTALL}"
        )
    try:
        return entry.load()
    except ImportError as exc:  # pyspark missing, or a stale install naming a module that moved
        raise SparkJobsMissing(
            f"the Spark jobs are installed but do not import ({entry.value}: {exc}); reinstall them: {INSTALL}"
        ) from None

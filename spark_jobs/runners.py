"""What ``contractctl``'s Spark-backed verbs run: one job function inside the one session block.

``contractctl`` never imports this module: it finds these functions (and ``validate_archive.run``,
``quiet.quiet_spark``, ``quiet.run_quietly``) through the entry points of the group
``contract_platform.spark`` (pyproject.toml), whose protocols are ``contract_platform.cli.on_spark``.
Each runner starts a local session (an active one is reused) and stops it when it started it
(``spark_jobs.session.local_session``), so a verb holds no Spark code of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spark_jobs.session import local_session

if TYPE_CHECKING:
    from contract_platform.catalog.model import Catalog
    from contract_platform.quality import QualityReport
    from contract_platform.replay.run import ReplayResult, ReplayTarget

__all__ = ["last_seen", "quality", "replay"]


def quality(archive: Path, catalog_dir: str | Path, *, gx_root: Path | None, since: date | None) -> QualityReport:
    """``contractctl quality``: the envelope quality job's ``run_quality`` in this process; nothing recorded."""
    from spark_jobs import envelope_quality  # each runner imports its job alone

    with local_session(envelope_quality.APP_NAME) as spark:
        return envelope_quality.run_quality(spark, archive, catalog_dir, gx_root=gx_root, since=since)


def last_seen(root: str) -> dict[str, dict[str, Any]] | None:
    """``contractctl audit``: the ``archive_last_seen`` job's document for ``root`` (None: the root does not exist)."""
    from spark_jobs import archive_last_seen

    with local_session("contractctl-audit") as spark:
        return archive_last_seen.scan_archive(spark, root)


def replay(archive: str, catalog: Catalog, targets: Sequence[ReplayTarget], *, in_flight: bool) -> list[ReplayResult]:
    """``contractctl check --replay`` on Spark: the replay job's ``replay_targets_on_spark`` over ``archive``."""
    from spark_jobs import replay as replay_job

    with local_session("contractctl-replay") as spark:
        return replay_job.replay_targets_on_spark(spark, archive, str(catalog.root), targets, in_flight=in_flight)

"""The plan of one dual-publish migration run (``dags/dual_publish_migration.py``, docs/design.md#dags).

::

    plan = plan_migration(catalog, source, target, mode="bridge", parity_since="", tap_queue="", run_id=run_id)
    plan.to_dict()                      # what the DAG's first task returns (XCom): JSON, snake_case keys
    MigrationPlan.from_dict(pulled)     # what every later task reads back

The trigger form's values are checked here, not in the DAG, so a person who types a wrong mode or a
parity window that is not a moment reads what to fix (``UsageError``: the task fails without retry).
The plan also fixes where the run writes: the parity report is named after the run id, made safe for a
file name (``run_file_name``).

A migration whose source is retired in the registry is finished: the plan says so (``skipped``, with the
reason) and the run bridges, archives and judges nothing, so no parity is recorded after the retirement. A
message still published on the retired version is no parity finding: archive validation counts it as
``RETIRED_TYPE`` and records it as ``retired_traffic`` evidence (docs/design.md#reason-codes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from contract_platform import settings
from contract_platform.amqp.topology import tap_queue_name
from contract_platform.catalog.model import Catalog, Contract, Status
from contract_platform.errors import UsageError
from contract_platform.evidence.records import VersionState
from contract_platform.migration.parity import ParityMode
from contract_platform.runs import run_file_name

__all__ = ["MODES", "MigrationPlan", "parse_mode", "parse_since", "plan_migration"]

MODES = tuple(mode.value for mode in ParityMode)  # the trigger form's choices


def parse_mode(value: str | None) -> ParityMode:
    """The trigger form's *mode*; empty means ``bridge``."""
    text = (value or "").strip() or ParityMode.BRIDGE.value
    try:
        return ParityMode(text)
    except ValueError:
        raise UsageError(
            f"mode {text!r} is not a migration mode; choose {' or '.join(MODES)} in the trigger form"
        ) from None


def parse_since(value: str | None) -> str:
    """The trigger form's *parity_since*: an ISO 8601 moment, kept as written for the parity job; empty for
    the whole archive."""
    text = (value or "").strip()
    if not text:
        return ""
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(
            f"parity_since {text!r} is not an ISO 8601 instant such as 2026-07-01T00:00:00Z; "
            "leave it empty to judge the whole archive"
        ) from None
    return text


@dataclass(frozen=True)
class MigrationPlan:
    """What every task of one migration run works on: the pair, the path, and where files go."""

    source: str  # the v<N-1> messageType
    target: str  # the v<N> messageType, the contract that holds migration.yaml
    mode: ParityMode
    tap_queue: str  # the bridge's queue on the v<N-1> routing key (bridge mode)
    exchanges: tuple[str, ...]  # both versions' exchanges, drained into the archive
    archive: str  # the topic archive's root
    catalog: str  # the catalogue folder the parity job loads
    since: str  # ISO 8601 start of the parity window; "" for the whole archive
    report: str  # the parity report this run writes
    skipped: str = ""  # why this run does nothing (the source is retired); "" when it migrates

    @property
    def bridged(self) -> bool:
        return self.mode is ParityMode.BRIDGE

    @property
    def proceeds(self) -> bool:
        """False when the run has nothing to do (``skipped`` says why): every task after the plan is skipped."""
        return not self.skipped

    def to_dict(self) -> dict[str, Any]:
        """JSON for XCom; the DAG's templates read ``source``, ``archive``, ``catalog``, ``mode``, ``report``
        and ``since`` from it."""
        return {
            "source": self.source,
            "target": self.target,
            "mode": self.mode.value,
            "tap_queue": self.tap_queue,
            "exchanges": list(self.exchanges),
            "archive": self.archive,
            "catalog": self.catalog,
            "since": self.since,
            "report": self.report,
            "skipped": self.skipped,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MigrationPlan:
        """The plan ``to_dict`` wrote."""
        return cls(
            source=str(data["source"]),
            target=str(data["target"]),
            mode=ParityMode(data["mode"]),
            tap_queue=str(data["tap_queue"]),
            exchanges=tuple(str(name) for name in data["exchanges"]),
            archive=str(data["archive"]),
            catalog=str(data["catalog"]),
            since=str(data["since"]),
            report=str(data["report"]),
            skipped=str(data.get("skipped") or ""),
        )


def plan_migration(
    catalog: Catalog,
    source: Contract,
    target: Contract,
    *,
    mode: str | None = None,
    parity_since: str | None = None,
    tap_queue: str | None = None,
    run_id: str | None = None,
    source_state: VersionState | None = None,
) -> MigrationPlan:
    """The plan of one run migrating ``source`` to ``target`` (a route the bridge resolved and checked):
    the trigger form's *mode*, *parity_since* and *tap_queue* checked (``UsageError`` says what to fix), the
    tap queue ``bridge.<v1 type>`` unless one is given, and the parity report under the data folder.
    ``source_state``: the source's effective status in the registry; retired, the plan is ``skipped``."""
    checked_mode, since = parse_mode(mode), parse_since(parity_since)
    skipped = ""
    if source_state is not None and source_state.status is Status.RETIRED:
        skipped = (
            f"{source.message_type} was retired at {source_state.updated_at.isoformat(timespec='seconds')}: "
            f"its migration to {target.message_type} is finished, so this run bridges, archives and judges "
            "nothing (no parity is recorded after the retirement); messages still published on it are "
            "archive validation's RETIRED_TYPE, recorded as retired_traffic evidence"
        )
    report = settings.data_dir() / "migrations" / source.message_type / f"parity-{run_file_name(run_id)}.json"
    return MigrationPlan(
        source=source.message_type,
        target=target.message_type,
        mode=checked_mode,
        tap_queue=(tap_queue or "").strip() or tap_queue_name(source.message_type),
        exchanges=tuple(sorted({source.transport.exchange, target.transport.exchange})),
        archive=str(settings.archive_dir()),
        catalog=str(catalog.root),
        since=since,
        report=str(report),
        skipped=skipped,
    )

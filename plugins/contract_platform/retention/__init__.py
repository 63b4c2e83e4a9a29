"""Retention enforced: what the catalogue's ``retention`` declares, done (docs/design.md#retention).

- ``archive``: ``apply_archive_retention``, the one function that deletes archive partitions past their
  contract's ``retention.archive`` (the ``archive_retention`` DAG and ``contractctl retention apply``);
- ``holds``: what stops it (catalogue holds and investigation holds), ``holds_in_force``;
- ``validation_state``: incremental validation's state aged out in the same run, ``prune_validation_state``;
- ``dead_letters``: ``purge_dead_letters``, dead letters past ``retention.dlq`` removed by hand with evidence
  (``contractctl retention purge-dead-letters``); imported by name, as it needs the broker's client.

Queues, DLQs and parking lots carry no TTL (docs/design.md#retention): nothing expires unseen.
"""

from contract_platform.retention.archive import (
    Action,
    PartitionDecision,
    PartitionFigures,
    RetentionRun,
    apply_archive_retention,
    plan_archive_retention,
)
from contract_platform.retention.holds import (
    InvestigationHold,
    RetentionHold,
    holds_file,
    holds_in_force,
    read_investigation_holds,
    release_hold,
    set_hold,
)

__all__ = [
    "Action",
    "InvestigationHold",
    "PartitionDecision",
    "PartitionFigures",
    "RetentionHold",
    "RetentionRun",
    "apply_archive_retention",
    "holds_file",
    "holds_in_force",
    "plan_archive_retention",
    "read_investigation_holds",
    "release_hold",
    "set_hold",
]

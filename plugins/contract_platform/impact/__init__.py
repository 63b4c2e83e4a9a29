"""Consumer-aware impact: which consumers a schema change breaks, who owns them, and the readers
perspective (docs/consumer-impact.md).

::

    impact = impact_of_contract(contract, verdict.changes, old_schema=old, catalog=catalog)
    impact.broken                     # [ConsumerReport(service, team, contact, breaking=...)]
    impact.to_dict()                  # the JSON of diff/check
    readers_perspective(impact, ObservedReaders(sessions, gaps))   # PerspectiveDecision(accepted, condition)
"""

from __future__ import annotations

from .analysis import (
    ChangeImpact,
    ConsumerImpact,
    ConsumerReport,
    ReaderRefusal,
    contacts_of,
    impact_of,
    impact_of_contract,
)
from .perspective import Condition, ObservedReaders, PerspectiveDecision, ReadersOf, readers_perspective
from .pointers import PositionIndex, covers, instance_paths, parse_read

__all__ = [
    "ChangeImpact",
    "Condition",
    "ConsumerImpact",
    "ConsumerReport",
    "ObservedReaders",
    "ReadersOf",
    "PerspectiveDecision",
    "PositionIndex",
    "ReaderRefusal",
    "contacts_of",
    "covers",
    "impact_of",
    "impact_of_contract",
    "instance_paths",
    "parse_read",
    "readers_perspective",
]

"""The rows the store returns, defined in ``contract_platform.evidence.records`` (no SQL there).

Re-exported here for the store's own modules; the domain imports them from ``contract_platform.evidence``.
"""

from contract_platform.evidence import EvidenceKind, Verdict
from contract_platform.evidence.records import (
    BrokerChange,
    BrokerEvent,
    CoverageGap,
    CoverageSegment,
    Delivery,
    DeliveryWatch,
    EvidenceMark,
    EvidenceRecord,
    Observation,
    ObservationSource,
    QueueCounters,
    ReaderSession,
    RefusalRecord,
    TransitionRecord,
    VersionState,
)

__all__ = [
    "BrokerChange",
    "BrokerEvent",
    "CoverageGap",
    "CoverageSegment",
    "Delivery",
    "DeliveryWatch",
    "EvidenceKind",
    "EvidenceMark",
    "EvidenceRecord",
    "Observation",
    "ObservationSource",
    "QueueCounters",
    "ReaderSession",
    "RefusalRecord",
    "TransitionRecord",
    "Verdict",
    "VersionState",
]

"""The registry store: effective status, transition history, refusals, evidence and more, in SQL.

``SqlRegistry.open()`` opens the default store (a SQLite file under the data folder) or the database of a
``sqlite:`` or ``postgresql:`` URL, and creates or upgrades its ``cp_`` tables on the way (with SQLAlchemy,
imported only then). Queries run on the driver itself (``store/sql.py``). Rows come back as frozen
dataclasses with aware UTC datetimes; every database failure is a ``StoreError`` that never shows a password.
"""

from contract_platform.evidence import EvidenceKind, Verdict
from contract_platform.evidence.records import (
    EvidenceRecord,
    Observation,
    ObservationSource,
    RefusalRecord,
    TransitionRecord,
    VersionState,
)
from contract_platform.store.migrations import LATEST_VERSION
from contract_platform.store.registry import SqlRegistry
from contract_platform.store.values import schema_fingerprint

__all__ = [
    "LATEST_VERSION",
    "EvidenceKind",
    "EvidenceRecord",
    "Observation",
    "ObservationSource",
    "RefusalRecord",
    "SqlRegistry",
    "TransitionRecord",
    "Verdict",
    "VersionState",
    "schema_fingerprint",
]

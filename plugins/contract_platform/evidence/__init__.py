"""Evidence: what the lifecycle decides on. Each kind is produced by one check and read by the guards.

- ``EvidenceKind`` and ``Verdict``: the closed vocabularies (here);
- ``records``: the registry's rows (``EvidenceRecord``, ``VersionState``, ...), with no SQL import;
- ``figures``: one typed, snake_case figures class per kind, and ``figures_of(record)``;
- ``registry``: the ``Registry`` protocol the domain depends on (``store.SqlRegistry`` satisfies it);
- ``writer``: ``record(...)``, the one way to write evidence (docs/design.md#evidence).
"""

from enum import StrEnum

__all__ = [
    "EvidenceKind",
    "EvidenceRecord",
    "Figures",
    "Registry",
    "Verdict",
    "figures_of",
    "record",
]


class EvidenceKind(StrEnum):
    """What a piece of evidence is about; the lifecycle guards ask for these by name (docs/design.md#evidence)."""

    LINT = "lint"
    FIXTURES = "fixtures"
    COMPATIBILITY = "compatibility"
    TOPOLOGY = "topology"
    ARCHIVE_VALIDATION = "archive_validation"
    ENVELOPE_QUALITY = "envelope_quality"
    MIGRATION_SPEC = "migration_spec"
    MIGRATION_PARITY = "migration_parity"
    RETIREMENT_AUDIT = "retirement_audit"
    REPLAY = "replay"  # archived and in-flight traffic checked against a candidate version (docs/replay.md)
    RETIRED_TRAFFIC = "retired_traffic"  # messages received on a version after it was retired: an alarm
    RUNTIME_VALIDATION = "runtime_validation"  # what services' guards counted at publish and consume (client)
    ARCHIVE_RETENTION = "archive_retention"  # archive partitions deleted past retention.archive (retention)
    DEAD_LETTER_PURGE = "dead_letter_purge"  # dead letters older than retention.dlq removed by hand (retention)


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    UNKNOWN = "unknown"  # still running, or could not be decided: never counts as pass


# The submodules read EvidenceKind and Verdict from this package, so they are imported after both exist.
from contract_platform.evidence.figures import Figures, figures_of  # noqa: E402
from contract_platform.evidence.records import EvidenceRecord  # noqa: E402
from contract_platform.evidence.registry import Registry  # noqa: E402
from contract_platform.evidence.writer import record  # noqa: E402

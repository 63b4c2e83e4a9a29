"""Evidence: what the lifecycle decides on. Each kind is produced by one check and read by the guards."""

from enum import StrEnum

__all__ = ["EvidenceKind", "Verdict"]


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


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    UNKNOWN = "unknown"  # still running, or could not be decided: never counts as pass

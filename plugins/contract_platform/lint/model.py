"""Lint findings, rule ids and the one severity table.

Rule ids are stable strings: tools and people may filter on them. Adding a rule means adding it
to ``RuleId`` and to ``SEVERITY``; a rule missing from the table is a bug and raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = ["SEVERITY", "Finding", "RuleId", "Severity"]


class Severity(StrEnum):
    ERROR = "error"  # the contract must not ship like this: exit 1
    WARNING = "warning"  # worth fixing; exit 1 only with --strict
    INFO = "info"  # worth knowing; never fails a run


class RuleId(StrEnum):
    NAMING = "naming"
    ROUTING_KEY_ALIGNED = "routing-key-aligned"
    VERSION_MAJOR = "version-major"
    KIND_TENSE = "kind-tense"
    OWNER_CONTACT = "owner-contact"
    RETENTION_WINDOWS = "retention-windows"
    MONEY_NOT_NUMBER = "money-not-number"
    TIMESTAMP_FORMAT = "timestamp-format"
    ENUM_UNKNOWN_POLICY = "enum-unknown-policy"
    POINTER_EXISTS = "pointer-exists"
    PII_NOT_IN_TRANSPORT = "pii-not-in-transport"
    FIXTURES_PRESENT = "fixtures-present"
    FIXTURE_VALID_REJECTED = "fixture-valid-rejected"
    FIXTURE_INVALID_ACCEPTED = "fixture-invalid-accepted"
    FIXTURE_METADATA = "fixture-metadata"
    SUPERSEDED_BY = "superseded-by"
    SUNSET = "sunset"
    MIGRATION_PRESENT = "migration-present"
    CONSUMER_QUEUE_NAMING = "consumer-queue-naming"
    COMMAND_CALLERS = "command-callers"
    PATTERN_EVALUABLE = "pattern-evaluable"
    SCHEMA_DIALECT_MIXED = "schema-dialect-mixed"
    CONSUMER_READS = "consumer-reads"
    CONSUMER_READER_SCHEMA = "consumer-reader-schema"
    CONSUMER_READS_EVERYTHING = "consumer-reads-everything"


SEVERITY: dict[RuleId, Severity] = {
    RuleId.NAMING: Severity.ERROR,
    RuleId.ROUTING_KEY_ALIGNED: Severity.ERROR,
    RuleId.VERSION_MAJOR: Severity.ERROR,
    RuleId.KIND_TENSE: Severity.ERROR,
    RuleId.OWNER_CONTACT: Severity.ERROR,
    RuleId.RETENTION_WINDOWS: Severity.ERROR,
    RuleId.MONEY_NOT_NUMBER: Severity.ERROR,
    RuleId.TIMESTAMP_FORMAT: Severity.ERROR,
    RuleId.ENUM_UNKNOWN_POLICY: Severity.WARNING,
    RuleId.POINTER_EXISTS: Severity.ERROR,
    RuleId.PII_NOT_IN_TRANSPORT: Severity.ERROR,
    RuleId.FIXTURES_PRESENT: Severity.ERROR,
    RuleId.FIXTURE_VALID_REJECTED: Severity.ERROR,
    RuleId.FIXTURE_INVALID_ACCEPTED: Severity.ERROR,
    RuleId.FIXTURE_METADATA: Severity.ERROR,
    RuleId.SUPERSEDED_BY: Severity.ERROR,
    RuleId.SUNSET: Severity.ERROR,
    RuleId.MIGRATION_PRESENT: Severity.WARNING,
    RuleId.CONSUMER_QUEUE_NAMING: Severity.WARNING,
    RuleId.COMMAND_CALLERS: Severity.WARNING,
    RuleId.PATTERN_EVALUABLE: Severity.ERROR,
    RuleId.SCHEMA_DIALECT_MIXED: Severity.WARNING,
    RuleId.CONSUMER_READS: Severity.ERROR,  # docs/consumer-impact.md
    RuleId.CONSUMER_READER_SCHEMA: Severity.ERROR,
    RuleId.CONSUMER_READS_EVERYTHING: Severity.INFO,
}


@dataclass(frozen=True, order=True)
class Finding:
    file: str
    pointer: str
    rule: RuleId
    message: str

    @property
    def severity(self) -> Severity:
        return SEVERITY[self.rule]  # KeyError here is a bug: every rule has a severity

    def fails(self, *, strict: bool = False) -> bool:
        """Whether this finding fails a run: errors always, warnings under ``--strict``, info never
        (``consumer-reads-everything``). The one rule for lint, check and their CI formats."""
        return self.severity is Severity.ERROR or (strict and self.severity is Severity.WARNING)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": str(self.rule),
            "severity": str(self.severity),
            "file": self.file,
            "pointer": self.pointer,
            "message": self.message,
        }

    def __str__(self) -> str:
        where = f"{self.file}#{self.pointer}" if self.pointer else self.file
        return f"{where}: {self.severity} [{self.rule}] {self.message}"

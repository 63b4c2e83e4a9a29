"""Archive validation: reason codes, record-level and cross-record rules, the report, the evidence.

Pure Python (no pyspark import): ``spark_jobs/validate_archive.py`` runs these rules over Arrow
batches and window functions; the unit tests call them directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contract_platform.lazy import lazy_names

if TYPE_CHECKING:
    from contract_platform.validation.bundle import CatalogBundle, checker_for
    from contract_platform.validation.evidence import record_evidence
    from contract_platform.validation.model import CheckedRecord, Finding
    from contract_platform.validation.reasons import Reason
    from contract_platform.validation.records import DEFAULT_OVERSIZE_BYTES, RecordChecker, parse_json
    from contract_platform.validation.report import Figures, Group, ValidationReport
    from contract_platform.validation.schemas import FastValidator
    from contract_platform.validation.sequence import Keyed, sequence_findings

# Loaded on first use (PEP 562, contract_platform.lazy): the bridge needs FastValidator only, not the rules,
# the report and the evidence of archive validation.
_MODULES = {
    "bundle": ("CatalogBundle", "checker_for"),
    "evidence": ("record_evidence",),
    "model": ("CheckedRecord", "Finding"),
    "reasons": ("Reason",),
    "records": ("DEFAULT_OVERSIZE_BYTES", "RecordChecker", "parse_json"),
    "report": ("Figures", "Group", "ValidationReport"),
    "schemas": ("FastValidator",),
    "sequence": ("Keyed", "sequence_findings"),
}

__all__ = [
    "DEFAULT_OVERSIZE_BYTES",
    "CatalogBundle",
    "CheckedRecord",
    "FastValidator",
    "Figures",
    "Finding",
    "Group",
    "Keyed",
    "Reason",
    "RecordChecker",
    "ValidationReport",
    "checker_for",
    "parse_json",
    "record_evidence",
    "sequence_findings",
]

__getattr__, __dir__ = lazy_names(__name__, globals(), _MODULES)

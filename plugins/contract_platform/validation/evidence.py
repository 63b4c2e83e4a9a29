"""Archive validation as registry evidence: one record per catalogued messageType seen in the archive."""

from __future__ import annotations

from contract_platform import evidence
from contract_platform.catalog.model import Catalog
from contract_platform.evidence import EvidenceRecord, Registry, Verdict
from contract_platform.evidence.figures import ArchiveValidationFigures
from contract_platform.validation.report import TypeFigures, ValidationReport

__all__ = ["evidence_figures", "record_evidence"]


def evidence_figures(
    figures: TypeFigures, *, target: float | None = None, interval: dict[str, object] | None = None
) -> ArchiveValidationFigures:
    return ArchiveValidationFigures(
        total=figures.totals.records,
        invalid=figures.totals.invalid,
        invalid_rate=figures.invalid_rate,
        by_reason={str(reason): count for reason, count in figures.by_reason.items()},
        window=figures.window.to_dict(),
        invalid_rate_target=target,
        interval=interval,
    )


def record_evidence(
    report: ValidationReport,
    catalog: Catalog,
    registry: Registry,
    *,
    reference: str | None = None,
    run_id: str | None = None,
) -> list[EvidenceRecord]:
    """Add ``archive_validation`` evidence: pass when the invalid rate is within the contract's target.

    Types the catalogue does not know (UNKNOWN_TYPE, unreadable) have no contract to attach to and
    are left out; they still count in the report.
    """
    interval = report.interval.to_dict() if report.interval is not None else None  # which days the counts cover
    added = []
    for message_type, figures in report.by_type.items():
        contract = catalog.get(message_type)
        if contract is None:
            continue
        target = contract.validation.invalid_rate_target
        added.append(
            evidence.record(
                registry,
                message_type,
                contract.version,
                evidence_figures(figures, target=target, interval=interval),
                verdict=Verdict.PASS if figures.invalid_rate <= target else Verdict.FAIL,
                reference=reference,
                run_id=run_id,
            )
        )
    return added

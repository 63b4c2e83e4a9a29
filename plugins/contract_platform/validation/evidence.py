"""Archive validation as registry evidence: one record per catalogued messageType seen in the archive."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contract_platform.catalog.model import Catalog
from contract_platform.validation.report import TypeFigures, ValidationReport

if TYPE_CHECKING:
    from contract_platform.store import EvidenceRecord

__all__ = ["evidence_figures", "record_evidence"]

KIND = "archive_validation"


def evidence_figures(figures: TypeFigures) -> dict[str, Any]:
    return {
        "total": figures.totals.records,
        "invalid": figures.totals.invalid,
        "invalid_rate": figures.invalid_rate,
        "by_reason": {str(reason): count for reason, count in figures.by_reason.items()},
        "window": figures.window.to_dict(),
    }


def record_evidence(
    report: ValidationReport,
    catalog: Catalog,
    registry_url: str,
    *,
    reference: str | None = None,
    run_id: str | None = None,
) -> list[EvidenceRecord]:
    """Add ``archive_validation`` evidence: pass when the invalid rate is within the contract's target.

    Types the catalogue does not know (UNKNOWN_TYPE, unreadable) have no contract to attach to and
    are left out; they still count in the report.
    """
    from contract_platform.store import Registry  # the store needs SQLAlchemy; Spark workers never do

    interval = report.interval.to_dict() if report.interval is not None else None  # which days the counts cover
    added = []
    with Registry.open(registry_url) as registry:
        for message_type, figures in report.by_type.items():
            contract = catalog.get(message_type)
            if contract is None:
                continue
            target = contract.validation.invalid_rate_target
            added.append(
                registry.add_evidence(
                    message_type,
                    contract_version=contract.version,
                    kind=KIND,
                    verdict="pass" if figures.invalid_rate <= target else "fail",
                    figures={**evidence_figures(figures), "invalid_rate_target": target, "interval": interval},
                    reference=reference,
                    run_id=run_id,
                )
            )
    return added

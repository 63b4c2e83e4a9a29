"""Envelope quality as registry evidence: one ``envelope_quality`` record per message type judged.

The lifecycle guard (``guard_envelope_quality``) reads the latest one: pass iff every expectation
met its threshold; on fail it names ``EnvelopeQualityFigures.failed_expectations``.
"""

from __future__ import annotations

from contract_platform import evidence
from contract_platform.catalog.model import Catalog
from contract_platform.evidence import EvidenceRecord, Registry
from contract_platform.evidence.figures import EnvelopeQualityFigures
from contract_platform.quality.report import SAMPLES, QualityReport, TypeQuality

__all__ = ["evidence_figures", "record_quality"]


def evidence_figures(quality: TypeQuality) -> EnvelopeQualityFigures:
    return EnvelopeQualityFigures(
        evaluated=quality.evaluated,
        failed=len(quality.failed),
        failed_expectations=tuple(quality.failed),
        unexpected=quality.unexpected,
        samples={key: ids[:SAMPLES] for key, ids in quality.samples.items()},
        rows=quality.rows,
        mostly={r.id: r.mostly for r in quality.results},
        skipped=dict(quality.skipped),
    )


def record_quality(
    report: QualityReport, catalog: Catalog, registry: Registry, run_id: str | None = None
) -> list[EvidenceRecord]:
    """Add one evidence record per type of ``report`` that the catalogue holds; returns them.

    The reference is the results page that opens offline, else the Data Docs index: where the full results are.
    """
    added = []
    for quality in report.types:
        contract = catalog.get(quality.message_type)
        if contract is None:  # the catalogue changed between the run and now: nothing to attach it to
            continue
        added.append(
            evidence.record(
                registry,
                quality.message_type,
                contract.version,
                evidence_figures(quality),
                verdict=quality.verdict,
                reference=report.results_page or report.data_docs,
                run_id=run_id,
            )
        )
    return added

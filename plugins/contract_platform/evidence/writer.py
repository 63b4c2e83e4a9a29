"""The one way evidence is written: ``record(registry, message_type, version, figures, verdict=...)``.

The kind is the figures' own (``figures.KIND``) and the stored JSON is ``figures.to_json()``, so every
row of a kind has the same snake_case keys whoever wrote it.
"""

from __future__ import annotations

from datetime import datetime

from contract_platform.evidence import Verdict
from contract_platform.evidence.figures import Figures
from contract_platform.evidence.records import EvidenceRecord
from contract_platform.evidence.registry import Registry

__all__ = ["record"]


def record(
    registry: Registry,
    message_type: str,
    contract_version: str,
    figures: Figures,
    *,
    verdict: Verdict,
    reference: str | None = None,
    run_id: str | None = None,
    collected_at: datetime | None = None,
) -> EvidenceRecord:
    """Add one evidence record of ``figures.KIND`` for ``message_type`` at ``contract_version``.

    ``reference`` is the path or URL of the full report; ``collected_at`` defaults to now (aware UTC).
    """
    return registry.add_evidence(
        message_type,
        contract_version=contract_version,
        kind=figures.KIND,
        verdict=Verdict(verdict),
        figures=figures.to_json(),
        reference=reference,
        run_id=run_id,
        collected_at=collected_at,
    )

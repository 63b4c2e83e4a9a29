"""Archive validation as registry evidence: one record per catalogued messageType seen in the archive, and a
``retired_traffic`` record for each retired version that still received messages (who sent them, how many, when)."""

from __future__ import annotations

from dataclasses import asdict

from contract_platform import evidence
from contract_platform.catalog.model import Catalog
from contract_platform.evidence import EvidenceRecord, Registry, Verdict
from contract_platform.evidence.figures import ArchiveValidationFigures, RetiredTrafficFigures
from contract_platform.validation.lookback import Incomplete
from contract_platform.validation.report import RetiredTraffic, TypeFigures, ValidationReport

__all__ = ["evidence_figures", "record_evidence", "retired_traffic_figures"]


def evidence_figures(
    figures: TypeFigures,
    *,
    target: float | None = None,
    interval: dict[str, object] | None = None,
    incomplete: Incomplete | None = None,
) -> ArchiveValidationFigures:
    missing = incomplete or Incomplete()
    return ArchiveValidationFigures(
        total=figures.totals.records,
        invalid=figures.totals.invalid,
        invalid_rate=figures.invalid_rate,
        by_reason={str(reason): count for reason, count in figures.by_reason.items()},
        window=figures.window.to_dict(),
        invalid_rate_target=target,
        interval=interval,
        incomplete_duplicates=tuple(day.isoformat() for day in missing.duplicates),
        incomplete_ordering=tuple(day.isoformat() for day in missing.ordering),
    )


def retired_traffic_figures(
    traffic: RetiredTraffic, *, retired_at: str | None = None, interval: dict[str, object] | None = None
) -> RetiredTrafficFigures:
    return RetiredTrafficFigures(
        messages=traffic.messages,
        first_received_at=traffic.first_received_at,
        last_received_at=traffic.last_received_at,
        retired_at=retired_at,
        producers=tuple(asdict(p) for p in traffic.producers),
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

    Fail when it is above; unknown when it is within but the cross-day checks the type needs were
    incomplete (its own dedup window's days, ordering if it has ordering): what was not compared may
    hide duplicates or late versions. Types the catalogue does not know (UNKNOWN_TYPE, unreadable)
    have no contract to attach to and are left out; they still count in the report. A retired version
    that received messages after its retirement also gets ``retired_traffic`` evidence, verdict fail.
    """
    interval = report.interval  # which days the counts cover
    added = []
    for message_type, figures in report.by_type.items():
        contract = catalog.get(message_type)
        if contract is None:
            continue
        target = contract.validation.invalid_rate_target
        incomplete = (
            report.incomplete.for_type(
                interval.since, contract.validation.dedup_window, ordered=contract.ordering is not None
            )
            if interval is not None and interval.since is not None
            else Incomplete()
        )
        verdict = Verdict.FAIL if figures.invalid_rate > target else Verdict.PASS
        if verdict is Verdict.PASS and not incomplete.complete:
            verdict = Verdict.UNKNOWN
        added.append(
            evidence.record(
                registry,
                message_type,
                contract.version,
                evidence_figures(
                    figures,
                    target=target,
                    interval=_interval_days(interval.to_dict()) if interval is not None else None,
                    incomplete=incomplete,
                ),
                verdict=verdict,
                reference=reference,
                run_id=run_id,
            )
        )
        if figures.retired_traffic is not None:
            retired_at = str(report.statuses.get(message_type, "")).partition("@")[2] or None
            traffic = retired_traffic_figures(
                figures.retired_traffic,
                retired_at=retired_at,
                interval=_interval_days(interval.to_dict()) if interval is not None else None,
            )
            added.append(
                evidence.record(
                    registry,
                    message_type,
                    contract.version,
                    traffic,
                    verdict=Verdict.FAIL,
                    reference=reference,
                    run_id=run_id,
                )
            )
    return added


def _interval_days(interval: dict[str, object]) -> dict[str, object]:
    """The report's interval without its ``incomplete`` days, which the figures carry per type."""
    return {key: value for key, value in interval.items() if key != "incomplete"}

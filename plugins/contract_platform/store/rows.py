"""Database rows -> the typed records of ``records`` (with enums and aware datetimes already in place)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contract_platform.catalog.model import Status
from contract_platform.evidence.figures import in_key_style
from contract_platform.store.records import (
    EvidenceKind,
    EvidenceRecord,
    Observation,
    ObservationSource,
    RefusalRecord,
    TransitionRecord,
    Verdict,
    VersionState,
)

__all__ = ["evidence_record", "observation", "refusal_record", "transition_record", "version_state"]


def version_state(row: Mapping[Any, Any]) -> VersionState:
    return VersionState(
        message_type=row["message_type"],
        status=Status(row["effective_status"]),
        contract_version=row["contract_version"],
        revision=row["revision"],
        updated_at=row["updated_at"],
    )


def transition_record(row: Mapping[Any, Any]) -> TransitionRecord:
    return TransitionRecord(
        id=row["id"],
        message_type=row["message_type"],
        revision=row["revision"],
        from_status=Status(row["from_status"]) if row["from_status"] else None,
        to_status=Status(row["to_status"]),
        at=row["at"],
        actor=row["actor"],
        run_id=row["run_id"],
        reason=row["reason"],
        evidence_id=row["evidence_id"],
    )


def refusal_record(values: Mapping[Any, Any]) -> RefusalRecord:
    return RefusalRecord(
        id=values["id"],
        message_type=values["message_type"],
        from_status=Status(values["from_status"]) if values["from_status"] else None,
        to_status=Status(values["to_status"]),
        at=values["at"],
        actor=values["actor"],
        run_id=values["run_id"],
        reasons=tuple(values["reasons"]),
    )


def evidence_record(values: Mapping[Any, Any]) -> EvidenceRecord:
    return EvidenceRecord(
        id=values["id"],
        message_type=values["message_type"],
        contract_version=values["contract_version"],
        kind=EvidenceKind(values["kind"]),
        collected_at=values["collected_at"],
        verdict=Verdict(values["verdict"]),
        figures=in_key_style(EvidenceKind(values["kind"]), values["figures"]),
        reference=values["reference"],
        run_id=values["run_id"],
    )


def observation(values: Mapping[Any, Any]) -> Observation:
    return Observation(
        id=values["id"],
        message_type=values["message_type"],
        queue=values["queue"],
        observed_at=values["observed_at"],
        consumers=values["consumers"],
        ready=values["ready"],
        unacked=values["unacked"],
        source=ObservationSource(values["source"]),
        run_id=values["run_id"],
    )

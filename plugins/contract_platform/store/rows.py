"""Database rows -> the typed records of ``evidence.records`` (with enums and aware datetimes already in place)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

from contract_platform.catalog.model import Status
from contract_platform.evidence import EvidenceKind, Verdict
from contract_platform.evidence.figures import in_key_style
from contract_platform.evidence.records import (
    EvidenceRecord,
    Observation,
    ObservationSource,
    RefusalRecord,
    TransitionRecord,
    VersionState,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["evidence_record", "observation", "record_of", "refusal_record", "transition_record", "version_state"]

R = TypeVar("R", bound="DataclassInstance")


def record_of(record: type[R], row: Mapping[Any, Any], **converted: Any) -> R:
    """``row`` as a ``record``: each field from the column of its name, unless ``converted`` gives its value."""
    return record(**{f.name: converted[f.name] if f.name in converted else row[f.name] for f in fields(record)})


def _status(value: str | None) -> Status | None:
    return Status(value) if value else None


def version_state(row: Mapping[Any, Any]) -> VersionState:
    return record_of(VersionState, row, status=Status(row["effective_status"]))


def transition_record(row: Mapping[Any, Any]) -> TransitionRecord:
    return record_of(TransitionRecord, row, from_status=_status(row["from_status"]), to_status=Status(row["to_status"]))


def refusal_record(values: Mapping[Any, Any]) -> RefusalRecord:
    return record_of(
        RefusalRecord,
        values,
        from_status=_status(values["from_status"]),
        to_status=Status(values["to_status"]),
        reasons=tuple(values["reasons"]),
    )


def evidence_record(values: Mapping[Any, Any]) -> EvidenceRecord:
    kind = EvidenceKind(values["kind"])
    return record_of(
        EvidenceRecord,
        values,
        kind=kind,
        verdict=Verdict(values["verdict"]),
        figures=in_key_style(kind, values["figures"]),
    )


def observation(values: Mapping[Any, Any]) -> Observation:
    return record_of(Observation, values, source=ObservationSource(values["source"]))

"""The record-level rules over Arrow record batches: what Spark's ``mapInArrow`` runs on each worker.

Lives in the domain (not in ``spark_jobs``) so executors find it in the installed package; it needs
pyarrow, never pyspark. ``CHECKED_FIELDS`` is the output; the Spark job declares the same schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from contract_platform.validation.bundle import CatalogBundle, checker_for
from contract_platform.validation.model import CheckedRecord, Finding
from contract_platform.validation.reasons import Reason
from contract_platform.validation.records import NotJson, RecordChecker, parse_json

__all__ = [
    "CHECKED_FIELDS",
    "FINDING_TYPE",
    "RECORD_FIELDS",
    "check_batch",
    "check_batches",
    "finding_of",
    "quarantine_batches",
    "quarantine_line",
]

FINDING_TYPE = pa.struct([("rank", pa.int32()), ("code", pa.string()), ("path", pa.string()), ("message", pa.string())])
# The input batch: what ``parse_records`` makes of each archive line.
RECORD_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("record_id", pa.int64()),  # archive position
    ("archive_file", pa.string()),
    ("line", pa.string()),
    ("line_bytes", pa.int64()),
    ("line_hash", pa.int64()),  # identifies the line when it has to be read again (see the Spark job)
)
# The output: the input, with ``archive_file`` and ``line`` kept only for records the record-level
# rules found invalid (what the quarantine needs; the rest would only weigh on Spark's cache),
# then what the cross-record rules and the report need.
CHECKED_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    *RECORD_FIELDS,
    ("received_at", pa.string()),
    ("received_us", pa.int64()),
    ("message_type", pa.string()),
    ("message_id", pa.string()),
    ("payload_hash", pa.binary()),
    ("order_key", pa.string()),
    ("sequence", pa.int64()),
    ("rank", pa.int32()),
    ("findings", pa.list_(FINDING_TYPE)),
)
_COMPUTED = CHECKED_FIELDS[len(RECORD_FIELDS) :]


def _finding_rows(checked: CheckedRecord) -> list[dict[str, Any]] | None:
    if not checked.findings:
        return None
    return [
        {"rank": f.code.rank, "code": str(f.code), "path": f.path, "message": f.message}
        for f in sorted(checked.findings)
    ]


def check_batch(checker: RecordChecker, batch: pa.RecordBatch) -> pa.RecordBatch:
    lines = batch.column("line")
    results = [checker.check(line) if line is not None else CheckedRecord() for line in lines.to_pylist()]
    invalid = pa.array([r.invalid for r in results], type=pa.bool_())
    columns = {
        "received_at": [r.received_at for r in results],
        "received_us": [r.received_us for r in results],
        "message_type": [r.message_type for r in results],
        "message_id": [r.message_id for r in results],
        "payload_hash": [r.payload_hash for r in results],
        "order_key": [r.order_key for r in results],
        "sequence": [r.sequence for r in results],
        "rank": [r.rank for r in results],
        "findings": [_finding_rows(r) for r in results],
    }
    arrays = [
        batch.column("record_id"),
        pc.if_else(invalid, batch.column("archive_file"), pa.scalar(None, pa.string())),
        pc.if_else(invalid, lines, pa.scalar(None, pa.string())),
        batch.column("line_bytes"),
        batch.column("line_hash"),
    ]
    arrays += [pa.array(columns[name], type=kind) for name, kind in _COMPUTED]
    return pa.RecordBatch.from_arrays(arrays, names=[name for name, _ in CHECKED_FIELDS])


def check_batches(
    batches: Iterable[pa.RecordBatch],
    *,
    catalog: Any,
    oversize_bytes: int,
    statuses: Mapping[str, str] | None = None,
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: ``catalog`` is a ``CatalogBundle`` or a Spark broadcast of one."""
    bundle: CatalogBundle = catalog.value if hasattr(catalog, "value") else catalog
    checker = checker_for(bundle, oversize_bytes=oversize_bytes, statuses=statuses)
    for batch in batches:
        yield check_batch(checker, batch)


def quarantine_line(line: str, archive_file: str | None, findings: Iterable[Mapping[str, Any]]) -> str:
    """The original record plus ``reasons`` (and ``archiveFile``); a line that is not an object goes in ``rawLine``."""
    reasons = [{"code": f["code"], "path": f["path"], "message": f["message"]} for f in findings]
    try:
        record = parse_json(line)
    except NotJson:
        record = None
    if not isinstance(record, dict):
        record = {"rawLine": line}
    record["reasons"] = reasons
    record["archiveFile"] = archive_file
    try:
        return orjson.dumps(record).decode("utf-8")
    except (TypeError, orjson.JSONEncodeError):  # a lone surrogate or an integer beyond 64 bits
        return json.dumps(record)


def quarantine_batches(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: (line, archive_file, findings) -> one ``value`` string per quarantined record."""
    for batch in batches:
        rows = zip(
            batch.column("line").to_pylist(),
            batch.column("archive_file").to_pylist(),
            batch.column("findings").to_pylist(),
            strict=True,
        )
        values = [quarantine_line(line or "", archive_file, findings or []) for line, archive_file, findings in rows]
        yield pa.RecordBatch.from_arrays([pa.array(values, type=pa.string())], names=["value"])


def finding_of(row: Mapping[str, Any]) -> Finding:
    """A ``FINDING_TYPE`` row back as a ``Finding`` (tests compare Spark's output with the pure rules)."""
    return Finding(Reason(row["code"]), row["path"], row["message"])

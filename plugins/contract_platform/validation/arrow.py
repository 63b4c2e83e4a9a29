"""The record-level rules over archive splits, as Arrow record batches: what Spark's ``mapInArrow`` runs.

Lives in the domain (not in ``spark_jobs``) so executors find it in the installed package; it needs
pyarrow, never pyspark. The Spark job hands each Python worker rows of ``SPLIT_FIELDS``; the worker
reads those splits itself (``validation.reading``), checks every line and returns ``CHECKED_FIELDS``
rows, one per line. Only records the record-level rules find invalid keep their line, file and
findings (what the quarantine needs): the rest is what the cross-record rules and the report need.
"""

from __future__ import annotations

import contextlib
import gc
import json
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import orjson
import pyarrow as pa

from contract_platform.validation.bundle import CatalogBundle, checker_for
from contract_platform.validation.model import CheckedRecord, Finding
from contract_platform.validation.reading import Split, line_batches
from contract_platform.validation.reasons import Reason
from contract_platform.validation.records import NotJson, RecordChecker, parse_json

__all__ = [
    "CHECKED_FIELDS",
    "FINDING_TYPE",
    "REREAD_FIELDS",
    "SPLIT_FIELDS",
    "check_split",
    "check_splits",
    "finding_of",
    "line_hash",
    "quarantine_batches",
    "quarantine_line",
    "reread_batches",
]

FINDING_TYPE = pa.struct([("rank", pa.int32()), ("code", pa.string()), ("path", pa.string()), ("message", pa.string())])
SPLIT_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("split_index", pa.int64()),
    ("uri", pa.string()),
    ("start", pa.int64()),
    ("length", pa.int64()),
    ("compressed", pa.bool_()),
)
CHECKED_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("record_id", pa.int64()),  # archive position: Split.record_id
    ("archive_file", pa.string()),  # kept lines only
    ("line", pa.binary()),  # kept lines only: the record's bytes as they are in the file
    ("line_bytes", pa.int64()),
    ("line_hash", pa.int64()),  # proves a second read found the same line
    ("received_at", pa.string()),
    ("received_us", pa.int64()),
    ("message_type", pa.string()),
    ("message_id", pa.string()),
    ("payload_hash", pa.binary()),
    ("order_key", pa.string()),
    ("sequence", pa.int64()),
    ("rank", pa.int32()),  # first reason found by the record-level rules (None: none)
    ("findings", pa.list_(FINDING_TYPE)),  # kept lines only
    ("retired_producer", pa.string()),  # a message received on a retired version: its producer ("": unnamed)
)
# A split to read again, with the records wanted from it and the findings the cross-record rules gave them.
WANTED_TYPE = pa.struct([("record_id", pa.int64()), ("line_hash", pa.int64()), ("findings", pa.list_(FINDING_TYPE))])
REREAD_FIELDS: tuple[tuple[str, pa.DataType], ...] = (*SPLIT_FIELDS, ("wanted", pa.list_(WANTED_TYPE)))
_SCHEMA = pa.schema(list(CHECKED_FIELDS))
BATCH_ROWS = 8192
_CLOSED = "validate closed partitions (no file still being written), or run again"


def line_hash(line: bytes) -> int:
    """A cheap fingerprint of a line's bytes (not a security check)."""
    return zlib.adler32(line) | (len(line) << 32)


def _finding_rows(findings: Iterable[Finding]) -> list[dict[str, Any]]:
    return [{"rank": f.code.rank, "code": str(f.code), "path": f.path, "message": f.message} for f in sorted(findings)]


def _splits(batch: pa.RecordBatch) -> Iterator[Split]:
    for row in batch.select([name for name, _ in SPLIT_FIELDS]).to_pylist():
        yield Split(row["split_index"], row["uri"], row["start"], row["length"], row["compressed"])


def check_split(checker: RecordChecker, split: Split, *, keep_lines: bool = False) -> Iterator[pa.RecordBatch]:
    """Every line of ``split`` checked, ``BATCH_ROWS`` records per batch (``keep_lines``: keep every line)."""
    rows: list[tuple[Any, ...]] = []
    number = split.record_id(0)
    uri = split.uri
    check = checker.check
    for lines in line_batches(split):
        for line in lines:
            checked: CheckedRecord = check(line)
            found = checked.findings
            rank = invalid = None
            if found:
                rank = min(f.code.rank for f in found)
                invalid = any(f.code.invalid for f in found)
            keep = invalid or keep_lines
            rows.append(
                (
                    number,
                    uri if keep else None,
                    line if keep else None,
                    len(line),
                    line_hash(line),
                    checked.received_at,
                    checked.received_us,
                    checked.message_type,
                    checked.message_id,
                    checked.payload_hash,
                    checked.order_key,
                    checked.sequence,
                    rank,
                    _finding_rows(found) if keep and found else None,
                    checked.retired_producer,
                )
            )
            number += 1
            if len(rows) >= BATCH_ROWS:
                yield _batch(rows)
                rows = []
    if rows:
        yield _batch(rows)


def _batch(rows: Sequence[tuple[Any, ...]]) -> pa.RecordBatch:
    columns = zip(*rows, strict=True)
    arrays = [pa.array(values, type=kind) for values, (_, kind) in zip(columns, CHECKED_FIELDS, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=_SCHEMA)


def _checker(catalog: Any, oversize_bytes: int, statuses: Mapping[str, str] | None) -> RecordChecker:
    bundle: CatalogBundle = catalog.value if hasattr(catalog, "value") else catalog
    checker = checker_for(bundle, oversize_bytes=oversize_bytes, statuses=statuses)
    gc.freeze()  # the compiled catalogue lives as long as the worker: collections need not walk it
    return checker


@contextlib.contextmanager
def _rare_collections() -> Iterator[None]:
    """Fewer cyclic garbage collections while records are checked: parsed JSON holds no cycles,
    so memory is freed by reference counting as usual and a collection would find nothing to free."""
    thresholds = gc.get_threshold()
    gc.set_threshold(100_000, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def check_splits(
    batches: Iterable[pa.RecordBatch],
    *,
    catalog: Any,
    oversize_bytes: int,
    statuses: Mapping[str, str] | None = None,
    keep_lines: bool = False,
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: ``SPLIT_FIELDS`` rows in, ``CHECKED_FIELDS`` rows out (``catalog``: a bundle or its broadcast)."""
    checker = _checker(catalog, oversize_bytes, statuses)
    with _rare_collections():
        for batch in batches:
            for split in _splits(batch):
                yield from check_split(checker, split, keep_lines=keep_lines)


def reread_batches(
    batches: Iterable[pa.RecordBatch],
    *,
    catalog: Any,
    oversize_bytes: int,
    statuses: Mapping[str, str] | None = None,
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: ``REREAD_FIELDS`` rows in, one quarantine ``value`` per wanted record out.

    The wanted records are invalid by a cross-record rule only, so the first read kept neither their
    line nor their record-level findings: both are read and checked again here, and the line's hash
    must match the first read's (``ArchiveError`` otherwise: the file changed under the job).
    """
    from contract_platform.errors import ArchiveError

    checker = _checker(catalog, oversize_bytes, statuses)
    for batch in batches:
        for split, row in zip(_splits(batch), batch.column("wanted").to_pylist(), strict=True):
            wanted = {w["record_id"]: w for w in row or []}
            values = []
            number = split.record_id(0)
            for lines in line_batches(split):
                for line in lines:
                    want = wanted.pop(number, None)
                    number += 1
                    if want is None:
                        continue
                    if line_hash(line) != want["line_hash"]:
                        raise ArchiveError(f"{split.uri}: a line changed while the archive was validated; {_CLOSED}")
                    found = [*checker.check(line).findings, *(finding_of(f) for f in want["findings"] or [])]
                    values.append(quarantine_line(line, split.uri, _finding_rows(found)))
                if not wanted:
                    break
            if wanted:
                raise ArchiveError(
                    f"{split.uri}: {len(wanted)} lines were gone when the archive was read again; {_CLOSED}"
                )
            yield pa.RecordBatch.from_arrays([pa.array(values, type=pa.string())], names=["value"])


def quarantine_line(line: str | bytes, archive_file: str | None, findings: Iterable[Mapping[str, Any]]) -> str:
    """The original record plus ``reasons`` (and ``archiveFile``); a line that is not an object goes in ``rawLine``."""
    reasons = [{"code": f["code"], "path": f["path"], "message": f["message"]} for f in findings]
    try:
        record = parse_json(line)
    except NotJson:
        record = None
    if not isinstance(record, dict):
        record = {"rawLine": line.decode("utf-8", "replace") if isinstance(line, bytes) else line}
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
        values = [quarantine_line(line or b"", archive_file, findings or []) for line, archive_file, findings in rows]
        yield pa.RecordBatch.from_arrays([pa.array(values, type=pa.string())], names=["value"])


def finding_of(row: Mapping[str, Any]) -> Finding:
    """A ``FINDING_TYPE`` row back as a ``Finding`` (tests compare Spark's output with the pure rules)."""
    return Finding(Reason(row["code"]), row["path"], row["message"])

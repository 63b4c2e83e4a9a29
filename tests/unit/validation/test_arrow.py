"""The rules over Arrow batches (what Spark's mapInArrow runs) and the quarantine line."""

from __future__ import annotations

import json

import pyarrow as pa

from contract_platform.validation.arrow import CHECKED_FIELDS, FINDING_TYPE, RECORD_FIELDS, check_batch, quarantine_line


def test_a_batch_comes_back_with_the_declared_columns_and_keeps_only_invalid_lines(checker, envelope, record):
    good = json.dumps(record(envelope()))
    deprecated = json.dumps(record(envelope("billing.invoice-issued.v1")))
    lines = [good, good[:40], deprecated, None]
    batch = pa.RecordBatch.from_arrays(
        [
            pa.array([1, 2, 3, 4], pa.int64()),
            pa.array(["f1", "f2", "f3", "f4"]),
            pa.array(lines, pa.string()),
            pa.array([len(line or "") for line in lines], pa.int64()),
            pa.array([11, 12, 13, 14], pa.int64()),
        ],
        names=[name for name, _ in RECORD_FIELDS],
    )
    out = check_batch(checker, batch)
    assert out.schema.names == [name for name, _ in CHECKED_FIELDS]
    assert out.schema.field("findings").type == pa.list_(FINDING_TYPE)
    rows = out.to_pylist()
    assert [r["record_id"] for r in rows] == [1, 2, 3, 4] and [r["line_hash"] for r in rows] == [11, 12, 13, 14]
    assert rows[0]["findings"] is None and rows[0]["rank"] is None
    assert rows[1]["findings"][0]["code"] == "MALFORMED" and rows[1]["rank"] == 0
    assert rows[2]["findings"][0]["code"] == "DEPRECATED_TYPE"  # counted, not invalid
    assert [r["line"] for r in rows] == [None, good[:40], None, None]  # only what the quarantine needs
    assert [r["archive_file"] for r in rows] == [None, "f2", None, None]
    assert rows[3]["message_type"] is None


def test_the_quarantine_line_is_the_record_plus_its_reasons(envelope, record):
    rec = record(envelope())
    reasons = [{"rank": 4, "code": "HEADER_MISMATCH", "path": "/properties/type", "message": "m"}]
    line = json.loads(quarantine_line(json.dumps(rec), "file:/a/b.jsonl", reasons))
    assert line == {
        **rec,
        "reasons": [{"code": "HEADER_MISMATCH", "path": "/properties/type", "message": "m"}],
        "archiveFile": "file:/a/b.jsonl",
    }
    raw = json.loads(quarantine_line('{"exchange": "trunc', None, reasons))
    assert raw["rawLine"] == '{"exchange": "trunc'

"""The rules over archive splits, as Arrow batches (what Spark's mapInArrow runs), and the quarantine line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pytest

from contract_platform.errors import ArchiveError
from contract_platform.validation import CatalogBundle, Reason
from contract_platform.validation.arrow import (
    CHECKED_FIELDS,
    FINDING_TYPE,
    REREAD_FIELDS,
    check_split,
    line_hash,
    quarantine_line,
    reread_batches,
)
from contract_platform.validation.reading import Split


def write(path: Path, lines: list[bytes]) -> Split:
    data = b"\n".join(lines) + b"\n"
    if path.suffix == ".gz":
        data = gzip.compress(data)
    path.write_bytes(data)
    return Split(3, path.as_uri(), 0, len(data), path.suffix == ".gz")


def test_a_split_comes_back_with_the_declared_columns_and_keeps_only_invalid_lines(
    tmp_path: Path, checker, envelope, record
):
    good = json.dumps(record(envelope())).encode()
    deprecated = json.dumps(record(envelope("billing.invoice-issued.v1"))).encode()
    split = write(tmp_path / "part.jsonl.gz", [good, good[:40], deprecated, b"\xff{}"])
    batches = list(check_split(checker, split))
    assert [b.schema.names for b in batches] == [[name for name, _ in CHECKED_FIELDS]]
    assert batches[0].schema.field("findings").type == pa.list_(FINDING_TYPE)
    rows = batches[0].to_pylist()
    assert [r["record_id"] for r in rows] == [3 << 32 | n for n in range(4)]  # split 3, lines 0..3
    assert [r["line_bytes"] for r in rows] == [len(good), 40, len(deprecated), 3]
    assert rows[0]["findings"] is None and rows[0]["rank"] is None
    assert rows[1]["findings"][0]["code"] == "MALFORMED" and rows[1]["rank"] == 0
    assert rows[2]["findings"] is None and rows[2]["rank"] == Reason.DEPRECATED_TYPE.rank  # counted, not invalid
    assert "not UTF-8" in rows[3]["findings"][0]["message"]
    assert [r["line"] for r in rows] == [None, good[:40], None, b"\xff{}"]  # only what the quarantine needs
    assert [r["archive_file"] for r in rows] == [None, split.uri, None, split.uri]
    assert rows[2]["message_type"] == "billing.invoice-issued.v1" and rows[1]["message_type"] is None
    kept = next(check_split(checker, split, keep_lines=True)).to_pylist()
    assert [r["line"] for r in kept] == [good, good[:40], deprecated, b"\xff{}"]


def reread_rows(split: Split, wanted: list[dict]) -> pa.RecordBatch:
    row = {"split_index": split.index, "uri": split.uri, "start": split.start, "length": split.length}
    row |= {"compressed": split.compressed, "wanted": wanted}
    return pa.RecordBatch.from_pylist([row], schema=pa.schema(list(REREAD_FIELDS)))


def test_a_second_read_finds_the_wanted_lines_with_all_their_reasons(tmp_path: Path, catalog_dir, envelope, record):
    good = json.dumps(record(envelope())).encode()
    deprecated = json.dumps(record(envelope("billing.invoice-issued.v1"))).encode()
    split = write(tmp_path / "part.jsonl", [good, deprecated, good])
    late = {
        "rank": Reason.OUT_OF_ORDER.rank,
        "code": "OUT_OF_ORDER",
        "path": "/payload/aggregateVersion",
        "message": "late",
    }
    wanted = [{"record_id": split.record_id(1), "line_hash": line_hash(deprecated), "findings": [late]}]
    bundle = CatalogBundle.read(catalog_dir)
    out = list(reread_batches([reread_rows(split, wanted)], catalog=bundle, oversize_bytes=2**20))
    [value] = out[0].column("value").to_pylist()
    line = json.loads(value)
    assert [r["code"] for r in line["reasons"]] == ["OUT_OF_ORDER", "DEPRECATED_TYPE"]
    assert line["archiveFile"] == split.uri and line["exchange"] == json.loads(deprecated)["exchange"]

    changed = [dict(wanted[0], line_hash=line_hash(b"something else"))]
    with pytest.raises(ArchiveError, match="changed"):
        list(reread_batches([reread_rows(split, changed)], catalog=bundle, oversize_bytes=2**20))
    gone = [dict(wanted[0], record_id=split.record_id(7))]
    with pytest.raises(ArchiveError, match="gone"):
        list(reread_batches([reread_rows(split, gone)], catalog=bundle, oversize_bytes=2**20))


def test_the_quarantine_line_is_the_record_plus_its_reasons(envelope, record):
    rec = record(envelope())
    reasons = [
        {"rank": Reason.HEADER_MISMATCH.rank, "code": "HEADER_MISMATCH", "path": "/properties/type", "message": "m"}
    ]
    line = json.loads(quarantine_line(json.dumps(rec).encode(), "file:/a/b.jsonl", reasons))
    assert line == {
        **rec,
        "reasons": [{"code": "HEADER_MISMATCH", "path": "/properties/type", "message": "m"}],
        "archiveFile": "file:/a/b.jsonl",
    }
    raw = json.loads(quarantine_line(b'{"exchange": "trunc', None, reasons))
    assert raw["rawLine"] == '{"exchange": "trunc'
    assert json.loads(quarantine_line(b'{"a": "\xff"}', None, reasons))["rawLine"] == '{"a": "\ufffd"}'

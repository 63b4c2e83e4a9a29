"""archive_last_seen: the last archived message per type, on small inline archives (the shared session)."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from contract_platform.retirement import LastSeen
from spark_jobs import archive_last_seen as job

pytestmark = pytest.mark.spark

V1, V2 = "billing.invoice-issued.v1", "billing.invoice-issued.v2"


def record(
    received_at: str, *, type_: str | None = None, headers: dict[str, Any] | None = None, body: Any = None
) -> str:
    envelope = body if body is not None else {"metadata": {"messageId": "m"}, "payload": {}}
    return json.dumps(
        {
            "exchange": "billing.events",
            "routingKey": "billing.invoice.issued.v1",
            "receivedAt": received_at,
            "redelivered": False,
            "properties": {"messageId": "m", "type": type_, "headers": headers or {"schema-version": 1}},
            "body": envelope if isinstance(envelope, str) or envelope is None else json.dumps(envelope),
            "bodyBase64": None,
        }
    )


def lines(spark: Any, *values: str) -> Any:
    return spark.createDataFrame([(value,) for value in values], "line string")


def test_last_seen_takes_the_type_from_body_then_property_then_header(spark: Any) -> None:
    records = lines(
        spark,
        record("2026-07-01T10:00:00.000Z", type_=V1),
        record("2026-07-03T08:30:00.250Z", type_=V1),
        record("2026-07-02T00:00:00.000Z", type_=None, headers={"message-type": V1}),
        record("2026-07-09T00:00:00.000Z", type_="", body={"metadata": {"messageType": V2}}),
        record("2026-07-05T00:00:00.000Z", type_=V2, body={"metadata": {"messageType": V1}}),  # the envelope wins
        record("2026-07-06T00:00:00.000Z", type_=None, body="not json"),  # no type at all: not counted
        "{ a malformed line",
    )

    seen = job.last_seen(records)

    expected = spark.createDataFrame(
        [(V1, "2026-07-05 00:00:00.000", 4), (V2, "2026-07-09 00:00:00.000", 1)],
        "messageType string, lastReceivedAt string, records long",
    ).withColumn("lastReceivedAt", F.to_timestamp("lastReceivedAt"))
    assertDataFrameEqual(seen, expected)
    assert job.to_document(seen) == {
        V1: {"lastReceivedAt": "2026-07-05T00:00:00.000Z", "records": 4},
        V2: {"lastReceivedAt": "2026-07-09T00:00:00.000Z", "records": 1},
    }


def test_main_scans_an_archive_root_and_the_domain_reads_its_file(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "archive"
    day = root / "billing.events" / "date=2026-07-03"
    day.mkdir(parents=True)
    (day / "a.jsonl").write_text(record("2026-07-03T08:00:00.000Z", type_=V1) + "\n")
    with gzip.open(day / "b.jsonl.gz", "wt") as compressed:
        compressed.write(record("2026-07-03T09:00:00.000Z", type_=V1) + "\n")
    (day / "ignored.txt").write_text(record("2026-08-01T00:00:00.000Z", type_=V1) + "\n")
    out = tmp_path / "last-seen.json"

    assert job.main([str(root), "--out", str(out)]) == 0

    assert json.loads(out.read_text()) == {V1: {"lastReceivedAt": "2026-07-03T09:00:00.000Z", "records": 2}}
    seen = LastSeen.read(out)
    assert seen.scanned and seen.types[V1].last_received_at == datetime(2026, 7, 3, 9, tzinfo=UTC)
    assert spark.sparkContext._jsc is not None  # the shared session was reused, not stopped


def test_an_empty_root_is_scanned_and_a_missing_one_leaves_no_file(spark: Any, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "last-seen.json"
    assert job.main([str(empty), "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == {}
    assert LastSeen.read(out).scanned

    assert job.main([str(tmp_path / "missing"), "--out", str(out)]) == 0
    assert not out.exists()  # the earlier answer is gone: "not scanned", not "never archived"
    assert not LastSeen.read(out).scanned


def test_bad_arguments_exit_2(tmp_path: Path) -> None:
    assert job.main([str(tmp_path)]) == 2  # --out is required

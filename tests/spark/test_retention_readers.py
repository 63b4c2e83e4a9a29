"""After archive retention deleted a partition, the retention scan (archive_last_seen) reads only what is left, and
the retirement audit's retention check of the type whose archive is gone still passes (the shared session)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from contract_platform.catalog import Catalog
from contract_platform.evidence import Verdict
from contract_platform.retention import apply_archive_retention
from contract_platform.retirement import LastSeen
from contract_platform.retirement.retention import check_retention
from contract_platform.store import SqlRegistry
from spark_jobs import archive_last_seen as job

pytestmark = pytest.mark.spark

V1, V2 = "billing.invoice-issued.v1", "billing.invoice-issued.v2"
NOW = datetime(2026, 7, 10, tzinfo=UTC)


def _write(root: Path, day: str, message_type: str, times: list[str]) -> None:
    folder = root / "billing.events" / f"date={day}"
    folder.mkdir(parents=True)
    lines = [
        json.dumps({"exchange": "billing.events", "routingKey": "k", "receivedAt": f"{day}T{t}Z", "redelivered": False,
                    "properties": {"messageId": f"m{n}", "type": message_type}, "body": "{}", "bodyBase64": None})
        for n, t in enumerate(times)
    ]  # fmt: skip
    (folder / "h-1-a-000001.jsonl").write_text("\n".join(lines) + "\n")


def test_last_seen_after_a_deletion(spark: Any, catalog: Catalog, tmp_path: Path) -> None:
    root, out = tmp_path / "archive", tmp_path / "last-seen.json"
    _write(root, "2026-03-01", V1, ["10:00:00.000", "11:00:00.000"])  # past 90 days at NOW
    _write(root, "2026-07-08", V2, ["09:00:00.000"])
    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as registry:
        run = apply_archive_retention(catalog, root, now=NOW, holds={}, registry=registry)
    assert [p.records for p in run.deleted] == [2]

    assert job.main([str(root), "--out", str(out)]) == 0
    seen = LastSeen.read(out)
    assert set(seen.types) == {V2} and seen.types[V2].records == 1  # nothing read from the trash
    result = check_retention(catalog.require(V1), seen, now=NOW)
    assert result.verdict is Verdict.PASS and result.figures["neverArchived"] is True

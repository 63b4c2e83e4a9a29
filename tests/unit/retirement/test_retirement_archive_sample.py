"""The retirement bundle's sample: the last archived messages of the type, newest partitions first, PII masked."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from tests.support.contracts import V1, V2, migrating_contract

from contract_platform.retirement import last_archived, mask_pii
from contract_platform.retirement.archive import MASK


def record(message_type: str, received_at: str, number: int, email: str = "ana@example.com") -> dict[str, Any]:
    envelope = {
        "metadata": {"messageId": f"m-{number}", "messageType": message_type},
        "payload": {"invoiceId": f"inv-{number}", "billingEmail": email, "lines": [{"note": "x"}]},
    }
    return {
        "exchange": "billing.events",
        "receivedAt": received_at,
        "properties": {"messageId": f"m-{number}", "type": message_type, "headers": {}},
        "body": json.dumps(envelope),
        "bodyBase64": None,
    }


def write(path: Path, records: list[dict[str, Any]], *, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in records)
    if gz:
        with gzip.open(path, "wt") as out:
            out.write(text)
    else:
        path.write_text(text)


def test_the_sample_is_the_latest_records_of_the_type_oldest_first_and_masked(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    exchange = root / "billing.events"
    write(exchange / "date=2026-07-01" / "a.jsonl", [record(V1, f"2026-07-01T10:00:0{i}.000Z", i) for i in range(5)])
    write(
        exchange / "date=2026-07-02" / "b.jsonl.gz",
        [record(V1, "2026-07-02T10:00:01.000Z", 11), record(V2, "2026-07-02T10:00:02.000Z", 12)],
        gz=True,
    )
    write(exchange / "date=2026-07-02" / "a.jsonl", [record(V1, "2026-07-02T10:00:00.000Z", 10)])
    (exchange / "date=2026-07-02" / "c.jsonl").write_text("{ partial line")

    sample = last_archived(root, migrating_contract(V1), limit=4)

    assert [r["properties"]["messageId"] for r in sample] == ["m-3", "m-4", "m-10", "m-11"]
    for item in sample:
        payload = json.loads(item["body"])["payload"]
        assert payload["billingEmail"] == MASK and payload["invoiceId"].startswith("inv-")
        assert item["piiMasked"] == ["/payload/billingEmail"]
    assert "ana@example.com" not in json.dumps(sample)


def test_nothing_archived_gives_an_empty_sample(tmp_path: Path) -> None:
    assert last_archived(tmp_path / "nowhere", migrating_contract(V1)) == []


def test_a_body_that_cannot_be_masked_is_left_out() -> None:
    raw = {"properties": {"type": V1}, "body": None, "bodyBase64": "//79"}
    masked = mask_pii(raw, ["/payload/billingEmail"])
    assert masked["bodyBase64"] is None and masked["body"] is None and "bodyRemoved" in masked
    assert raw["bodyBase64"] == "//79"  # the original is untouched
    nested = mask_pii(record(V1, "t", 1), ["/payload/lines/0/note", "/payload/missing"])
    assert json.loads(nested["body"])["payload"]["lines"] == [{"note": MASK}]
    assert nested["piiMasked"] == ["/payload/lines/0/note"]

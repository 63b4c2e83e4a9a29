"""Replay per consumer (docs/consumer-impact.md): of the messages the candidate rejects, how many each consumer
would see rejected within what it reads, archived and in flight."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import yaml
from tests.support.cli import catalogue_repo, run_cli
from tests.support.replay import ORDER, tighten, write_archive

from contract_platform.replay.judge import ReplayPlan, Tally, judge_for
from contract_platform.validation.bundle import CatalogBundle

MORE_CONSUMERS = [
    {
        "service": "analytics-service",
        "queue": "analytics-service.order.order-created.v1",
        "reads": ["/payload/orderTotal"],
    },
    {"service": "audit-service", "queue": "audit-service.order.order-created.v1"},  # no reads: reads everything
]


def _with_more_consumers(catalogue: Path) -> None:
    contract = catalogue / "order/order-created/v1/contract.yaml"
    raw = yaml.safe_load(contract.read_text())
    raw["consumers"] = [*raw["consumers"], *MORE_CONSUMERS]
    contract.write_text(yaml.safe_dump(raw, sort_keys=False))


def test_each_consumer_counts_the_rejections_within_what_it_reads(tmp_path: Path, catalog_dir: Path) -> None:
    import shutil

    catalogue = Path(shutil.copytree(catalog_dir, tmp_path / "contracts"))
    _, old = tighten(catalogue)
    _with_more_consumers(catalogue)
    archive = write_archive(tmp_path / "archive", catalogue, [10_001, 10_002, 7, 8, 9])  # three too short
    judge = judge_for(CatalogBundle.read(str(catalogue)), ReplayPlan(ORDER, ORDER, current_schema=old))
    tally = Tally()
    for path in archive.rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            judge.replay(line, tally)

    assert tally.rejected == 3
    # billing and fulfillment read /payload/orderId; analytics only the total; audit reads everything
    assert dict(tally.consumers) == {"billing-service": 3, "fulfillment-service": 3, "audit-service": 3}
    assert Tally.from_json(tally.to_json()).consumers == tally.consumers
    assert Tally().merge(tally).merge(tally).consumers["billing-service"] == 6


def test_check_replay_shows_each_consumers_rejections(capsys, tmp_path: Path, catalog_dir: Path) -> None:
    catalogue = catalogue_repo(tmp_path / "repo", catalog_dir)
    tighten(catalogue, compatibility={"mode": "BACKWARD", "tightening": "evidence", "minMessages": 5})
    _with_more_consumers(catalogue)
    archive = write_archive(tmp_path / "archive", catalogue, [10_001, 10_002, 7, 8, 9], datetime.now(UTC))

    argv = ["check", str(catalogue), "--against", "main", "--replay", str(archive), "--no-in-flight"]
    code, out, _ = run_cli(capsys, *argv)

    assert code == 1, out
    assert "consumer billing-service: 3 archived messages rejected within its reads" in out
    assert "consumer analytics-service: 0 archived messages rejected within its reads" in out
    assert "consumer audit-service: 3 archived messages rejected within everything it reads" in out
    code, out, _ = run_cli(capsys, *argv, "--format", "json")
    [replayed] = json.loads(out)["replay"]
    by_service = {c["service"]: c for c in replayed["figures"]["consumers"]}
    assert by_service["fulfillment-service"]["archived_rejected"] == 3
    assert by_service["analytics-service"]["in_flight_rejected"] is None  # the broker was not read


def test_a_migration_counts_per_old_consumer_the_messages_whose_read_fields_it_changes(catalog_dir: Path) -> None:
    """billing.invoice-issued.v2 replays v1's traffic migrated: both v1 consumers read /payload/amount, which the
    migration transforms into minor units, so every migrated message changes what they read."""
    from benchmarks.generate_archive import archive_record

    from contract_platform.catalog import load_catalog
    from contract_platform.replay.run import replay_targets

    catalog = load_catalog(catalog_dir)
    v1 = catalog.get("billing.invoice-issued.v1")
    [target] = replay_targets(catalog, lambda _c: [], ["billing.invoice-issued.v2"])
    template = json.loads(
        (catalog_dir / "billing/invoice-issued/v1/fixtures/valid/eur-issued-net30-inv-10001.json").read_text()
    )
    judge = judge_for(CatalogBundle.read(str(catalog_dir)), target.plan)
    tally = Tally()
    for number in range(4):
        envelope = json.loads(json.dumps(template))
        envelope["metadata"]["messageId"] = f"m-{number}"
        judge.replay(json.dumps(archive_record(v1, envelope, datetime.now(UTC).isoformat())), tally)

    assert tally.replayed == 4 and tally.rejected == 0
    assert dict(tally.changed) == {"accounting-service": 4, "notification-service": 4}

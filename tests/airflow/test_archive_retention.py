"""archive_retention run in-process (dag.test): the past-window partition goes with its evidence, the partition an
investigation hold keeps stays, and a second run changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

pytestmark = pytest.mark.airflow


def test_the_daily_run_deletes_past_window_partitions_and_respects_a_hold(dagbag, platform_env) -> None:
    from contract_platform.catalog import load_catalog
    from contract_platform.evidence import EvidenceKind
    from contract_platform.evidence.figures import ArchiveRetentionFigures
    from contract_platform.retention import holds_file, set_hold
    from contract_platform.store import SqlRegistry

    prefix, home = platform_env["prefix"], platform_env["home"]
    old = (datetime.now(UTC) - timedelta(days=120)).date()
    recent = (datetime.now(UTC) - timedelta(days=3)).date()
    for exchange, day in (("order.events", old), ("order.events", recent), ("quote.events", old)):
        folder = home / "archive" / f"{prefix}.{exchange}" / f"date={day.isoformat()}"
        folder.mkdir(parents=True)
        (folder / "h-1-a-000001.jsonl").write_text('{"n": 1}\n{"n": 2}\n')
    catalog = load_catalog(platform_env["catalog"])
    set_hold(holds_file(home), catalog.require("quote.quote-approved.v1"), reason="INC-7", owner="dana",
             until=None, now=datetime.now(UTC))  # fmt: skip

    dag = dagbag.get_dag("archive_retention")
    first = dag.test()
    assert str(first.state) == "success"
    assert not (home / "archive" / f"{prefix}.order.events" / f"date={old.isoformat()}").exists()
    assert (home / "archive" / f"{prefix}.order.events" / f"date={recent.isoformat()}").is_dir()
    assert (home / "archive" / f"{prefix}.quote.events" / f"date={old.isoformat()}").is_dir()  # held
    with SqlRegistry.open(platform_env["registry_url"]) as store:
        evidence = store.evidence("order.order-created.v1", EvidenceKind.ARCHIVE_RETENTION)
        assert [ArchiveRetentionFigures.of(r).records for r in evidence] == [2]
        assert store.evidence("quote.quote-approved.v1", EvidenceKind.ARCHIVE_RETENTION) == []

    second = dag.test()
    assert str(second.state) == "success"
    with SqlRegistry.open(platform_env["registry_url"]) as store:
        assert len(store.evidence("order.order-created.v1", EvidenceKind.ARCHIVE_RETENTION)) == 1

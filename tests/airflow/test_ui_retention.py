"""The Contracts page shows retention: the holds in force on a version's archive (catalogue and investigation holds)
the partitions retention deleted, with their counts, and the dead letters purged past ``retention.dlq``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from tests.support.pages import page_section

pytestmark = pytest.mark.airflow

V1, V2 = "billing.invoice-issued.v1", "billing.invoice-issued.v2"
NOW = datetime(2026, 7, 10, tzinfo=UTC)


def test_the_page_shows_holds_and_deletions(contracts_app, tmp_path: Path, monkeypatch) -> None:
    from contract_platform.retention import apply_archive_retention, holds_file, holds_in_force, set_hold

    home = tmp_path / "data"
    monkeypatch.setenv("CONTRACT_PLATFORM_HOME", str(home))
    folder = home / "archive" / "billing.events" / "date=2026-03-01"
    folder.mkdir(parents=True)
    (folder / "h-1-a-000001.jsonl").write_text('{"n": 1}\n{"n": 2}\n{"n": 3}\n')

    def seed(registry: Any, catalog: Any) -> None:
        apply_archive_retention(catalog, home / "archive", now=NOW, holds=holds_in_force(catalog, (), NOW.date()),
                                registry=registry)  # fmt: skip
        set_hold(holds_file(), catalog.contracts[V2], reason="INC-9 chargeback", owner="erin", until=None,
                 now=NOW)  # fmt: skip

    client, auth = contracts_app(seed)

    v1 = page_section(client.get(f"/contracts/c/{V1}", headers=auth).text, 'id="retention"')
    assert "<code>billing.events/date=2026-03-01</code>" in v1
    assert "<td>3</td>" in v1  # the records deleted
    assert "No hold is in force" in v1
    v2 = page_section(client.get(f"/contracts/c/{V2}", headers=auth).text, 'id="retention"')
    assert "investigation hold on billing.invoice-issued.v2 until released (INC-9 chargeback, owner erin)" in v2
    assert "<code>billing.events/date=2026-03-01</code>" in v2  # the exchange's partition held v2's messages too


def test_the_page_shows_dead_letter_purges(contracts_app) -> None:
    from contract_platform.evidence import Verdict, record
    from contract_platform.evidence.figures import DeadLetterPurgeFigures

    def seed(registry: Any, catalog: Any) -> None:
        purge = DeadLetterPurgeFigures(
            queue="billing.invoice-issued.v1.ledger.dlq", vhost="/", window="14d",
            older_than="2026-06-26T00:00:00+00:00", removed=1234, kept=5, age_unknown=2, message_ids=("m-1",),
        )  # fmt: skip
        record(registry, V1, catalog.contracts[V1].version, purge, verdict=Verdict.PASS, collected_at=NOW)

    client, auth = contracts_app(seed)

    v1 = page_section(client.get(f"/contracts/c/{V1}", headers=auth).text, 'id="retention"')
    assert "<code>billing.invoice-issued.v1.ledger.dlq</code>" in v1
    assert "<td>1,234</td><td>5</td><td>2</td>" in v1  # removed, kept, of unknown age
    assert "2026-06-26T00:00:00+00:00" in v1
    v2 = page_section(client.get(f"/contracts/c/{V2}", headers=auth).text, 'id="retention"')
    assert "No dead letter of this version has been purged." in v2  # a purge is the purged version's alone

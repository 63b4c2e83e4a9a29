"""A retired version on the Contracts page: messages still received after its retirement are an alarm naming
who sent them, how many and when; a parity run after the retirement judged a finished migration, so the page
shows the parity that held when the version was retired, not a failure recorded later above "Retired."."""

from __future__ import annotations

import os
from typing import Any

import pytest
from tests.support.pages import page_section
from tests.support.ui_seed import retire_with_late_traffic

pytestmark = pytest.mark.airflow

V1, V2 = "billing.invoice-issued.v1", "billing.invoice-issued.v2"


def _late_traffic(registry: Any, catalog: Any) -> None:
    retire_with_late_traffic(registry, catalog.contracts[V1], late=(("billing-service", 2), ("", 1)))


def test_traffic_after_retirement_is_an_alarm_and_parity_is_the_one_that_held(contracts_app) -> None:
    client, auth = contracts_app(_late_traffic)

    page = client.get(f"/contracts/c/{V1}", headers=auth)

    assert page.status_code == 200, page.text
    alarm = page_section(page.text, 'id="retired-traffic"')
    assert "3 messages received after the retirement" in alarm
    rows = alarm.split("<tr>")[2:]  # after the header row
    assert "<code>billing-service</code>" in rows[0] and '<td class="num">2</td>' in rows[0]
    assert "not named in the message" in rows[1]
    assert page.text.index('id="retired-traffic"') < page.text.index("<p>Retired.</p>")
    migration = page_section(page.text, '<section id="migration">')
    assert "parity <span" in migration and "verdict-pass" in migration and "verdict-fail" not in migration
    successor = page_section(client.get(f"/contracts/c/{V2}", headers=auth).text, '<section id="migration">')
    assert "verdict-pass" in successor and "verdict-fail" not in successor  # v2's page shows v1's parity too
    assert 'id="retired-traffic"' not in client.get(f"/contracts/c/{V2}", headers=auth).text


def test_the_api_and_the_catalogue_say_the_same(contracts_app) -> None:
    from contract_platform.catalog import load_catalog
    from contract_platform.store import SqlRegistry
    from contract_platform_airflow.ui import views

    client, auth = contracts_app(_late_traffic)

    detail = client.get(f"/contracts/api/contracts/{V1}", headers=auth).json()

    traffic = detail["retiredTraffic"]
    assert traffic["messages"] == 3 and traffic["firstReceivedAt"] < traffic["lastReceivedAt"]
    assert [(p["producer"], p["messages"]) for p in traffic["producers"]] == [("billing-service", 2), ("", 1)]
    assert [m["parity"]["verdict"] for m in detail["migrations"]] == ["pass"]
    assert detail["latestEvidence"]["migration_parity"]["verdict"] == "fail"  # the evidence itself is kept
    with SqlRegistry.open(os.environ["CONTRACT_REGISTRY_URL"]) as registry:
        [row] = [r for r in views.catalogue(load_catalog(), registry) if r.message_type == V1]
    assert row.parity is not None and row.parity.verdict == "pass"
    assert any(found.startswith("retired, yet received messages") for found in views.findings(row))

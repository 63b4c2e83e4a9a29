"""Runtime evidence on the Contracts page: what a service's guard judged on the real broker, reported to the
registry, shows beside archive validation, summed over the validation window as the promotion guard sums it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.integration.client.sample_service import INVOICE_V2, Ledger, consumer
from tests.support.broker import private_vhost, url_of
from tests.support.pages import page_section

pytestmark = [pytest.mark.airflow, pytest.mark.integration]

QUEUE = "accounting-service.billing.invoice-issued.v2"


def _guarded_traffic(registry: Any, catalog: Any) -> None:
    """accounting-service consumes 3 valid and 3 invalid v2 invoices on a private vhost and reports its counts."""
    from contract_platform.amqp import open_connection, plan_topology, provision
    from contract_platform.amqp.connection import close_quietly
    from contract_platform.client import EvidenceReporter, registry_sink
    from contract_platform.client.bundle import bundle_from_document
    from contract_platform.client.testkit import delivery_of
    from contract_platform.export.bundle import export_bundle

    bundle = bundle_from_document(export_bundle(catalog, service="accounting-service"), "accounting.bundle.json")
    with private_vhost() as vhost:
        url = url_of(vhost)
        connection = open_connection(url)
        try:
            provision(connection, plan_topology(catalog.contracts[INVOICE_V2]))
            channel = connection.channel()
            channel.confirm_delivery()
            for valid in (True, False):
                for fixture in bundle.fixtures(INVOICE_V2, valid=valid):
                    properties, body = delivery_of(copy.deepcopy(fixture.document))
                    channel.basic_publish("billing.events", "billing.invoice.issued.v2", body, properties)
        finally:
            close_quietly(connection)
        service = consumer(bundle, url, Ledger(), [QUEUE])
        reporter = EvidenceReporter([service.counters], registry_sink(registry, bundle), interval=3600).start()
        service.run(idle_timeout=1.0)
        reporter.stop()


def test_a_services_runtime_rejections_show_beside_archive_validation(contracts_app) -> None:
    client, auth = contracts_app(_guarded_traffic)

    page = client.get(f"/contracts/c/{INVOICE_V2}", headers=auth)

    assert page.status_code == 200, page.text
    runtime = page_section(page.text, '<section id="runtime">')
    assert "Archive validation:" in runtime and "guards:" in runtime
    assert 'data-runtime-rate="0.5"' in runtime
    assert "3 of 6 messages judged in the last" in runtime and "promotion is refused" in runtime
    [row] = runtime.split('<tr data-service="')[1:]
    assert row.startswith('accounting-service" data-side="consume"')
    assert [cell.split("<")[0] for cell in row.split('<td class="num">')[1:]] == ["6", "3", "50.0%", "0", "0"]
    assert "PAYLOAD_INVALID" in row or "ENVELOPE_INVALID" in row
    api = client.get(f"/contracts/api/contracts/{INVOICE_V2}", headers=auth).json()["runtime"]
    assert (api["checked"], api["rejected"], api["rate"], api["overTarget"]) == (6, 3, 0.5, True)
    assert [(s["service"], s["side"], sum(s["byReason"].values())) for s in api["services"]] == [
        ("accounting-service", "consume", 3)
    ]


def test_a_version_no_service_guards_says_so(contracts_app) -> None:
    client, auth = contracts_app(lambda registry, catalog: None)

    runtime = page_section(client.get(f"/contracts/c/{INVOICE_V2}", headers=auth).text, '<section id="runtime">')

    assert "no service reports runtime evidence for this version" in runtime
    assert "<table" not in runtime

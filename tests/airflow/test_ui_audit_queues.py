"""The contract page lists the queues the latest retirement audit considered: how each was found, what it held."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.airflow

REPO = Path(__file__).resolve().parents[2]
V1 = "billing.invoice-issued.v1"

FIGURES = {
    "verdict": "fail",
    "failed_checks": ["queues", "dead_letters"],
    "checks": {
        "queues": {
            "figures": {
                "queues": [
                    {
                        "queue": "ledger-svc.invoices",
                        "vhost": "/",
                        "role": "foreign",
                        "foundBy": ["binding"],
                        "why": ["routed billing.events -> ledger-svc.invoices with key billing.invoice.issued.v1"],
                        "exists": True,
                        "ready": 0,
                        "unacked": 0,
                        "consumers": 1,
                        "readers": [{"clientName": "ledger-reader", "peerHost": "10.1.2.3", "user": "ledger"}],
                    }
                ]
            }
        },
        "dead_letters": {
            "figures": {
                "queues": [
                    {
                        "queue": "ledger-svc.graveyard",
                        "vhost": "/",
                        "foundBy": ["DLX topology"],
                        "why": ["dead letters of ledger-svc.in go ledger-svc.dlx -> ledger-svc.graveyard"],
                        "depth": 2,
                        "inspected": 2,
                        "matching": 2,
                    },
                    {  # a name another client chose: a terminal's escape, a bidi override, a line break
                        "queue": "evil\x1b[2J\u202e.dlq",
                        "vhost": "/",
                        "foundBy": ["name convention"],
                        "why": ["its name ends in .dlq"],
                        "depth": 1,
                        "inspected": 0,
                        "skipped": "exclusive to reader\nforged from 10.1.2.3: only that connection may read it",
                    },
                ]
            }
        },
    },
}


@pytest.fixture
def client(contracts_app: Any) -> tuple[Any, dict[str, str]]:
    def seed(registry: Any, catalog: Any) -> None:
        registry.add_evidence(V1, contract_version="1.2.0", kind="retirement_audit", verdict="fail", figures=FIGURES)

    return contracts_app(seed, statuses={V1: "proposed"})  # type: ignore[no-any-return]


def test_the_contract_page_shows_each_considered_queue_how_it_was_found_and_what_it_held(client) -> None:
    test_client, auth = client
    page = test_client.get(f"/contracts/c/{V1}", headers=auth)
    assert page.status_code == 200, page.text
    section = page.text.split('id="audit-queues"', 1)[1]
    assert "<code>ledger-svc.invoices</code>" in section and "ledger-reader from 10.1.2.3 (ledger)" in section
    assert "<code>ledger-svc.graveyard</code>" in section and "DLX topology" in section
    assert "routed billing.events -&gt; ledger-svc.invoices" in section
    assert "<code>evil\\x1b[2J\\u202e.dlq</code>" in section and "exclusive to reader\\nforged from" in section
    assert not any(c in page.text for c in "\x1b\u202e")

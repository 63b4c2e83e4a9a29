"""The Contracts page and its API show each version's latest replay: decision, figures, pointers, in-flight queues,
and the contract_change run that recorded it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.support.pages import page_section
from tests.support.replay import add_replay

pytestmark = pytest.mark.airflow

REPO = Path(__file__).resolve().parents[2]
ORDER_V1 = "order.order-created.v1"
RUN = "manual__2026-11-20T10:00:00+00:00"
T0 = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)

REFUSED = {
    "window_days": 7,
    "since": "2026-11-13T10:00:00Z",
    "until": "2026-11-20T10:00:00Z",
    "min_messages": 1,
    "threshold": 0,
    "replayed": 2000,
    "rejected": 60,
    "rejection_rate": 0.03,
    "already_invalid": 4,
    "top_pointers": [{"pointer": "/payload/orderId", "keyword": "pattern", "count": 60}],
    "sample_message_ids": ["m-1", "m-2"],
    "in_flight": {
        "inspected": 5,
        "rejected": 2,
        "queues": [
            {
                "queue": "billing-service.order.order-created.v1",
                "vhost": "/",
                "inspected": 5,
                "rejected": 2,
                "skipped": None,
            },
            {
                "queue": "fulfillment-service.order.order-created.v1.dlq",
                "vhost": "/",
                "inspected": 0,
                "rejected": 0,
                "skipped": "not read: quorum queue on RabbitMQ 4.1.0",
            },
        ],
    },
    "static_verdict": "compatible",
    "decision": "refused",
    "reasons": ["2 of 5 messages in billing-service.order.order-created.v1 violate /payload/orderId (pattern)"],
}
UNKNOWN = REFUSED | {
    "replayed": 3,
    "rejected": 0,
    "rejection_rate": 0.0,
    "min_messages": 10000,
    "top_pointers": [],
    "in_flight": {
        "inspected": None,
        "rejected": None,
        "queues": [],
        "note": "in-flight messages not checked: no broker",
    },
    "static_verdict": "breaking",
    "decision": "unknown",
    "reasons": ["replay: no evidence (3 of 10000 messages)"],
}


@pytest.fixture
def client(contracts_app: Any) -> tuple[Any, dict[str, str]]:
    def seed(registry: Any, catalog: Any) -> None:
        for version, verdict, figures, at in (
            ("1.3.0", "pass", REFUSED | {"decision": "confirmed", "rejected": 0}, T0 - timedelta(days=1)),
            ("1.3.0", "fail", REFUSED, T0),
            ("2.0.0-rc", "unknown", UNKNOWN, T0 + timedelta(minutes=5)),
        ):
            add_replay(registry, version, verdict, figures, at, RUN)

    return contracts_app(seed, family="order/order-created", statuses={ORDER_V1: "proposed"})  # type: ignore[no-any-return]


def test_the_api_gives_the_latest_replay_of_each_version_linked_to_its_run(client) -> None:
    test_client, auth = client
    response = test_client.get(f"/contracts/api/contracts/{ORDER_V1}", headers=auth)

    assert response.status_code == 200, response.text
    replays = {r["version"]: r for r in response.json()["replay"]}
    assert set(replays) == {"1.3.0", "2.0.0-rc"}
    refused = replays["1.3.0"]
    assert (refused["decision"], refused["verdict"], refused["rejected"], refused["rejectionRate"]) == (
        "refused",
        "fail",
        60,
        0.03,
    )
    assert refused["topPointers"] == [{"pointer": "/payload/orderId", "keyword": "pattern", "count": 60}]
    assert refused["inFlightChecked"] and refused["inFlightRejected"] == 2
    assert [q["queue"] for q in refused["inFlightQueues"]] == [
        "billing-service.order.order-created.v1",
        "fulfillment-service.order.order-created.v1.dlq",
    ]
    assert refused["runUrl"].endswith(f"/dags/contract_change/runs/{RUN.replace(':', '%3A').replace('+', '%2B')}")
    unknown = replays["2.0.0-rc"]
    assert (unknown["decision"], unknown["inFlightChecked"], unknown["minMessages"]) == ("unknown", False, 10000)
    assert unknown["inFlightNote"] == "in-flight messages not checked: no broker"


def test_the_contract_page_shows_decision_pointer_and_in_flight_queues(client) -> None:
    test_client, auth = client
    page = test_client.get(f"/contracts/c/{ORDER_V1}", headers=auth)

    assert page.status_code == 200, page.text
    section = page_section(page.text, 'id="replay"')
    assert "refused" in section and "accepted-on-evidence" not in section
    assert "<code>/payload/orderId</code> pattern: 60" in section
    assert "<code>billing-service.order.order-created.v1</code>: 5 inspected, 2 rejected" in section
    assert "quorum queue on RabbitMQ 4.1.0" in section
    assert "/dags/contract_change/runs/" in section  # the decision links to the run that made it
    assert "not checked" in section  # the candidate replayed without a broker says so


def test_the_run_page_claims_replay_evidence_for_contract_change(client) -> None:
    test_client, auth = client
    response = test_client.get(f"/contracts/api/runs/contract_change/{RUN}", headers=auth)

    assert response.status_code == 200, response.text
    touched = {c["messageType"]: c for c in response.json()["contracts"]}
    assert "replay fail" in touched[ORDER_V1]["evidence"]

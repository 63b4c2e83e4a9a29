"""Names broker clients choose reach the Contracts page escaped: a bidi override or a terminal escape in a queue
or vhost name, or in a reason quoting one, shows as ``\\u202e``/``\\x1b``, never as the character itself."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.airflow

ORDER_V1 = "order.order-created.v1"
HOSTILE = "poller\u202elanoitan\x1b[2J"
ESCAPED = "poller\\u202elanoitan\\x1b[2J"
REPLAY = {
    "window_days": 7,
    "min_messages": 1,
    "replayed": 20,
    "rejected": 0,
    "rejection_rate": 0.0,
    "top_pointers": [],
    "sample_message_ids": [],
    "in_flight": {
        "inspected": 3,
        "rejected": 1,
        "queues": [
            {"queue": f"{HOSTILE}.q", "vhost": f"{HOSTILE}-vh", "inspected": 3, "rejected": 1, "skipped": None},
            {"queue": "other.q", "vhost": "/", "inspected": 0, "rejected": 0, "skipped": f"held by {HOSTILE}"},
        ],
    },
    "static_verdict": "compatible",
    "decision": "refused",
    "reasons": [f"1 of 3 messages in {HOSTILE}.q violate /payload/orderId (pattern)"],
}


@pytest.fixture
def client(contracts_app: Any) -> tuple[Any, dict[str, str]]:
    def seed(registry: Any, catalog: Any) -> None:
        registry.add_evidence(ORDER_V1, contract_version="1.3.0", kind="replay", verdict="fail", figures=REPLAY)

    return contracts_app(seed, family="order/order-created", statuses={ORDER_V1: "proposed"})  # type: ignore[no-any-return]


def test_queue_names_and_reasons_clients_chose_are_shown_escaped_on_the_contract_page(client: Any) -> None:
    test_client, auth = client
    page = test_client.get(f"/contracts/c/{ORDER_V1}", headers=auth)
    assert page.status_code == 200, page.text
    assert f"<code>{ESCAPED}.q</code> (vhost {ESCAPED}-vh): 3 inspected, 1 rejected" in page.text
    assert f'<span class="muted">held by {ESCAPED}</span>' in page.text
    assert f"<li>1 of 3 messages in {ESCAPED}.q violate /payload/orderId (pattern)</li>" in page.text
    assert not any(c in page.text for c in "\x1b\u202e")

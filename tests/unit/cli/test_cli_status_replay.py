"""contractctl status shows replay evidence per candidate version: decision, figures, pointers, in-flight queues."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.support.replay import add_replay

from contract_platform.catalog.model import Status
from contract_platform.cli.main import main
from contract_platform.errors import printable
from contract_platform.store import SqlRegistry

ORDER_V1 = "order.order-created.v1"
T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def replay_figures(decision: str, replayed: int, rejected: int, **more: Any) -> dict[str, Any]:
    """Figures shaped as docs/replay.md describes them."""
    return {
        "window_days": 7,
        "since": "2026-11-13T09:00:00Z",
        "until": "2026-11-20T09:00:00Z",
        "min_messages": 1,
        "threshold": 0,
        "replayed": replayed,
        "rejected": rejected,
        "rejection_rate": rejected / replayed if replayed else None,
        "already_invalid": 2,
        "top_pointers": [],
        "sample_message_ids": [],
        "in_flight": {
            "inspected": None,
            "rejected": None,
            "queues": [],
            "note": "in-flight messages not checked: no broker connection",
        },
        "static_verdict": "compatible",
        "decision": decision,
        "reasons": [],
    } | more


@pytest.fixture()
def recorded(registry_url: str) -> None:
    registry = SqlRegistry.open(registry_url)
    try:
        add_replay(registry, "1.3.0", "pass", replay_figures("confirmed", 1000, 0), T0, "manual__old")
        refused = replay_figures(
            "refused",
            1000,
            30,
            top_pointers=[{"pointer": "/payload/orderId", "keyword": "pattern", "count": 30}],
            sample_message_ids=["m-17", "m-42"],
            in_flight={
                "inspected": 12,
                "rejected": 3,
                "queues": [
                    {
                        "queue": "billing-service.order.order-created.v1.dlq",
                        "vhost": "/",
                        "inspected": 12,
                        "rejected": 3,
                        "skipped": None,
                    },
                    {
                        "queue": "fulfillment-service.order.order-created.v1",
                        "vhost": "/",
                        "inspected": 0,
                        "rejected": 0,
                        "skipped": "quorum queue on RabbitMQ 4.1.0: the default delivery limit",
                    },
                ],
            },
            reasons=["replay rejects 30 of 1000 archived messages (3.00%) at /payload/orderId (pattern)"],
        )
        add_replay(registry, "1.3.0", "fail", refused, T0 + timedelta(hours=1), "manual__new")
        accepted = replay_figures("accepted-on-evidence", 12000, 0, static_verdict="breaking", min_messages=10000)
        add_replay(registry, "1.4.0", "pass", accepted, T0 + timedelta(hours=2), "manual__accept")
    finally:
        registry.close()


def test_status_json_shows_the_latest_replay_of_each_version(capsys, catalog_dir, recorded) -> None:
    code = main(["status", ORDER_V1, "--catalog", str(catalog_dir), "--format", "json"])
    detail = json.loads(capsys.readouterr().out)

    assert code == 0
    replays = {r["version"]: r for r in detail["replay"]}
    assert [r["version"] for r in detail["replay"]] == ["1.4.0", "1.3.0"]  # newest first, one per version
    refused = replays["1.3.0"]
    assert (refused["decision"], refused["verdict"], refused["runId"]) == ("refused", "fail", "manual__new")
    assert (refused["replayed"], refused["rejected"], refused["rejectionRate"]) == (1000, 30, 0.03)
    assert refused["topPointers"] == [{"pointer": "/payload/orderId", "keyword": "pattern", "count": 30}]
    assert refused["inFlight"]["rejected"] == 3
    queues = {q["queue"]: q for q in refused["inFlight"]["queues"]}
    assert queues["billing-service.order.order-created.v1.dlq"]["rejected"] == 3
    assert "delivery limit" in queues["fulfillment-service.order.order-created.v1"]["skipped"]
    accepted = replays["1.4.0"]
    assert (accepted["decision"], accepted["staticVerdict"], accepted["minMessages"]) == (
        "accepted-on-evidence",
        "breaking",
        10000,
    )
    assert accepted["inFlight"] == {
        "inspected": None,
        "rejected": None,
        "queues": [],
        "note": "in-flight messages not checked: no broker connection",
    }
    assert detail["evidence"]["replay"]["verdict"] == "pass"  # the latest of the kind, as for every kind


def test_status_text_names_the_decision_and_pointer(capsys, catalog_dir, recorded) -> None:
    code = main(["status", ORDER_V1, "--catalog", str(catalog_dir)])

    assert code == 0
    shown = capsys.readouterr().out
    assert "refused" in shown and "/payload/orderId [pattern]: 30" in shown
    assert "in-flight messages not checked: no broker connection" in shown  # 1.4.0 had no broker


def test_status_without_replay_evidence_has_an_empty_replay_list(capsys, catalog_dir, registry_url) -> None:
    code = main(["status", ORDER_V1, "--catalog", str(catalog_dir), "--format", "json"])

    assert code == 0 and json.loads(capsys.readouterr().out)["replay"] == []


def test_status_text_shows_a_refusal_that_names_a_reader_escaped(capsys, catalog_dir, registry_url) -> None:
    """A retirement refused on the audit's blockers quotes the reader's connection name, which a client chose."""
    reader = "month-end\x1b[2J\x00\u202eretlop\udcff\n  - queues: pass"
    with SqlRegistry.open(registry_url) as registry:
        registry.record_refusal(
            ORDER_V1, from_status=Status.DEPRECATED, to_status=Status.RETIRED, reasons=[f"readers: {reader}"], actor="a"
        )
    code = main(["status", ORDER_V1, "--catalog", str(catalog_dir)])

    shown = capsys.readouterr().out
    assert code == 0 and f"    - readers: {printable(reader)}\n" in shown
    assert not any(char in shown for char in "\x1b\x00\u202e\udcff") and "\n  - queues: pass" not in shown

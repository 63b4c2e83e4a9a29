"""The bridge against the real broker: what arrives on v2, what is parked, and what is never acknowledged."""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pika
import pytest
from tests.integration.bridge.bridge_support import (
    TARGET,
    Lane,
    publish,
    publish_raw,
    read_all,
    ready,
    v1_envelopes,
    v1_fixtures,
    v2_fixtures,
    wait_for,
)
from tests.support.waiting import wait_until

from contract_platform.bridge import Bridge, BridgeConfig, BridgeReport, exit_code
from contract_platform.bridge.translation import MigrationRoute, ParkReason
from contract_platform.catalog.model import Transport
from contract_platform.errors import PublishRefused

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def run(lane: Lane, route: MigrationRoute | None = None, **options: Any) -> BridgeReport:
    config = BridgeConfig(url=lane.url, tap_queue=lane.tap, **({"idle_timeout": 1.0} | options))
    return Bridge(lane.catalog, route or lane.route, config).run()


def ids(messages: list[tuple[object, bytes]]) -> list[str]:
    return [json.loads(body)["metadata"]["messageId"] for _, body in messages]


@pytest.mark.parametrize("offload", [True, False], ids=["offload", "in-process"])
def test_the_v1_fixtures_arrive_on_v2_as_the_v2_fixtures(lane: Lane, offload: bool) -> None:
    publish(lane, v1_fixtures())

    report = run(lane, offload=offload)

    assert (report.published, report.parked_total, report.stopped_by) == (3, 0, "idle")
    arrived = {json.loads(body)["metadata"]["messageId"]: (props, json.loads(body)) for props, body in read_all(
        lane.url, lane.v2_queue
    )}  # fmt: skip
    expected = {fixture["metadata"]["messageId"]: fixture for fixture in v2_fixtures()}
    assert arrived.keys() == expected.keys()
    for message_id, (properties, envelope) in arrived.items():
        fixture = expected[message_id]
        for key in ("messageId", "correlationId", "causationId"):
            assert envelope["metadata"][key] == fixture["metadata"][key]
        assert envelope == fixture
        assert (properties.message_id, properties.correlation_id, properties.type) == (
            message_id,
            fixture["metadata"]["correlationId"],
            TARGET,
        )
        assert properties.headers["schema-version"] == 2
        assert properties.delivery_mode == 2
    assert ready(lane.url, lane.tap) == 0
    assert ready(lane.url, lane.parking_lot) == 0


def test_an_unmigratable_message_is_parked_with_its_reason_and_not_lost(lane: Lane) -> None:
    good = v1_envelopes(2)
    bad = v1_envelopes(1)[0]
    bad["payload"]["amount"], bad["payload"]["currency"] = "129.955", "EUR"  # three decimals, EUR has two
    publish(lane, [good[0], bad, good[1]])
    garbage = pika.BasicProperties(message_id="not-json-1", headers={"origin": "test"}, delivery_mode=2)
    publish_raw(lane, b"\xff not json", garbage)

    report = run(lane)

    assert report.published == 2
    assert report.parked == {ParkReason.NOT_JSON: 1, ParkReason.NOT_MIGRATABLE: 1}
    assert exit_code(report) == 1
    parked = {props.message_id: (props, body) for props, body in read_all(lane.url, lane.parking_lot)}
    properties, body = parked[bad["metadata"]["messageId"]]
    assert json.loads(body) == bad  # the original message, untouched
    assert properties.headers["x-park-reason"] == "not-migratable"
    assert properties.headers["x-park-pointer"] == "/payload/amount"
    assert properties.headers["x-park-source-type"] == "billing.invoice-issued.v1"
    assert properties.headers["x-park-target-type"] == TARGET
    assert "decimal places" in properties.headers["x-park-detail"]
    parks = {name: value for name, value in properties.headers.items() if name.startswith("x-park-")}
    assert [name for name, value in parks.items() if "129.955" in str(value)] == []  # never a payload value
    assert properties.headers["schema-version"] == 1  # original properties kept
    assert (properties.correlation_id, properties.type) == (
        bad["metadata"]["correlationId"],
        bad["metadata"]["messageType"],
    )
    properties, body = parked["not-json-1"]
    assert body == b"\xff not json"
    assert (properties.headers["x-park-reason"], properties.headers["origin"]) == ("not-json", "test")
    assert sorted(ids(read_all(lane.url, lane.v2_queue))) == sorted(e["metadata"]["messageId"] for e in good)
    assert ready(lane.url, lane.tap) == 0


@pytest.mark.parametrize("offload", [True, False], ids=["offload", "in-process"])
def test_without_a_v2_queue_nothing_is_acknowledged_and_the_bridge_stops(lane_without_v2: Lane, offload: bool) -> None:
    lane = lane_without_v2
    publish(lane, v1_envelopes(50))

    with pytest.raises(PublishRefused, match="no queue is bound .* the target topology is missing"):
        run(lane, offload=offload)

    assert wait_for(lane.url, lane.tap, 50) == 50  # every v1 message is back in the tap queue
    assert ready(lane.url, lane.parking_lot) == 0


def test_a_missing_v2_exchange_is_refused_before_anything_is_consumed(lane: Lane) -> None:
    publish(lane, v1_envelopes(5))
    transport = Transport(exchange=f"{lane.prefix}nowhere", routing_key=lane.route.target.transport.routing_key)
    route = dataclasses.replace(lane.route, target=dataclasses.replace(lane.route.target, transport=transport))

    with pytest.raises(PublishRefused, match="nowhere of billing.invoice-issued.v2 does not exist"):
        run(lane, route)

    assert ready(lane.url, lane.tap) == 5


def test_max_messages_checkpoints_and_the_next_run_carries_on(lane: Lane) -> None:
    envelopes = v1_envelopes(200)
    publish(lane, envelopes)

    first = run(lane, max_messages=50)
    assert (first.consumed, first.published, first.stopped_by) == (50, 50, "max-messages")
    assert wait_for(lane.url, lane.tap, 150) == 150
    second = run(lane)

    assert second.published == 150
    arrived = ids(read_all(lane.url, lane.v2_queue))
    assert sorted(arrived) == sorted(e["metadata"]["messageId"] for e in envelopes)  # each exactly once


def test_sigterm_mid_run_loses_nothing_and_leaves_no_partial_state(lane: Lane) -> None:
    envelopes = v1_envelopes(20_000)
    publish(lane, envelopes, confirm=False)
    assert wait_for(lane.url, lane.tap, len(envelopes)) == len(envelopes)
    process = subprocess.Popen(
        lane.bridge_command("--follow"),
        env=lane.environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: ready(lane.url, lane.v2_queue) >= 2000, 60, 0.05, what="2000 messages bridged to v2")
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    report = json.loads(stdout)
    assert report["stoppedBy"] == "requested", stderr

    on_v2 = ids(read_all(lane.url, lane.v2_queue))
    still_on_v1 = ids(read_all(lane.url, lane.tap))
    assert 0 < len(on_v2) < len(envelopes)
    assert len(on_v2) == len(set(on_v2)) == report["published"], (report, stderr)  # nothing published twice
    # Nothing both published and left unacknowledged, except what the broker itself dropped: a quorum queue
    # can ignore acknowledgements that arrive right before their channel closes (rabbitmq/rabbitmq-server#10327),
    # so the last acknowledgements of the run may come back. Those deliveries were acknowledged (``published``
    # counts them) and their republications carry the same messageId, so consumers drop the second copy. What
    # the bridge controls is held exactly: only its final window of acknowledgements (at most ``prefetch``
    # deliveries) may be affected, never an earlier one.
    both = set(on_v2) & set(still_on_v1)
    tail = set(on_v2[-BridgeConfig().prefetch :])
    assert both <= tail, (len(both), len(on_v2), report, stderr)
    assert set(on_v2) | set(still_on_v1) == {e["metadata"]["messageId"] for e in envelopes}  # nothing lost


def test_the_module_entry_drains_and_prints_its_report(lane: Lane) -> None:
    envelopes = v1_envelopes(10)
    publish(lane, envelopes)
    process = subprocess.run(
        lane.bridge_command("--idle-timeout", "1"), env=lane.environment(), capture_output=True, text=True, timeout=60
    )
    assert process.returncode == 0, process.stderr
    report = json.loads(process.stdout)
    assert (report["published"], report["parkedTotal"], report["stoppedBy"]) == (10, 0, "idle")
    assert report["tapQueue"] == lane.tap and report["parkingLot"] == f"{lane.tap}.parking-lot"
    assert uuid.UUID(ids(read_all(lane.url, lane.v2_queue))[0])


def test_contractctl_bridge_exits_1_when_it_parked_a_message_and_0_when_not(lane: Lane) -> None:
    contractctl = str(Path(sys.executable).parent / "contractctl")
    command = [contractctl, "bridge", TARGET, "--catalog", str(lane.catalog_dir), "--tap-queue", lane.tap]
    command += ["--idle-timeout", "1", "--format", "json"]
    good, bad = v1_envelopes(2)
    bad["payload"]["amount"] = "1.23456"
    publish(lane, [good, bad])

    parked = subprocess.run(command, env=lane.environment(), capture_output=True, text=True, timeout=60)
    publish(lane, v1_envelopes(3))
    clean = subprocess.run(command, env=lane.environment(), capture_output=True, text=True, timeout=60)

    assert parked.returncode == 1, parked.stderr
    assert (json.loads(parked.stdout)["published"], json.loads(parked.stdout)["parked"]) == (1, {"not-migratable": 1})
    assert clean.returncode == 0, clean.stderr
    assert json.loads(clean.stdout)["published"] == 3

"""Dead letters older than retention.dlq removed from a version's DLQs and parking lots on the real broker, each
test in a virtual host of its own: the old ones go, with evidence naming their ids; the young ones, and the ones
whose age nothing tells, stay in their order; a dry run changes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pika
import pytest
from tests.support import broker
from tests.support.cli import run_cli
from tests.support.contracts import V1, V2, build_contract
from tests.support.vhosts import connection, vhost

from contract_platform.amqp import ManagementClient, plan_topology
from contract_platform.amqp.connection import broker_version
from contract_platform.amqp.peek import peek
from contract_platform.amqp.topology import dlq_name, dlx_name, parking_lot_name, provision
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.evidence import EvidenceKind
from contract_platform.evidence.figures import DeadLetterPurgeFigures
from contract_platform.retention.dead_letters import purge_dead_letters
from contract_platform.store import SqlRegistry

__all__ = ["connection", "vhost"]  # the fixtures of a private vhost (tests.support.vhosts)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

NOW = datetime.now(UTC).replace(microsecond=0)  # retention.dlq of build_contract: 14 days
# (message id, timestamp property, x-death time): in the order they are dead-lettered
DEAD = [
    ("old-stamped", NOW - timedelta(days=20), None),
    ("young-stamped", NOW - timedelta(days=1), None),
    ("old-died", None, NOW - timedelta(days=30)),
    ("ageless", None, None),
    ("young-died", None, NOW - timedelta(days=2)),
    ("old-edge", NOW - timedelta(days=14, minutes=5), None),
]
KEPT = ["young-stamped", "ageless", "young-died"]


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[SqlRegistry]:
    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as store:
        yield store


def _dead_letter(channel: Any, contract: Contract, queue: str, message_id: str, stamp: Any, died: Any) -> None:
    headers: dict[str, Any] | None = {"x-death": [{"time": died, "queue": contract.consumers[0].queue, "reason": "rejected", "count": 1,
                            "exchange": contract.transport.exchange}]} if died else None  # fmt: skip
    properties = pika.BasicProperties(
        message_id=message_id, delivery_mode=2, headers=headers, timestamp=int(stamp.timestamp()) if stamp else None
    )
    channel.basic_publish(dlx_name(contract.transport.exchange), queue, b'{"payload": {"email": "x@y.z"}}', properties)


def _ids(connection: Any, queue: str, queue_type: str) -> list[str]:
    """The message ids in ``queue``, in order, read with the platform's peek (nothing taken)."""
    seen: list[str] = []
    outcome = peek(connection, queue, limit=100, info={"type": queue_type}, version=broker_version(connection),
                   visit=lambda _m, properties, _b: seen.append(properties.message_id))  # fmt: skip
    assert outcome.complete, outcome
    return seen


def _provisioned(connection: Any, vhost: str, queue_type: str, message_type: str) -> tuple[Contract, str, str]:
    contract = build_contract(message_type, consumers=("svc",), queue_type=queue_type)
    provision(connection, plan_topology(contract), management=ManagementClient.from_amqp_url(broker.url_of(vhost)))
    channel = connection.channel()
    channel.confirm_delivery()
    dlq, parking = dlq_name(contract.consumers[0].queue), parking_lot_name(contract.consumers[0].queue)
    for message_id, stamp, died in DEAD:
        _dead_letter(channel, contract, dlq, message_id, stamp, died)
    _dead_letter(channel, contract, parking, "parked-old", NOW - timedelta(days=40), None)
    _dead_letter(channel, contract, parking, "parked-young", NOW - timedelta(hours=1), None)
    channel.close()
    return contract, dlq, parking


@pytest.mark.parametrize(("queue_type", "message_type"), [("classic", V1), ("quorum", V2)])
def test_only_dead_letters_past_the_window_go_and_the_rest_keep_their_order(
    connection: Any, vhost: str, registry: SqlRegistry, queue_type: str, message_type: str
) -> None:
    contract, dlq, parking = _provisioned(connection, vhost, queue_type, message_type)
    management = ManagementClient.from_amqp_url(broker.url_of(vhost))
    everything = [m for m, _s, _d in DEAD]

    dry = purge_dead_letters(
        connection, contract, now=NOW, vhost=vhost, registry=None, management=management, dry_run=True
    )

    by_queue = {q.queue: q for q in dry.queues}
    assert (by_queue[dlq].removed, by_queue[dlq].kept, by_queue[dlq].age_unknown) == (3, 3, 1)
    assert by_queue[dlq].skipped is None and by_queue[parking].removed == 1
    assert _ids(connection, dlq, queue_type) == everything  # nothing taken, nothing moved
    assert _ids(connection, parking, queue_type) == ["parked-old", "parked-young"]
    assert registry.evidence(message_type, EvidenceKind.DEAD_LETTER_PURGE) == []

    run = purge_dead_letters(connection, contract, now=NOW, vhost=vhost, registry=registry, management=management)

    by_queue = {q.queue: q for q in run.queues}
    assert sorted(by_queue[dlq].removed_ids) == ["old-died", "old-edge", "old-stamped"]
    assert by_queue[dlq].delivery_count_raised is (queue_type == "quorum")
    assert _ids(connection, dlq, queue_type) == KEPT
    assert _ids(connection, parking, queue_type) == ["parked-young"]
    recorded = {
        DeadLetterPurgeFigures.of(r).queue: DeadLetterPurgeFigures.of(r)
        for r in registry.evidence(message_type, EvidenceKind.DEAD_LETTER_PURGE)
    }
    assert set(recorded) == {dlq, parking}
    figures = recorded[dlq]
    assert (figures.removed, figures.kept, figures.age_unknown, figures.window, figures.vhost) == (3, 3, 1, "2w", vhost)
    assert sorted(figures.message_ids) == ["old-died", "old-edge", "old-stamped"]
    assert "x@y.z" not in str(figures.to_json())  # ids and counts, never a body

    again = purge_dead_letters(connection, contract, now=NOW, vhost=vhost, registry=registry, management=management)

    assert sum(q.removed for q in again.queues) == 0 and _ids(connection, dlq, queue_type) == KEPT
    assert len(registry.evidence(message_type, EvidenceKind.DEAD_LETTER_PURGE)) == 2  # nothing removed: no record


def test_contractctl_purges_the_queues_of_the_vhost_it_is_given(
    connection: Any, vhost: str, catalog: Catalog, catalog_dir: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    contract = catalog.require("order.order-created.v1")
    provision(connection, plan_topology(contract), management=ManagementClient.from_amqp_url(broker.url_of(vhost)))
    queue_type = contract.topology.queue_type
    dlq = dlq_name(contract.consumers[0].queue)
    channel = connection.channel()
    channel.confirm_delivery()
    for message_id, stamp, died in DEAD[:2]:  # one past retention.dlq, one inside it
        _dead_letter(channel, contract, dlq, message_id, stamp, died)
    channel.close()
    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", broker.url_of("/"))  # the queues are in another vhost
    argv = ("retention", "purge-dead-letters", contract.message_type, "--vhost", vhost, "--catalog", str(catalog_dir),
            "--registry", f"sqlite:///{tmp_path / 'registry.db'}", "--format", "json")  # fmt: skip

    code, out, err = run_cli(capsys, *argv, "--dry-run")
    assert code == 0, err
    assert {q["queue"]: q["removed"] for q in json.loads(out)["queues"]}[dlq] == 1
    assert _ids(connection, dlq, queue_type) == ["old-stamped", "young-stamped"]

    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert {q["queue"]: q["removedIds"] for q in json.loads(out)["queues"]}[dlq] == ["old-stamped"]
    assert _ids(connection, dlq, queue_type) == ["young-stamped"]

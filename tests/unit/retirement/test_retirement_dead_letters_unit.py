"""Dead-letter scan without a broker: type resolution, when requeueing is unsafe, the single nack, verdicts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from tests.support.contracts import V1, V2, migrating_contract

from contract_platform.amqp.topology import plan_topology
from contract_platform.evidence import Verdict
from contract_platform.retirement import (
    DeadLetterScan,
    QueueScan,
    check_dead_letters,
    message_type_of,
    requeue_risk,
    scan_dead_letters,
)


@dataclass
class Props:
    type: str | None = None
    headers: dict[str, Any] | None = None
    message_id: str | None = None


def body(message_type: str | None) -> bytes:
    return json.dumps({"metadata": {"messageType": message_type}, "payload": {}}).encode()


@pytest.mark.parametrize(
    ("properties", "raw", "expected"),
    [
        (Props(type=V1, headers={"message-type": V1}), body(V2), (V2, "body")),  # the envelope wins a conflict
        (Props(type=V1, headers={"message-type": V2}), b"not json", (V1, "property")),
        (Props(headers={"message-type": V1}), body(None), (V1, "header:message-type")),
        (Props(headers={"x-park-source-type": b"billing.invoice-issued.v1"}), b"", (V1, "header:x-park-source-type")),
        (Props(type=""), body(V1), (V1, "body")),
        (Props(), b"\xff not json", (None, None)),
        (Props(), json.dumps([1, 2]).encode(), (None, None)),
    ],
)
def test_message_type_comes_from_body_then_property_then_header(properties: Props, raw: bytes, expected: Any) -> None:
    assert message_type_of(properties, raw) == expected


@pytest.mark.parametrize(
    ("queue_type", "arguments", "policy", "version", "safe"),
    [
        ("classic", {}, {}, (4, 1, 0), True),  # classic queues keep order and have no delivery limit
        ("quorum", {}, {}, (3, 10, 8), True),  # 3.x: no default limit
        ("quorum", {"x-delivery-limit": 5}, {}, (3, 10, 8), False),
        ("quorum", {}, {"delivery-limit": 10}, (3, 10, 8), False),
        ("quorum", {}, {}, (4, 0, 2), False),  # 4.x default limit 20
        ("quorum", {"x-delivery-limit": -1}, {}, (4, 0, 2), True),  # 4.x: negative disables the limit
        ("quorum", {"x-delivery-limit": -1}, {}, (3, 10, 8), False),  # 3.x: negative is not "unlimited"
        ("quorum", {}, {}, None, False),
        ("stream", {}, {}, (3, 10, 8), False),
    ],
)
def test_requeue_risk(
    queue_type: str, arguments: dict[str, Any], policy: dict[str, Any], version: Any, safe: bool
) -> None:
    assert (requeue_risk(queue_type, arguments, policy, version) is None) is safe


# -- the read-and-requeue protocol against a fake channel -------------------------------------------


@dataclass
class Method:
    delivery_tag: int


@dataclass
class FakeChannel:
    messages: list[tuple[Props, bytes]]
    calls: list[tuple[str, Any]] = field(default_factory=list)
    is_open: bool = True
    taken: int = 0
    channel_number: int = 1  # as a BlockingChannel has: the probe's log filter keys on it

    def basic_get(self, queue: str, auto_ack: bool = False) -> Any:
        self.calls.append(("get", auto_ack))
        if self.taken >= len(self.messages):
            return None, None, None
        properties, raw = self.messages[self.taken]
        self.taken += 1
        return Method(self.taken), properties, raw

    def basic_nack(self, delivery_tag: int, multiple: bool = False, requeue: bool = True) -> None:
        self.calls.append(("nack", (delivery_tag, multiple, requeue)))

    def close(self) -> None:
        self.calls.append(("close", None))
        self.is_open = False

    def queue_declare(self, name: str, passive: bool = False) -> Any:
        @dataclass
        class Ok:
            message_count: int
            consumer_count: int = 0

        @dataclass
        class Frame:
            method: Ok

        return Frame(Ok(len(self.messages)))


@dataclass
class FakeImpl:
    server_properties: dict[str, Any] = field(default_factory=lambda: {"version": b"3.10.8"})
    params: Any = None


@dataclass
class FakeConnection:
    channels: list[FakeChannel]
    _impl: FakeImpl = field(default_factory=FakeImpl)

    def channel(self) -> FakeChannel:
        return self.channels.pop(0)


def test_the_scan_reads_up_to_the_depth_and_requeues_everything_with_one_nack() -> None:
    contract = migrating_contract(V1)
    messages = [
        (Props(type=V1, message_id="a"), b""),
        (Props(type=V2, message_id="b"), b""),
        (Props(message_id="c"), body(V1)),
        (Props(type="order.order-created.v1", message_id="d"), b""),
        (Props(message_id="e"), b"?"),
    ]
    reader = FakeChannel(messages + [(Props(type=V1, message_id="late"), b"")])
    depth = FakeChannel(messages)  # the passive declare sees 5: the 6th arrived after we looked
    plan = plan_topology(contract)
    dlq = plan.queues[0].name
    returned = FakeChannel(messages)  # a quorum queue: the peek looks once more, until the five are ready again
    connection = FakeConnection([depth, reader, returned])

    scan = scan_dead_letters(connection, contract, plan, snapshot=None, scope=dlq)

    [queue] = scan.queues
    assert (queue.depth, queue.inspected, queue.matching, queue.untyped) == (5, 5, 2, 1)
    assert queue.matching_ids == ["a", "c"] and queue.family == {V2: 1}
    assert [name for name, _ in reader.calls] == ["get"] * 5 + ["nack", "close"]
    assert ("get", True) not in reader.calls  # never auto-ack
    assert reader.calls[5] == ("nack", (5, True, True))  # one nack: multiple, requeue, of the last tag
    assert queue.delivery_count_raised  # the plan's DLQs are quorum queues
    assert connection.channels == [] and returned.calls == [("close", None)]


def test_verdicts_fail_on_a_message_of_the_type_and_are_unknown_when_not_everything_was_read() -> None:
    contract = migrating_contract(V1)
    clean = QueueScan("a.dlq", depth=3, inspected=3, family={V2: 3})
    holding = QueueScan("b.parking-lot", depth=2, inspected=2, matching=1, matching_ids=["m-1"])
    skipped = QueueScan("c.dlq", depth=4, skipped="quorum queue with a delivery limit of 5: ...")
    partial = QueueScan("d.dlq", depth=20_000, inspected=10_000)
    held = QueueScan("e.dlq", depth=0, unacked=2)

    assert check_dead_letters(contract, DeadLetterScan("broker", (clean,))).verdict is Verdict.PASS
    failed = check_dead_letters(contract, DeadLetterScan("broker", (clean, holding, skipped)))
    assert (
        failed.verdict is Verdict.FAIL and "m-1" in (failed.blocker or "") and "b.parking-lot" in (failed.blocker or "")
    )
    for unread in (skipped, partial, held):
        result = check_dead_letters(contract, DeadLetterScan("broker", (clean, unread)))
        assert result.verdict is Verdict.UNKNOWN and unread.queue in (result.blocker or "")
    own_only = check_dead_letters(contract, DeadLetterScan("version", (clean,)))
    assert own_only.verdict is Verdict.UNKNOWN and "management API" in (own_only.blocker or "")
    vanished = QueueScan("f.dlq", vanished=True)
    assert check_dead_letters(contract, DeadLetterScan("broker", (vanished,))).verdict is Verdict.PASS


class ListingOnly:
    """A management API that lists queue names only (what the listing branch asks of it)."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    def queue_names(self, prefix: str = "") -> list[str]:
        return [name for name in self.names if name.startswith(prefix)]

    def queue(self, _name: str) -> None:
        return None


def test_the_listing_takes_dead_letter_queues_by_the_configured_naming_net(monkeypatch) -> None:
    from contract_platform.retirement.dead_letters import _dead_letter_queues

    plan = plan_topology(migrating_contract(V1))
    listing = ListingOnly(["orders.dlq", "orders.failed", "orders.work"])
    assert _dead_letter_queues(plan, listing, "")[1] == ["orders.dlq"]  # type: ignore[arg-type]

    monkeypatch.setenv("CONTRACT_DEAD_LETTER_SUFFIXES", ".failed")

    assert _dead_letter_queues(plan, listing, "") == ("broker", ["orders.failed"], {})  # type: ignore[arg-type]

"""DUPLICATE, CONFLICTING_DUPLICATE and OUT_OF_ORDER on hand-built records (the plain-Python reference)."""

from __future__ import annotations

import json
from typing import Any

from contract_platform.validation import Keyed, Reason, RecordChecker, sequence_findings

PATHS = {"order.order-created.v1": "/payload/aggregateVersion"}


def keyed(checker: RecordChecker, records: list[dict[str, Any]]) -> list[Keyed]:
    found = []
    for index, record in enumerate(records):
        c = checker.check(json.dumps(record))
        found.append(
            Keyed(
                index,
                c.message_type,
                c.message_id,
                c.payload_hash,
                c.received_at,
                c.received_us,
                c.order_key,
                c.sequence,
            )
        )
    return found


def at(second: int) -> str:
    return f"2026-07-01T10:00:{second:02d}.000Z"


def order(envelope, key: str, sequence: int, message_id: str) -> dict[str, Any]:
    env = envelope("order.order-created.v1")
    env["metadata"].update(partitionKey=key, messageId=message_id)
    env["payload"]["aggregateVersion"] = sequence
    return env


def test_a_redelivered_copy_is_a_duplicate_and_a_changed_payload_conflicts(checker, envelope, record):
    env = envelope("quote.quote-approved.v1")
    changed = json.loads(json.dumps(env))
    changed["payload"]["quoteRevision"] += 1
    records = [
        record(env, receivedAt=at(1)),
        record(env, receivedAt=at(2), redelivered=True),
        record(changed, receivedAt=at(3)),
    ]
    found = sequence_findings(keyed(checker, records), PATHS)
    assert sorted(found) == [1, 2]
    assert (found[1].code, found[1].path) == (Reason.DUPLICATE, "/metadata/messageId")
    assert (found[2].code, found[2].path) == (Reason.CONFLICTING_DUPLICATE, "/payload")
    assert at(1) in found[2].message


def test_first_seen_is_by_received_at_not_by_archive_order(checker, envelope, record):
    env = envelope("quote.quote-approved.v1")
    records = [record(env, receivedAt=at(9), redelivered=True), record(env, receivedAt=at(1))]
    assert list(sequence_findings(keyed(checker, records), PATHS)) == [0]


def test_same_message_id_of_another_type_is_no_duplicate(checker, envelope, record):
    v1, v2 = envelope("billing.invoice-issued.v1"), envelope("billing.invoice-issued.v2")
    assert v1["metadata"]["messageId"] == v2["metadata"]["messageId"]  # a migrated message keeps its id
    assert sequence_findings(keyed(checker, [record(v1), record(v2)]), PATHS) == {}


def test_out_of_order_is_lower_than_the_highest_before_per_key(checker, envelope, record):
    records = [
        record(order(envelope, "ord-1", 1, "m1"), receivedAt=at(1)),
        record(order(envelope, "ord-1", 3, "m2"), receivedAt=at(2)),
        record(order(envelope, "ord-2", 1, "m3"), receivedAt=at(3)),  # another key: fine
        record(order(envelope, "ord-1", 2, "m4"), receivedAt=at(4)),  # lower than 3: out of order
        record(order(envelope, "ord-1", 3, "m5"), receivedAt=at(5)),  # equal to the highest: fine
        record(order(envelope, "ord-1", 4, "m6"), receivedAt=at(6)),
    ]
    found = sequence_findings(keyed(checker, records), PATHS)
    assert list(found) == [3]
    assert (found[3].code, found[3].path) == (Reason.OUT_OF_ORDER, "/payload/aggregateVersion")
    assert found[3].message == "sequence 2 is lower than 3, already received for key ord-1"


def test_duplicates_are_left_out_of_the_ordering(checker, envelope, record):
    first = order(envelope, "ord-1", 5, "m1")
    conflicting = order(envelope, "ord-1", 9, "m1")  # same messageId, other content: not counted
    records = [
        record(order(envelope, "ord-1", 1, "m0"), receivedAt=at(1)),
        record(first, receivedAt=at(2)),
        record(first, receivedAt=at(3), redelivered=True),  # a redelivery of 5 after 5: no finding of order
        record(conflicting, receivedAt=at(4)),
        record(order(envelope, "ord-1", 6, "m2"), receivedAt=at(5)),  # 9 did not count: in order
    ]
    found = sequence_findings(keyed(checker, records), PATHS)
    assert {i: f.code for i, f in found.items()} == {2: Reason.DUPLICATE, 3: Reason.CONFLICTING_DUPLICATE}

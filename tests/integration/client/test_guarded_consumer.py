"""The guarded consumer on the real broker: invalid and poison messages go to the dead-letter queue with their
reason and the consumer keeps going; a handler's own refusals are kept apart; older majors are read through
migration on read, and a major no migration reads is dead-lettered saying so."""

from __future__ import annotations

import copy
import os
import signal
import threading
import time
import uuid
from typing import Any

import pika
import pytest
from tests.fuzz.hostile import nested_value
from tests.integration.client.sample_service import INVOICE_V2, Invoice, Ledger, consumer
from tests.support.broker import drain, private_vhost, ready, url_of

from contract_platform.amqp import open_connection, plan_topology, provision
from contract_platform.amqp.connection import close_quietly
from contract_platform.amqp.publisher import encode_body
from contract_platform.client import GuardedConsumer, Message, StopReason
from contract_platform.client.testkit import delivery_of
from contract_platform.migration import migrate_envelope, parse_spec
from contract_platform.signals import stop_on_signals

pytestmark = pytest.mark.integration

INVOICE_V1 = "billing.invoice-issued.v1"
EXCHANGE = "billing.events"
Q1, Q2 = "accounting-service.billing.invoice-issued.v1", "accounting-service.billing.invoice-issued.v2"
KEY1, KEY2 = "billing.invoice.issued.v1", "billing.invoice.issued.v2"


def fixtures(bundle, message_type: str) -> list[dict[str, Any]]:
    return [copy.deepcopy(f.document) for f in bundle.fixtures(message_type, valid=True)]


def send(url: str, routing_key: str, deliveries: list[tuple[Any, bytes]]) -> None:
    """Publish as any producer may, guarded or not (a plain pika channel)."""
    connection = open_connection(url)
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        for properties, body in deliveries:
            channel.basic_publish(EXCHANGE, routing_key, body, properties)
    finally:
        close_quietly(connection)


def dead_letters(url: str, queue: str) -> list[tuple[Any, bytes]]:
    connection = open_connection(url)
    try:
        return drain(connection, f"{queue}.dlq")
    finally:
        close_quietly(connection)


def reasons(letters: list[tuple[Any, bytes]]) -> list[str]:
    return [properties.headers["x-reject-reason"] for properties, _ in letters]


def test_an_invalid_message_is_dead_lettered_with_its_reason_and_the_consumer_keeps_going(vhost_url, accounting):
    first, second, third = fixtures(accounting, INVOICE_V2)
    invalid = copy.deepcopy(second)
    invalid["payload"]["currencyExponent"] = 7
    limit = accounting.contract(INVOICE_V2).max_body_bytes
    typed = pika.BasicProperties(type=INVOICE_V2, message_id="poison")
    send(
        vhost_url,
        KEY2,
        [
            delivery_of(first),
            delivery_of(invalid),
            (typed, b"\xff\xfe not UTF-8"),
            (typed, b'{"metadata": {"messageType": '),
            (typed, b"[" * (limit + 10)),
            (typed, encode_body({"metadata": nested_value(600), "payload": {}})),
            (pika.BasicProperties(type="billing.invoice-voided.v1"), b"{}"),
            delivery_of(third),
        ],
    )
    ledger = Ledger()
    service = consumer(accounting, vhost_url, ledger, [Q2])

    stopped = service.run(idle_timeout=1.0)

    letters = dead_letters(vhost_url, Q2)
    assert stopped is StopReason.IDLE
    assert set(ledger.entries) == {first["payload"]["invoiceId"], third["payload"]["invoiceId"]}
    assert reasons(letters) == ["PAYLOAD_INVALID", "MALFORMED", "MALFORMED", "OVERSIZE", "MALFORMED", "UNKNOWN_TYPE"]
    headers = letters[0][0].headers
    assert headers == headers | {
        "x-reject-origin": "contract",
        "x-reject-pointer": "/payload/currencyExponent",
        "x-reject-keyword": "maximum",
        "x-reject-contract": f"{INVOICE_V2}@2.0.0",
        "x-reject-bundle": accounting.checksum,
        "x-reject-service": "accounting-service",
        "x-reject-queue": Q2,
    }
    assert "7" not in headers["x-reject-detail"]  # never a payload value
    assert letters[0][1] == delivery_of(invalid)[1]  # the message as it was sent, untouched
    assert ready(vhost_url, Q2) == 0  # nothing requeued, nothing left behind
    assert service.stats.requeued == 0 and service.stats.delivered == 8


def test_the_handlers_own_refusals_are_kept_apart_from_the_contracts(vhost_url, accounting):
    envelope, credit, flaky = fixtures(accounting, INVOICE_V2)
    credit["payload"]["amountMinorUnits"] = -12995
    calls: dict[str, int] = {}
    ledger = Ledger()

    def handler(message: Message[Any]) -> None:
        calls[message.message_id] = calls.get(message.message_id, 0) + 1
        if message.message_id == flaky["metadata"]["messageId"]:
            raise RuntimeError("the ledger database is down")
        ledger.book(message)

    send(vhost_url, KEY2, [delivery_of(envelope), delivery_of(credit), delivery_of(flaky)])
    service = GuardedConsumer(accounting, vhost_url, queues=[Q2]).on(INVOICE_V2, handler, decode=Invoice.from_envelope)

    service.run(idle_timeout=1.0)

    letters = {properties.message_id: properties.headers for properties, _ in dead_letters(vhost_url, Q2)}
    business = letters[credit["metadata"]["messageId"]]
    failed = letters[flaky["metadata"]["messageId"]]
    assert (business["x-reject-origin"], business["x-reject-reason"], business["x-reject-detail"]) == (
        "handler",
        "BUSINESS_REJECTED",
        "credit notes are booked by hand",
    )
    assert (failed["x-reject-origin"], failed["x-reject-reason"]) == ("handler", "HANDLER_FAILED")
    assert "RuntimeError" in failed["x-reject-detail"] and "database" not in failed["x-reject-detail"]
    assert calls[flaky["metadata"]["messageId"]] == 2  # requeued once, refused on the redelivery
    tally = service.counters.peek()[INVOICE_V2]
    assert (tally.rejected, tally.business_rejected) == (0, 1)  # a business refusal is not a contract violation


def test_a_reader_of_v2_reads_v1_traffic_through_migration_on_read(vhost_url, accounting):
    v1 = fixtures(accounting, INVOICE_V1)
    send(vhost_url, KEY1, [delivery_of(envelope) for envelope in v1])
    ledger = Ledger()
    service = consumer(accounting, vhost_url, ledger, [Q1])

    service.run(idle_timeout=1.0)

    expected = {
        f.document["payload"]["invoiceId"]: f.document["payload"] for f in accounting.fixtures(INVOICE_V2, valid=True)
    }
    assert {invoice_id: (e.amount_minor_units, e.currency_exponent) for invoice_id, e in ledger.entries.items()} == {
        invoice_id: (p["amountMinorUnits"], p["currencyExponent"]) for invoice_id, p in expected.items()
    }
    assert service.counters.peek()[INVOICE_V1].migrated_to == {INVOICE_V2: 3}
    assert dead_letters(vhost_url, Q1) == []


def test_a_reader_of_v1_reads_bridged_v2_messages_through_the_migration_read_backwards(vhost_url, accounting):
    """What the bridge publishes for v1 traffic (migrate_envelope of migration.yaml, the properties mirrored),
    reaching a service still written for v1: the guard reads each back as the v1 message it came from."""
    target = accounting.contract(INVOICE_V2)
    spec = parse_spec(target.migration, "migration.yaml")
    originals = fixtures(accounting, INVOICE_V1)
    bridged = [migrate_envelope(spec, envelope, target) for envelope in originals]
    send(vhost_url, KEY2, [delivery_of(envelope) for envelope in bridged])
    read: dict[str, Message] = {}
    service = GuardedConsumer(accounting, vhost_url, queues=[Q2]).on(
        INVOICE_V1, lambda m: read.setdefault(m.message_id, m)
    )

    service.run(idle_timeout=1.0)

    assert {message_id: m.envelope["payload"] for message_id, m in read.items()} == {
        e["metadata"]["messageId"]: e["payload"] for e in originals
    }
    assert {m.message_type for m in read.values()} == {INVOICE_V1}
    assert service.counters.peek()[INVOICE_V2].migrated_to == {INVOICE_V1: 3}
    assert dead_letters(vhost_url, Q2) == []


def test_without_a_dead_letter_route_the_broker_dead_letters_the_rejected_message_itself(vhost_url, accounting):
    envelope = fixtures(accounting, INVOICE_V2)[0]
    envelope["payload"]["status"] = "DISPUTED"
    send(vhost_url, KEY2, [delivery_of(envelope)])
    service = GuardedConsumer(accounting, vhost_url, queues=[Q2], dead_letters={Q2: None})
    service.on(INVOICE_V2, lambda m: None)

    service.run(idle_timeout=1.0)

    letters = dead_letters(vhost_url, Q2)
    assert len(letters) == 1 and service.stats.rejected_to_broker == 1
    death = letters[0][0].headers["x-death"][0]
    assert (death["reason"], death["queue"]) == ("rejected", Q2)  # the queue's own x-dead-letter-* arguments
    assert "x-reject-reason" not in letters[0][0].headers


def test_no_reject_header_ever_holds_a_value_of_the_message(vhost_url, accounting):
    """Each refusal is about one value that carries a mark of its own: the dead letter's x-reject-* headers say
    where (the pointer) and which rule, and the mark is in none of them (the original headers keep theirs)."""
    mark = "90817263"
    base = fixtures(accounting, INVOICE_V1)[0]

    def variant(part: str, field: str, value: str) -> dict[str, Any]:
        envelope = copy.deepcopy(base)
        envelope["metadata"]["messageId"] = str(uuid.uuid4())
        envelope[part][field] = value
        return envelope

    not_migratable = variant("payload", "amount", f"{mark}.12345")  # EUR has two decimals: never rounded
    payload_invalid = variant("payload", "billingEmail", f"{mark} is no address")
    envelope_invalid = variant("metadata", "traceId", f"{mark}-not-hex")
    mismatched = variant("payload", "invoiceId", "inv-1")
    properties, body = delivery_of(mismatched)
    properties.headers["tenant-id"] = f"tnt-{mark}"  # metadata.tenantId is another
    send(vhost_url, KEY1, [delivery_of(not_migratable), delivery_of(payload_invalid), delivery_of(envelope_invalid)])
    send(vhost_url, KEY1, [(properties, body)])
    service = consumer(accounting, vhost_url, Ledger(), [Q1])  # reads v2: v1 arrives through migration on read

    service.run(idle_timeout=1.0)

    letters = {properties.message_id: properties.headers for properties, _ in dead_letters(vhost_url, Q1)}
    expected = {
        not_migratable["metadata"]["messageId"]: ("NOT_MIGRATABLE", "/payload/amount"),
        payload_invalid["metadata"]["messageId"]: ("PAYLOAD_INVALID", "/payload/billingEmail"),
        envelope_invalid["metadata"]["messageId"]: ("ENVELOPE_INVALID", "/metadata/traceId"),
        mismatched["metadata"]["messageId"]: ("HEADER_MISMATCH", "/properties/headers/tenant-id"),
    }
    assert {m: (h["x-reject-reason"], h["x-reject-pointer"]) for m, h in letters.items()} == expected
    for headers in letters.values():
        rejects = {name: value for name, value in headers.items() if name.startswith("x-reject-")}
        assert rejects["x-reject-detail"]
        assert [name for name, value in rejects.items() if mark in str(value)] == [], rejects
    assert "decimal places" in letters[not_migratable["metadata"]["messageId"]]["x-reject-detail"]


def test_a_service_provisions_its_dead_letter_queue_from_its_bundle_as_the_guide_shows(accounting):
    """docs/service-client.md#where-the-dead-letter-queue-comes-from, on a broker nothing was declared on."""
    with private_vhost() as vhost:
        url = url_of(vhost)
        connection = open_connection(url)
        try:
            for message_type in accounting.message_types:
                provision(connection, plan_topology(accounting.contract(message_type)))
        finally:
            connection.close()
        envelope = fixtures(accounting, INVOICE_V2)[0]
        envelope["payload"]["status"] = "DISPUTED"  # the enum's policy is reject
        send(url, KEY2, [delivery_of(envelope)])
        service = consumer(accounting, url, Ledger(), [Q2])

        service.run(idle_timeout=1.0)

        letters = dead_letters(url, Q2)
        assert reasons(letters) == ["PAYLOAD_INVALID"] and service.stats.dead_lettered == {"PAYLOAD_INVALID": 1}


def test_max_messages_stops_after_that_many_and_what_came_ahead_goes_back_to_the_queue(vhost_url, accounting):
    envelopes = fixtures(accounting, INVOICE_V2)
    send(vhost_url, KEY2, [delivery_of(envelope) for envelope in envelopes])
    seen: list[tuple[str, bool]] = []
    service = GuardedConsumer(accounting, vhost_url, queues=[Q2]).on(
        INVOICE_V2, lambda m: seen.append((m.message_id, m.redelivered))
    )

    first = service.run(max_messages=2)  # the broker sent all three ahead (prefetch 500)
    left = ready(vhost_url, Q2)
    second = service.run(idle_timeout=1.0)

    assert (first, left, second) == (StopReason.MAX_MESSAGES, 1, StopReason.IDLE)
    assert [redelivered for _, redelivered in seen] == [False, False, True]  # the third came back
    assert sorted(message_id for message_id, _ in seen) == sorted(e["metadata"]["messageId"] for e in envelopes)


def test_a_signal_handler_stops_the_consumer_with_wake_false(vhost_url, accounting):
    """As docs/service-client.md#running-and-stopping shows: the handler only sets a flag the loop reads."""
    send(vhost_url, KEY2, [delivery_of(fixtures(accounting, INVOICE_V2)[0])])
    handled: list[str] = []
    service = GuardedConsumer(accounting, vhost_url, queues=[Q2]).on(INVOICE_V2, lambda m: handled.append(m.message_id))
    interrupt = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))

    with stop_on_signals(lambda: service.request_stop(wake=False)):
        interrupt.start()
        try:
            stopped = service.run(deadline=time.monotonic() + 30)
        finally:
            interrupt.cancel()

    assert stopped is StopReason.REQUESTED and len(handled) == 1
    assert ready(vhost_url, Q2) == 0

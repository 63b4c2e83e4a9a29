"""Replay reads only the queues discovery attributes to the version it replays, on the real broker.

Two contracts share a virtual host, each with its DLQs holding messages, plus DLQs that services declared
for each. Replaying one never reads (nor lists as discovered) the other's dead-letter queues."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pika
import pytest
from tests.support import broker

from contract_platform.amqp import ManagementClient, plan_topology
from contract_platform.amqp.topology import dlq_name, dlx_name, provision
from contract_platform.catalog.model import Catalog, Contract
from contract_platform.replay.inflight import in_flight_records

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

ORDER = "order.order-created.v1"
INVOICE = "billing.invoice-issued.v1"


def classic(catalog: Catalog, message_type: str) -> Contract:
    contract = catalog.contracts[message_type]
    return replace(contract, topology=replace(contract.topology, queue_type="classic"))


def publish(channel: Any, exchange: str, key: str, message_type: str, message_id: str) -> None:
    body = json.dumps({"metadata": {"messageId": message_id, "messageType": message_type}, "payload": {}}).encode()
    properties = pika.BasicProperties(message_id=message_id, type=message_type, delivery_mode=2)
    channel.basic_publish(exchange, key, body, properties)


def test_a_replay_reads_its_own_dead_letter_queues_and_never_another_contracts(
    connection: Any, vhost: str, catalog: Catalog
) -> None:
    management = ManagementClient.from_amqp_url(broker.url_of(vhost))
    order, invoice = classic(catalog, ORDER), classic(catalog, INVOICE)
    for contract in (order, invoice):
        provision(connection, plan_topology(contract), management=management)
    channel = connection.channel()
    channel.confirm_delivery()
    order_work, invoice_work = order.consumers[0].queue, invoice.consumers[0].queue
    publish(channel, dlx_name(order.transport.exchange), dlq_name(order_work), ORDER, "o-1")
    publish(channel, dlx_name(invoice.transport.exchange), dlq_name(invoice_work), INVOICE, "i-1")
    # a service's own DLQs: one named after an order queue, one for invoices by name and by DLX
    channel.queue_declare(f"{order_work}_error", durable=True)
    channel.queue_declare("ledger.invoices.dlq", durable=True)
    channel.exchange_declare("ledger.dlx", "fanout", durable=True)
    channel.queue_declare("ledger.graveyard", durable=True)
    channel.queue_bind("ledger.graveyard", "ledger.dlx")
    channel.queue_declare("ledger.invoices", durable=True, arguments={"x-dead-letter-exchange": "ledger.dlx"})
    channel.queue_bind("ledger.invoices", invoice.transport.exchange, invoice.transport.routing_key)
    publish(channel, "", "ledger.graveyard", INVOICE, "i-2")
    publish(channel, "", f"{order_work}_error", ORDER, "o-2")
    for listed in ("ledger.invoices", "ledger.graveyard", f"{order_work}_error"):
        broker.wait_for_queue_listed(vhost, listed)  # discovery reads the management API's listing

    found = in_flight_records(connection, order, management=management)

    looked = {q.queue: q.role for q in found.queues}
    invoice_queues = {q.name for q in plan_topology(invoice).queues} | {"ledger.graveyard", "ledger.invoices.dlq"}
    assert not invoice_queues & set(looked), f"another contract's queues were read: {invoice_queues & set(looked)}"
    assert looked[f"{order_work}_error"] == "discovered"
    assert dlq_name(order_work) in looked
    assert sorted(r["properties"]["messageId"] for _q, r in found.records) == ["o-1", "o-2"]
    assert found.discovered and found.complete

    for_invoice = in_flight_records(connection, invoice, management=management)

    seen = {q.queue for q in for_invoice.queues}
    assert "ledger.graveyard" in seen and f"{order_work}_error" not in seen
    assert not {q.name for q in plan_topology(order).queues} & seen
    assert sorted(r["properties"]["messageId"] for _q, r in for_invoice.records) == ["i-1", "i-2"]

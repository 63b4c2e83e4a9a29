"""Sample traffic is valid, unique, and ordered per partition key."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from contract_platform.catalog.model import Kind
from contract_platform.envelope import EnvelopeValidator
from contract_platform.envelope.properties import parse_timestamp
from contract_platform.traffic import sample_envelopes


def test_every_sample_envelope_is_valid_and_unique(catalog):
    validator = EnvelopeValidator(catalog)
    for contract in catalog:
        envelopes = list(sample_envelopes(contract, 40, seed=7))
        assert all(validator.issues(e)[1] == [] for e in envelopes), contract.message_type
        assert len({e["metadata"]["messageId"] for e in envelopes}) == 40
        for e in envelopes:
            m = e["metadata"]
            assert parse_timestamp(m["occurredAt"]) <= parse_timestamp(m["publishedAt"])
            assert m["producer"] in (contract.producers or ()) and m["messageVersion"] == contract.version
        if contract.kind is Kind.EVENT:
            assert {e["metadata"]["producer"] for e in envelopes} == {contract.owner.service}


def test_a_command_is_sent_by_its_callers_never_by_its_owner(catalog):
    command = catalog.get("order.create-order.v1")
    two = replace(command, callers=("quote-service", "sales-portal"))
    assert {e["metadata"]["producer"] for e in sample_envelopes(two, 8, seed=3)} == {"quote-service", "sales-portal"}
    silent = replace(command, callers=())  # no callers declared: the fixtures' producer stays
    fixture_producers = {f.document["metadata"]["producer"] for f in command.fixtures if f.valid}
    assert {e["metadata"]["producer"] for e in sample_envelopes(silent, 8, seed=3)} == fixture_producers


def test_ordered_contracts_get_increasing_sequences_per_key(catalog):
    contract = catalog.get("billing.invoice-issued.v1")
    seen = defaultdict(list)
    for e in sample_envelopes(contract, 40, keys=5, seed=1):
        seen[e["metadata"]["partitionKey"]].append(e["payload"]["aggregateVersion"])
    assert len(seen) == 5 and all(seq == list(range(1, len(seq) + 1)) for seq in seen.values())


def test_each_batch_orders_its_own_keys_so_a_second_batch_never_restarts_a_sequence(catalog):
    contract = catalog.get("order.order-created.v1")
    first = {e["metadata"]["partitionKey"] for e in sample_envelopes(contract, 20, keys=4)}
    second = {e["metadata"]["partitionKey"] for e in sample_envelopes(contract, 20, keys=4)}
    assert len(first) == len(second) == 4
    assert not first & second

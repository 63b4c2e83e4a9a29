"""export_asyncapi: every contract becomes a message with its payload, every $ref resolves, no credentials leak.

The exported schemas are checked by meaning, not shape: each contract's valid fixtures must validate
against its message's payload (draft-07, as AsyncAPI reads it) and every invalid fixture must fail.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any
from urllib.parse import unquote

import pytest
from jsonschema import Draft7Validator

from contract_platform.amqp.topology import Role, dlq_name, parking_lot_name, plan_topology
from contract_platform.catalog.model import Catalog, Status
from contract_platform.envelope.properties import HEADER_FIELDS, amqp_properties
from contract_platform.errors import UsageError
from contract_platform.export import export_asyncapi
from contract_platform.export.asyncapi import SERVER_ID, catalog_fingerprint, server_for
from contract_platform.export.messages import CONTENT_ENCODING, CORRELATION_ID_LOCATION, DEPRECATED_STATUSES

BROKER = "amqp://guest:guest@127.0.0.1:5672/%2F"


@pytest.fixture(scope="module")
def document(catalog: Catalog) -> dict[str, Any]:
    return export_asyncapi(catalog, broker_url=BROKER)


def iter_refs(node: Any, path: str = "") -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.append((path, value))
            else:
                found += iter_refs(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += iter_refs(value, f"{path}/{index}")
    return found


def resolve(document: Any, ref: str) -> Any:
    """A local $ref (URI fragment holding a JSON pointer) inside ``document``; KeyError if it does not resolve."""
    assert ref.startswith("#/"), ref
    node = document
    for raw in unquote(ref[2:]).split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def validator_for(document: dict[str, Any], pointer: str) -> Draft7Validator:
    """A draft-07 validator (AsyncAPI's schema dialect) for the schema at ``pointer``, refs resolved in ``document``."""
    root = dict(document)
    root["$ref"] = pointer
    return Draft7Validator(root, format_checker=Draft7Validator.FORMAT_CHECKER)


def test_document_is_asyncapi_3_and_plain_json(document):
    assert document["asyncapi"] == "3.0.0"
    assert json.loads(json.dumps(document)) == document  # nothing a JSON or YAML writer could not carry
    assert document["info"]["version"] == document["info"]["x-catalog-fingerprint"][:12]
    assert document["defaultContentType"] == "application/json"


def test_every_contract_is_a_message_named_after_its_type(catalog, document):
    messages = document["components"]["messages"]
    assert set(messages) == set(catalog.contracts)
    for contract in catalog:
        message = messages[contract.message_type]
        assert message["name"] == contract.message_type
        assert message["description"] == contract.description
        assert message["contentType"] == "application/json"
        assert message["correlationId"]["location"] == CORRELATION_ID_LOCATION
        assert message["bindings"]["amqp"]["messageType"] == contract.message_type
        contract_payload = message["payload"]["allOf"][1]["properties"]["payload"]
        exported = resolve(document, contract_payload["$ref"])
        assert exported["properties"].keys() == contract.payload_schema["properties"].keys()
        assert exported.get("required") == contract.payload_schema.get("required")


@pytest.mark.parametrize("valid", [True, False], ids=["valid-fixtures-pass", "invalid-fixtures-fail"])
def test_exported_payload_keeps_the_contracts_meaning(catalog, document, valid):
    checked = 0
    for contract in catalog:
        validator = validator_for(document, f"#/components/messages/{contract.message_type}/payload")
        for fixture in contract.fixtures:
            if fixture.valid is valid:
                errors = [e.message for e in validator.iter_errors(fixture.document)]
                assert (not errors) is valid, f"{contract.message_type} {fixture.name}: {errors}"
                checked += 1
    assert checked >= len(catalog)


def test_payload_pins_the_message_type(catalog, document):
    contract = catalog.get("billing.invoice-issued.v2")
    valid = next(f.document for f in contract.fixtures if f.valid)
    validator = validator_for(document, "#/components/messages/billing.invoice-issued.v2/payload")
    other = json.loads(json.dumps(valid))
    other["metadata"]["messageType"] = "billing.invoice-issued.v1"
    assert not validator.is_valid(other)


def test_headers_schema_accepts_the_headers_the_publisher_sets(catalog, document):
    for contract in catalog:
        message = document["components"]["messages"][contract.message_type]
        assert set(message["headers"]["properties"]) == set(HEADER_FIELDS)
        validator = validator_for(document, f"#/components/messages/{contract.message_type}/headers")
        for fixture in (f for f in contract.fixtures if f.valid):
            properties = amqp_properties(fixture.document)
            assert validator.is_valid(properties["headers"]), (contract.message_type, fixture.name)
            assert properties["content_encoding"] == CONTENT_ENCODING
        wrong_major = {"schema-version": contract.major + 1, "message-version": "9.0.0", "producer": "x"}
        assert not validator.is_valid(wrong_major)


def test_tenant_id_header_is_required_where_tenancy_is(catalog, document):
    headers = document["components"]["messages"]["billing.invoice-issued.v2"]["headers"]
    assert headers["required"] == ["schema-version", "message-version", "producer"]  # the envelope's required fields
    contract = catalog.get("billing.invoice-issued.v2")
    tenanted = dataclasses.replace(contract, tenancy_required=True)
    other = Catalog(catalog.root, catalog.envelope_schema, {**catalog.contracts, contract.message_type: tenanted})
    exported = export_asyncapi(other, broker_url=BROKER)
    assert "tenant-id" in exported["components"]["messages"][contract.message_type]["headers"]["required"]


def test_every_ref_resolves_within_the_document(document):
    refs = iter_refs(document)
    assert len(refs) > 50
    for where, ref in refs:
        try:
            resolve(document, ref)
        except (KeyError, IndexError, ValueError) as exc:
            pytest.fail(f"{where}: $ref {ref} does not resolve ({exc!r})")


def test_defs_are_hoisted_and_no_schema_keeps_id_or_dialect(document):
    schemas = document["components"]["schemas"]
    assert "order.create-order.v1.payload.OrderLine" in schemas
    items = schemas["order.create-order.v1.payload"]["properties"]["lineItems"]["items"]
    assert items["$ref"] == "#/components/schemas/order.create-order.v1.payload.OrderLine"
    text = json.dumps(schemas)
    assert '"$defs"' not in text and '"$id"' not in text and '"$schema"' not in text


def test_server_is_the_broker_without_credentials(catalog):
    url = "amqps://svc-contracts:s3cr3t-Pa55@broker.example.com:5671/prod"
    document = export_asyncapi(catalog, broker_url=url)
    server = document["servers"][SERVER_ID]
    assert (server["host"], server["protocol"]) == ("broker.example.com:5671", "amqps")
    text = json.dumps(document)
    assert "s3cr3t-Pa55" not in text and "svc-contracts" not in text
    vhosts = {
        c["bindings"]["amqp"].get("exchange", c["bindings"]["amqp"].get("queue"))["vhost"]
        for c in document["channels"].values()
    }
    assert vhosts == {"prod"}


def test_server_defaults_to_the_platform_setting(catalog, monkeypatch):
    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", "amqp://app:hunter2@rabbitmq/%2F")
    document = export_asyncapi(catalog)
    assert document["servers"][SERVER_ID]["host"] == "rabbitmq:5672"
    assert "hunter2" not in json.dumps(document)


@pytest.mark.parametrize("url", ["http://user:pw-in-url@host/", "amqp://user:pw-in-url@host:notaport/"])
def test_a_url_that_is_not_amqp_is_refused_without_its_password(url):
    with pytest.raises(UsageError) as caught:
        server_for(url)
    assert "pw-in-url" not in str(caught.value)
    assert "***" in str(caught.value)


def test_channel_bindings_use_the_topology_names(catalog, document):
    channels = document["channels"]
    by_address = {channel["address"]: channel for channel in channels.values()}
    for contract in catalog:
        plan = plan_topology(contract)
        route = by_address[contract.transport.routing_key]
        exchange = route["bindings"]["amqp"]["exchange"]
        declared = next(e for e in plan.exchanges if e.name == plan.exchange)
        assert route["bindings"]["amqp"]["is"] == "routingKey"
        assert (exchange["name"], exchange["type"], exchange["durable"], exchange["vhost"]) == (
            declared.name, declared.type, declared.durable, "/",
        )  # fmt: skip
        assert contract.message_type in route["messages"]
        for queue in plan.queues_of(Role.CONSUMER):
            channel = by_address[queue.name]
            assert channel["bindings"]["amqp"]["is"] == "queue"
            assert channel["bindings"]["amqp"]["queue"]["name"] == queue.name
            assert channel["x-rabbitmq"]["arguments"] == dict(queue.arguments)
            assert channel["x-rabbitmq"]["deadLetterQueues"] == [dlq_name(queue.name)]
            assert channel["x-rabbitmq"]["parkingLots"] == [parking_lot_name(queue.name)]
            assert {"exchange": plan.exchange, "routingKey": contract.transport.routing_key} in channel["x-rabbitmq"][
                "bindings"
            ]


def test_operations_send_per_contract_and_receive_per_consumer_queue(catalog, document):
    operations = document["operations"]
    for contract in catalog:
        send = operations[f"send.{contract.message_type}"]
        assert send["action"] == "send"
        assert resolve(document, send["channel"]["$ref"])["address"] == contract.transport.routing_key
        assert send["bindings"]["amqp"]["deliveryMode"] == 2
        for consumer in contract.consumers:
            receive = operations[f"receive.{consumer.queue}"]
            assert receive["action"] == "receive"
            assert resolve(document, receive["channel"]["$ref"])["address"] == consumer.queue
            assert consumer.service in receive["x-consumers"]
    for operation_id, operation in operations.items():
        channel_ref = operation["channel"]["$ref"]
        for message in operation["messages"]:
            assert message["$ref"].startswith(channel_ref + "/messages/"), operation_id  # AsyncAPI 3 rule


def test_an_event_is_sent_by_its_owner_and_a_command_by_its_callers(catalog, document):
    event = document["operations"]["send.quote.quote-approved.v1"]
    assert event["x-producer"] == {"service": "quote-service", "team": "cpq-platform"} and "x-callers" not in event
    command = document["operations"]["send.order.create-order.v1"]
    assert command["x-callers"] == ["quote-service"] and "x-producer" not in command
    assert command["summary"].startswith("quote-service publishes order.create-order.v1")
    record = document["components"]["messages"]["order.create-order.v1"]["x-contract"]
    assert (record["owner"]["service"], record["callers"]) == ("order-service", ["quote-service"])


def test_x_contract_carries_lifecycle_and_policies(catalog, document):
    contract = catalog.get("billing.invoice-issued.v2")
    record = document["components"]["messages"][contract.message_type]["x-contract"]
    assert record["status"] == contract.status.value
    assert record["owner"]["team"] == contract.owner.team
    assert record["compatibility"] == contract.compatibility
    assert record["retention"] == {"queue": "14d", "dlq": "14d", "archive": "90d"}  # as contract.yaml writes them
    assert record["pii"] == {"containsPii": True, "fields": ["/payload/billingEmail"]}


def test_versions_a_consumer_should_leave_are_deprecated(catalog, document):
    flags = {mt: message["deprecated"] for mt, message in document["components"]["messages"].items()}
    assert flags == {c.message_type: c.status in DEPRECATED_STATUSES for c in catalog}
    assert flags["billing.invoice-issued.v1"] is (catalog.get("billing.invoice-issued.v1").status is Status.DEPRECATED)
    active = catalog.get("billing.invoice-issued.v2")
    retired = dataclasses.replace(active, status=Status.RETIRED, raw={**active.raw, "status": "retired"})
    other = Catalog(catalog.root, catalog.envelope_schema, {**catalog.contracts, active.message_type: retired})
    exported = export_asyncapi(other, broker_url=BROKER)
    assert exported["components"]["messages"][active.message_type]["deprecated"] is True
    assert exported["components"]["messages"][active.message_type]["x-contract"]["status"] == "retired"
    assert exported["info"]["version"] != document["info"]["version"]


def test_valid_fixtures_are_the_examples(catalog, document):
    for contract in catalog:
        examples = document["components"]["messages"][contract.message_type].get("examples", [])
        assert [e["payload"] for e in examples] == [f.document for f in contract.fixtures if f.valid]
        assert all(e["headers"] == amqp_properties(e["payload"])["headers"] for e in examples)


def test_fingerprint_follows_the_content(catalog):
    contract = catalog.get("order.create-order.v1")
    edited = dataclasses.replace(contract, raw={**contract.raw, "description": "changed"})
    other = Catalog(catalog.root, catalog.envelope_schema, {**catalog.contracts, contract.message_type: edited})
    assert catalog_fingerprint(other) != catalog_fingerprint(catalog)
    assert catalog_fingerprint(
        Catalog(catalog.root, catalog.envelope_schema, dict(catalog.contracts))
    ) == catalog_fingerprint(catalog)


def test_export_is_deterministic(catalog, document):
    assert export_asyncapi(catalog, broker_url=BROKER) == document
    assert export_asyncapi(catalog, broker_url=BROKER, version="2026.07.01")["info"]["version"] == "2026.07.01"

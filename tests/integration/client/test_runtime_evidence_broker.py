"""What a consumer's guard judged on the real broker ends up in the registry, and blocks promotion over target."""

from __future__ import annotations

import copy

import pytest
from tests.integration.client.sample_service import INVOICE_V2, Ledger, consumer
from tests.support.broker import drain

from contract_platform.amqp import open_connection
from contract_platform.amqp.connection import close_quietly
from contract_platform.catalog.model import Status
from contract_platform.client import EvidenceReporter, registry_sink
from contract_platform.client.testkit import delivery_of
from contract_platform.evidence import EvidenceKind, Verdict
from contract_platform.evidence.figures import RuntimeValidationFigures
from contract_platform.lifecycle import GuardContext, check_step
from contract_platform.store import SqlRegistry

pytestmark = pytest.mark.integration

QUEUE = "accounting-service.billing.invoice-issued.v2"


def test_a_consumers_rejections_are_recorded_and_refuse_activation_over_target(vhost_url, accounting, tmp_path):
    valid = [copy.deepcopy(f.document) for f in accounting.fixtures(INVOICE_V2, valid=True)]
    invalid = [copy.deepcopy(f.document) for f in accounting.fixtures(INVOICE_V2, valid=False)]
    connection = open_connection(vhost_url)
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        for envelope in valid + invalid:
            properties, body = delivery_of(envelope)
            channel.basic_publish("billing.events", "billing.invoice.issued.v2", body, properties)
    finally:
        close_quietly(connection)
    service = consumer(accounting, vhost_url, Ledger(), [QUEUE])

    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as registry:
        reporter = EvidenceReporter([service.counters], registry_sink(registry, accounting), interval=3600).start()
        service.run(idle_timeout=1.0)
        reporter.stop()

        record = registry.latest_evidence(INVOICE_V2, EvidenceKind.RUNTIME_VALIDATION)
        reasons = check_step(
            Status.EXPERIMENTAL, Status.ACTIVE, GuardContext(accounting.contract(INVOICE_V2), registry)
        )

    figures = RuntimeValidationFigures.of(record)
    assert record.verdict is Verdict.FAIL
    assert (figures.checked, figures.valid, figures.rejected, figures.service) == (6, 3, 3, "accounting-service")
    assert figures.bundle == accounting.checksum
    assert any(reason.startswith("runtime rejection rate 50.000% (3 of 6 messages") for reason in reasons)
    connection = open_connection(vhost_url)
    try:
        assert len(drain(connection, f"{QUEUE}.dlq")) == 3
    finally:
        close_quietly(connection)

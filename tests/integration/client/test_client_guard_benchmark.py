"""The service client's throughput benchmark runs on the broker and cleans up (small; no rate is asserted)."""

from __future__ import annotations

import pytest
from benchmarks.client_guard import throughput

from contract_platform.client.bundle import bundle_from_document
from contract_platform.export.bundle import export_bundle

pytestmark = pytest.mark.integration


def test_the_throughput_benchmark_compares_guarded_with_plain_pika(rabbitmq_url, catalog):
    consumer = bundle_from_document(export_bundle(catalog, service="accounting-service"), "accounting")
    publisher = bundle_from_document(export_bundle(catalog, service="billing-service"), "billing")

    figures = throughput(consumer, publisher, messages=300, rounds=1, window=100, prefetch=50)

    (row,) = figures["rounds"]
    assert row["guarded_publish"] > 0 and row["plain_publish"] > 0 and row["guarded_consume"] > 0
    assert 0 < row["confirm_frames"] <= 300
    assert set(row["cpu_us_per_message"]) == {"plain_publish", "guarded_publish", "plain_consume", "guarded_consume"}

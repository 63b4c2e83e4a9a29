"""The service client's benchmark runs and produces its per-message figures (small; no timing is asserted)."""

from __future__ import annotations

import json

from benchmarks.client_guard import per_message

from contract_platform.client.bundle import bundle_from_document
from contract_platform.export.bundle import export_bundle


def test_the_client_guard_benchmark_produces_its_per_message_figures(catalog):
    bundle = bundle_from_document(export_bundle(catalog, service="accounting-service"), "accounting")

    figures = per_message(bundle, count=50, repeat=1)

    json.dumps(figures)  # one JSON line
    assert figures["envelope_bytes"] > 500
    assert all(figures[key] > 0 for key in ("peek", "parse", "validate", "migrate_on_read", "publish_check"))

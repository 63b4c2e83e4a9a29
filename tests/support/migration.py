"""A migration's test data: a version seeded active in the registry, and v1 traffic made from its fixtures.

Shared by the in-process migration test (``tests/airflow/test_dual_publish_migration.py``) and the
two-worker Celery test (``tests/e2e/test_celery_workers.py``), so both judge the same traffic.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["STEP_EVIDENCE", "Traffic", "activate"]

STEP_EVIDENCE = {"experimental": "lint", "active": "envelope_quality"}


def activate(store: Any, message_type: str, version: str) -> None:
    """Seed the store's history: registered, then experimental and active, each on (seeded) evidence."""
    from contract_platform.catalog.model import Status

    state = store.register(message_type, version, actor="test-seed")
    for status in (Status.EXPERIMENTAL, Status.ACTIVE):
        evidence = store.add_evidence(
            message_type, contract_version=version, kind=STEP_EVIDENCE[status.value], verdict="pass", figures={}
        )
        state = store.apply_transition(
            message_type, expected=state, to=status, actor="test-seed", reason="seeded", evidence_id=evidence.id
        )


class Traffic:
    """v1 envelopes from the valid fixtures: new messageIds, now as occurredAt/publishedAt, and
    aggregateVersion increasing per partitionKey across everything generated."""

    def __init__(self, catalog_dir: Path) -> None:
        folder = catalog_dir / "billing/invoice-issued/v1/fixtures/valid"
        self.fixtures = [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))]
        self.versions: Counter[str] = Counter()

    def make(self, count: int, *, not_migratable: int | None = None) -> list[dict[str, Any]]:
        envelopes = []
        for n in range(count):
            envelope = copy.deepcopy(self.fixtures[n % len(self.fixtures)])
            metadata, payload = envelope["metadata"], envelope["payload"]
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            metadata.update(messageId=str(uuid.uuid4()), occurredAt=now, publishedAt=now)
            self.versions[metadata["partitionKey"]] += 1
            payload["aggregateVersion"] = self.versions[metadata["partitionKey"]]
            if n == not_migratable:
                payload.update(currency="EUR", amount="129.955")  # EUR has 2 decimals: never rounded
            envelopes.append(envelope)
        return envelopes

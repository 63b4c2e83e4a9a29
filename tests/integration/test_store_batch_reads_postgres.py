"""The batched reads of the Contracts page on a real PostgreSQL: the same answers as the one-type reads."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text
from tests.unit.store.batch_reads import assert_batches_match_single_reads, seed_history

from contract_platform.store import SqlRegistry

pytestmark = pytest.mark.integration

PREFIX = f"bt{uuid.uuid4().hex[:10]}"


@pytest.fixture()
def registry(postgres_url: str) -> Iterator[SqlRegistry]:
    with SqlRegistry.open(postgres_url) as opened:
        yield opened
    engine = create_engine(postgres_url)
    with engine.begin() as conn:  # our rows only: other runs share these tables
        for table in ("cp_transitions", "cp_evidence", "cp_refusals", "cp_contract_versions"):
            conn.execute(text(f"DELETE FROM {table} WHERE message_type LIKE :prefix"), {"prefix": f"{PREFIX}.%"})
    engine.dispose()


def test_latest_transitions_refusals_and_evidence_of_every_type_at_once(registry: SqlRegistry) -> None:
    names = seed_history(registry, PREFIX)
    # Other runs' rows may share the tables: compare ours only.
    assert_batches_match_single_reads(registry, names)

"""Two processes sharing one SQLite registry: exactly one wins each race; opening at once is safe."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from tests.support.races import assert_one_winner_per_round, run_race

from contract_platform.store import LATEST_VERSION, SqlRegistry

ROUNDS = 5


def open_at_once(url: str, barrier: Any, results: Any) -> None:
    barrier.wait(timeout=60)
    with SqlRegistry.open(url) as registry:
        results.put(registry.schema_version())


def test_two_processes_racing_for_one_transition_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    rounds = [f"billing.race-{n}.v1" for n in range(ROUNDS)]
    with SqlRegistry.open(url) as registry:
        for message_type in rounds:
            registry.register(message_type, "1.0.0", actor="setup")
        outcomes = run_race(url, rounds)
        assert_one_winner_per_round(registry, outcomes, rounds)


def test_processes_opening_a_fresh_database_at_once_create_it_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh' / 'registry.db'}"
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(3), context.Queue()
    workers = [context.Process(target=open_at_once, args=(url, barrier, results)) for _ in range(3)]
    for worker in workers:
        worker.start()
    versions = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    assert versions == [LATEST_VERSION] * 3
    with create_engine(url).connect() as conn:
        applied = conn.execute(text("SELECT version FROM cp_schema_version ORDER BY version")).scalars().all()
    assert applied == list(range(1, LATEST_VERSION + 1))

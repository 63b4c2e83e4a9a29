"""Two processes sharing one SQLite registry: exactly one wins each race; opening at once is safe."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from contract_platform.catalog.model import Status
from contract_platform.errors import ConcurrentTransition
from contract_platform.store import LATEST_VERSION, Registry

ROUNDS = 5


def race(url: str, message_types: list[str], name: str, barrier: Any, results: Any) -> None:
    """Child process: read the same expected state as the rival, wait for it, then both apply."""
    with Registry.open(url) as registry:
        for message_type in message_types:
            try:
                expected = registry.effective(message_type)
                assert expected is not None
                barrier.wait(timeout=60)
                registry.apply_transition(
                    message_type, expected=expected, to=Status.EXPERIMENTAL, actor=name, reason="race"
                )
                results.put((message_type, name, "applied", ""))
            except ConcurrentTransition as exc:
                results.put((message_type, name, "refused", str(exc)))
            except Exception as exc:  # report it, and free the rival instead of leaving it at the barrier
                results.put((message_type, name, "error", repr(exc)))
                barrier.abort()
                return


def open_at_once(url: str, barrier: Any, results: Any) -> None:
    barrier.wait(timeout=60)
    with Registry.open(url) as registry:
        results.put(registry.schema_version())


def run_race(url: str, message_types: list[str]) -> list[tuple[str, str, str, str]]:
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(2), context.Queue()
    workers = [
        context.Process(target=race, args=(url, message_types, name, barrier, results))
        for name in ("dag:one", "dag:two")
    ]
    for worker in workers:
        worker.start()
    outcomes = []
    for _ in range(2 * len(message_types)):
        outcomes.append(results.get(timeout=120))
        if outcomes[-1][2] == "error":
            break
    for worker in workers:
        worker.join(timeout=60)
    assert [outcome for outcome in outcomes if outcome[2] == "error"] == []
    assert [worker.exitcode for worker in workers] == [0, 0]
    return outcomes


def assert_one_winner_per_round(
    registry: Registry, outcomes: list[tuple[str, str, str, str]], rounds: list[str]
) -> None:
    for message_type in rounds:
        mine = [outcome for outcome in outcomes if outcome[0] == message_type]
        assert sorted(outcome[2] for outcome in mine) == ["applied", "refused"], mine
        winner = next(outcome[1] for outcome in mine if outcome[2] == "applied")
        loser_message = next(outcome[3] for outcome in mine if outcome[2] == "refused")
        assert f"by {winner}" in loser_message
        steps = [t for t in registry.history(message_type) if t.to_status is Status.EXPERIMENTAL]
        assert [t.actor for t in steps] == [winner]
        assert registry.effective(message_type).revision == 2  # type: ignore[union-attr]


def test_two_processes_racing_for_one_transition_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    rounds = [f"billing.race-{n}.v1" for n in range(ROUNDS)]
    with Registry.open(url) as registry:
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

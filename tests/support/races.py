"""Two processes racing for the same lifecycle transitions on one registry (SQLite or PostgreSQL)."""

from __future__ import annotations

import multiprocessing
from typing import Any

from contract_platform.catalog.model import Status
from contract_platform.errors import ConcurrentTransition
from contract_platform.store import SqlRegistry

Outcome = tuple[str, str, str, str]  # (message type, actor, "applied" | "refused" | "error", message)
RIVALS = ("dag:one", "dag:two")


def race(url: str, message_types: list[str], name: str, barrier: Any, results: Any) -> None:
    """Child process: read the same expected state as the rival, wait for it, then both apply."""
    with SqlRegistry.open(url) as registry:
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


def run_race(url: str, message_types: list[str]) -> list[Outcome]:
    """Both rivals race for proposed -> experimental of each message type (registered beforehand)."""
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(len(RIVALS)), context.Queue()
    workers = [context.Process(target=race, args=(url, message_types, name, barrier, results)) for name in RIVALS]
    for worker in workers:
        worker.start()
    outcomes: list[Outcome] = []
    for _ in range(len(RIVALS) * len(message_types)):
        outcomes.append(results.get(timeout=120))
        if outcomes[-1][2] == "error":
            break
    for worker in workers:
        worker.join(timeout=60)
    assert [outcome for outcome in outcomes if outcome[2] == "error"] == []
    assert [worker.exitcode for worker in workers] == [0] * len(RIVALS)
    return outcomes


def assert_one_winner_per_round(registry: SqlRegistry, outcomes: list[Outcome], rounds: list[str]) -> None:
    """Each round: one rival applied, the other was refused naming the winner; the history has one step."""
    for message_type in rounds:
        mine = [outcome for outcome in outcomes if outcome[0] == message_type]
        assert sorted(outcome[2] for outcome in mine) == ["applied", "refused"], mine
        winner = next(outcome[1] for outcome in mine if outcome[2] == "applied")
        loser_message = next(outcome[3] for outcome in mine if outcome[2] == "refused")
        assert f"by {winner}" in loser_message
        steps = [t for t in registry.transitions(message_type) if t.to_status is Status.EXPERIMENTAL]
        assert [t.actor for t in steps] == [winner]
        assert registry.effective(message_type).revision == 2  # type: ignore[union-attr]

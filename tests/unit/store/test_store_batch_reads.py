"""The batched reads (one query for every message type) answer what the one-type reads answer, on SQLite."""

from __future__ import annotations

from tests.unit.store.batch_reads import assert_batches_match_single_reads, seed_history

from contract_platform.store import SqlRegistry


def test_latest_transitions_refusals_and_evidence_of_every_type_at_once(registry: SqlRegistry) -> None:
    assert_batches_match_single_reads(registry, seed_history(registry, "batch"))


class _OneTypeAtATime:
    """The store without its batched reads: what a registry that has only the domain protocol answers."""

    def __init__(self, registry: SqlRegistry) -> None:
        self._registry = registry

    def __getattr__(self, name: str) -> object:
        batched = {"transitions_by", "refusals_by", "evidence_of_runs", "run_times", "latest_transitions"}
        if name in batched | {"latest_refusals", "latest_evidence_of"}:
            raise AttributeError(name)
        return getattr(self._registry, name)


def test_run_pages_and_the_catalogue_read_in_batches_what_they_read_per_type(sqlite_url: str, catalog) -> None:
    from tests.support.ui_seed import seed_registry

    from contract_platform_airflow.ui import views

    seeded = seed_registry(sqlite_url, "manual__batch")
    with SqlRegistry.open(sqlite_url) as registry:
        registry.add_evidence(
            "order.order-created.v1",
            contract_version="1.2.0",
            kind="lint",
            verdict="pass",
            figures={},
            run_id="manual__batch",
        )
        alone = _OneTypeAtATime(registry)
        for dag_id, run_id in (
            ("contract_change", "manual__batch"),
            ("topic_archive_validation", "scheduled__2026-11-19T00:00:00+00:00"),
        ):
            batched = views.run_activity(catalog, registry, dag_id, run_id)
            assert batched == views.run_activity(catalog, alone, dag_id, run_id)  # type: ignore[arg-type]
            assert batched.contracts  # the seed gave each of these runs something to show
        assert views.dag_activity(catalog, registry, "contract_change") == views.dag_activity(
            catalog, alone, "contract_change"
        )  # type: ignore[arg-type]
        now = seeded.now
        assert views.catalogue(catalog, registry, now) == views.catalogue(catalog, alone, now)  # type: ignore[arg-type]


def test_the_task_page_reads_its_runs_a_page_at_a_time(sqlite_url: str, catalog) -> None:
    """Seven runs of envelope_quality, newest first, five a page: the second page holds the two oldest, the same
    whether the store reads only those runs or every type's history."""
    from datetime import UTC, datetime, timedelta

    from contract_platform_airflow.ui import views

    base = datetime(2026, 11, 1, tzinfo=UTC)
    runs = [f"scheduled__2026-11-0{day}T01:00:00+00:00" for day in range(1, 8)]
    with SqlRegistry.open(sqlite_url) as registry:
        for day, run_id in enumerate(runs):
            registry.add_evidence(
                "order.order-created.v1",
                contract_version="1.2.0",
                kind="envelope_quality",
                verdict="pass",
                figures={},
                run_id=run_id,
                collected_at=base + timedelta(days=day),
            )
        alone = _OneTypeAtATime(registry)
        size = views.RUNS_PER_PAGE
        first = views.dag_activity(catalog, registry, "envelope_quality", limit=size)
        second = views.dag_activity(catalog, registry, "envelope_quality", limit=size, offset=size)
        assert [r.run_id for r in first] == runs[::-1][:size]
        assert [r.run_id for r in second] == runs[::-1][size:]
        assert second == views.dag_activity(catalog, alone, "envelope_quality", limit=size, offset=size)  # type: ignore[arg-type]

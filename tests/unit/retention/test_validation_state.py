"""The archive retention run ages out incremental validation's state: days no run of a day the archive still holds
can read go, the newest of them stays as the base of the cumulative ordering state, and nothing within reach of a
run is touched."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from contract_platform.archive_layout import validation_state_dir
from contract_platform.catalog import Catalog
from contract_platform.retention import apply_archive_retention
from contract_platform.store import SqlRegistry

NOW = datetime(2026, 7, 1, 6, tzinfo=UTC)  # every contract of the catalogue keeps its archive 90 days


def _day(n: int) -> date:
    return NOW.date() - timedelta(days=n)


def _state(state: Path, days: list[date]) -> None:
    for day in days:
        for kind in ("seen", "last"):
            folder = state / kind / f"date={day}"
            folder.mkdir(parents=True)
            (folder / "part-0.parquet").write_bytes(b"PAR1")
    (state / "last" / f"date={days[-1]}" / "_gaps.json").write_text("[]")


def _state_days(state: Path, kind: str) -> list[date]:
    return sorted(date.fromisoformat(p.name.removeprefix("date=")) for p in (state / kind).iterdir())


def test_state_days_out_of_every_runs_reach_go_with_the_partitions_and_the_base_stays(
    catalog: Catalog, tmp_path: Path
) -> None:
    root = tmp_path / "archive"
    for n in (200, 100, 60):
        (root / "order.events" / f"date={_day(n)}").mkdir(parents=True)
    state = validation_state_dir(root, tmp_path / "data")
    every = [_day(n) for n in range(200, 0, -1)]  # a daily run for 200 days
    _state(state, every)

    dry = apply_archive_retention(catalog, root, now=NOW, holds={}, registry=None, dry_run=True, validation_state=state)
    assert dry.pruned_state == () and _state_days(state, "seen") == every
    with SqlRegistry.open(f"sqlite:///{tmp_path / 'registry.db'}") as registry:
        run = apply_archive_retention(catalog, root, now=NOW, holds={}, registry=registry, validation_state=state)
        again = apply_archive_retention(catalog, root, now=NOW, holds={}, registry=registry, validation_state=state)

    assert {p.day for p in run.deleted} == {_day(200), _day(100)}  # past 90 days; day 60 is kept
    # day 60 is the oldest partition left: its run reads at most 30 days back, so the state from day 90 stays,
    # and day 91 is the base (the newest day before that); and never anything within 90 + 1 + 30 days of now
    horizon = min(_day(60) - timedelta(days=30), _day(121))
    assert _state_days(state, "seen") == _state_days(state, "last")
    assert _state_days(state, "seen")[0] == max(d for d in every if d < horizon)
    assert _state_days(state, "seen")[1:] == [d for d in every if d >= horizon]
    assert run.pruned_state == tuple(d for d in every if d < _state_days(state, "seen")[0])
    assert again.pruned_state == ()  # nothing more to age out

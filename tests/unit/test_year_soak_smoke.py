"""The year-long soak runs small (no timing asserted): past the 30-day retentions, the Data Docs, the logs and the
Airflow task logs stop growing while the archive, inside its 90 days, still grows."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.year_soak import soak


def test_what_is_kept_thirty_days_levels_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTRACT_PLATFORM_HOME", str(tmp_path / "data"))  # soak sets it; restored afterwards
    samples = soak(tmp_path / "data", 45, 5, as_json=True)
    day35, day45 = samples[-3], samples[-1]
    assert (day35["day"], day45["day"]) == (35, 45)
    for area in ("gx", "logs", "airflow", "quarantine"):
        assert day45["areas"][area] == day35["areas"][area], area
    assert day45["areas"]["archive"] > day35["areas"]["archive"]

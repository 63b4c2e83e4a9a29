"""Which tests are slow: the fast lane, ``pytest -m "not slow"`` (docs/contributing.md), leaves them out.

``tests/conftest.py`` marks them at collection. Slow are: whole folders that need Spark, Airflow's
metadata DB, the real broker and database, or the main job; tests that ask for the ``spark`` or
``airflow_db`` fixtures or carry the spark/airflow/integration markers wherever they live; and the
unit tests below, each over 10 s alone (measured with ``--durations``). Importing this module has no
side effects (the conftest, imported twice, would set the session's environment twice).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SLOW_FOLDERS = frozenset({"spark", "airflow", "integration", "e2e"})
SLOW_FIXTURES = frozenset({"spark", "airflow_db"})
SLOW_MARKERS = frozenset({"spark", "airflow", "integration"})
SLOW_UNIT_TESTS = frozenset(
    {
        # hypothesis over generated schemas: 17 s of the 94 s the unit tests took (2 cores, load 5-8)
        "tests/unit/compat/test_compat_properties.py::test_a_schema_is_compatible_with_itself",
    }
)


def is_slow(item: Any, tests_root: Path) -> bool:
    """``item``: a collected ``pytest.Item``; ``tests_root``: the repository's tests/ folder."""
    path = Path(str(item.path)).resolve()
    folder = path.relative_to(tests_root).parts[0] if path.is_relative_to(tests_root) else ""
    return (
        folder in SLOW_FOLDERS
        or bool(SLOW_FIXTURES & set(getattr(item, "fixturenames", ())))
        or any(item.get_closest_marker(name) for name in SLOW_MARKERS)
        or item.nodeid.split("[")[0] in SLOW_UNIT_TESTS
    )


# The order tests start in (stable within a folder): the end-to-end tests take minutes each, the Spark,
# Airflow and broker tests seconds to a minute, the unit tests milliseconds.
START_ORDER = {"e2e": 0, "integration": 1, "airflow": 1, "spark": 1, "fuzz": 2}


def start_order(item: Any, tests_root: Path) -> int:
    path = Path(str(item.path)).resolve()
    folder = path.relative_to(tests_root).parts[0] if path.is_relative_to(tests_root) else ""
    return START_ORDER.get(folder, 3)

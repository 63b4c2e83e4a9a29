"""Which tests are slow: the fast lane, ``pytest -m "not slow"`` (docs/contributing.md), leaves them out.

``tests/conftest.py`` marks them at collection. Slow are: whole folders that need Spark, Airflow's
metadata DB, the real broker and database, or the main job; tests that ask for the ``spark`` or
``airflow_db`` fixtures or carry the spark/airflow/integration markers wherever they live; and the
unit tests below, each over 10 s alone (measured with ``--durations``). Importing this module has no
side effects (the conftest, imported twice, would set the session's environment twice).
"""

from __future__ import annotations

import re
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
# Airflow and broker tests seconds to a minute, the unit tests milliseconds. ``tests/scheduling.py`` starts
# them on the workers in this order, and never queues one long test behind another.
START_ORDER = {"e2e": 0, "integration": 1, "airflow": 1, "spark": 1, "fuzz": 2}
# Within tests/e2e, longest first (minutes on 2 cores, --durations): the main job runs the whole lifecycle
# (about 10 minutes beside the other tests), so it starts at once on a worker of its own.
E2E_ORDER = (
    "tests/e2e/test_main_job.py",  # 10+
    "tests/e2e/test_celery_workers.py",
    "tests/e2e/test_airflow_scheduler.py::test_the_platform_runs_under_a_real_scheduler",
    "tests/e2e/test_airflow_scheduler.py::test_a_first_import_of_an_estate_is_batched_and_settles",
    "tests/e2e/test_data_folders.py",
    "tests/e2e/test_ui_browser.py",
)


def _folder(path: Path, tests_root: Path) -> str:
    return path.relative_to(tests_root).parts[0] if path.is_relative_to(tests_root) else ""


def start_order(item: Any, tests_root: Path) -> tuple[int, int]:
    path = Path(str(item.path)).resolve()
    folder = _folder(path, tests_root)
    rank = next((n for n, name in enumerate(E2E_ORDER) if item.nodeid.startswith(name)), len(E2E_ORDER))
    return START_ORDER.get(folder, 3), rank


def is_long_unit(scope: str) -> bool:
    """A work unit of the parallel run (a test's node id, or an ``xdist_group`` named after its module) that
    takes minutes: a worker running one gets no second (``tests/scheduling.py``)."""
    return scope.startswith("tests/e2e/")


SHARED_SCOPE = re.compile(r"@pytest\.fixture\([^)]*scope=[\"'](module|class|package)[\"']")


def shared_fixture_modules(tests_root: Path) -> frozenset[str]:
    """The test modules (``tests/...py``, as in node ids) that define or inherit, from a ``conftest.py``
    beside or above them, a module-, class- or package-scoped fixture: their tests run on one worker, one
    after another, so the fixture is made once (``tests/scheduling.py``). Read from the sources: the
    process that deals the tests out collects none."""
    repo = tests_root.parent
    shared_folders = {
        path.parent for path in tests_root.rglob("conftest.py") if SHARED_SCOPE.search(path.read_text("utf-8"))
    }
    return frozenset(
        path.relative_to(repo).as_posix()
        for path in tests_root.rglob("test_*.py")
        if SHARED_SCOPE.search(path.read_text("utf-8")) or any(path.is_relative_to(f) for f in shared_folders)
    )

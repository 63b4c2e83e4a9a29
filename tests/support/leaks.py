"""What a test leaves behind fails it: an environment variable it set or removed, a database it made.

Tests run in parallel processes (pytest-xdist, docs/contributing.md#tests), each its own session, so
state that leaks from one test into the rest of its process makes failures depend on which tests
happen to share a process. Two checks, registered by ``tests/conftest.py``:

- **environment**: at the end of each test process's session, once every fixture is finalized, its
  environment must equal the one it started with; a variable that differs is reported with the first
  test that changed it. Use ``monkeypatch.setenv`` (restored at teardown), or restore what a platform
  call set. What Spark and Airflow set in the process themselves is the only exception
  (``SESSION_VARIABLES``, ``AIRFLOW_TASK_PREFIXES``).
- **databases**: at the end of the run (in the process that ran it, or the xdist controller), the
  PostgreSQL databases made by tests (``TEST_DATABASE_PREFIXES``) that did not exist when the run started
  are listed; in CI they fail the run, elsewhere (other people's runs share the server) they are a warning.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Generator, Mapping
from typing import Any

import pytest

__all__ = ["changed_variables", "leftover_databases", "register", "made_databases"]

# Set once per test process by session fixtures; never restored, on purpose.
SESSION_VARIABLES = frozenset(
    {"PYSPARK_GATEWAY_SECRET", "PYSPARK_GATEWAY_PORT", "SPARK_AUTH_SOCKET_TIMEOUT", "SPARK_BUFFER_SIZE"}
)
SESSION_PREFIXES = ("PYSPARK_GATEWAY",)
# Set by Airflow itself in the process that runs a task (dag.test): put back after each test, never blamed on it.
AIRFLOW_TASK_PREFIXES = ("AIRFLOW_CTX_",)
# Every database a test creates starts with this (tests/support/databases.py; the serve command's own, named
# after its data folder, starts with contract_platform_airflow_).
TEST_DATABASE_PREFIXES = ("contract_platform_",)
SERVER = "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"


def changed_variables(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, tuple[str | None, str | None]]:
    """name -> (before, after) for every variable a test set, changed or removed (session variables aside)."""
    names = set(before) | set(after)
    return {
        name: (before.get(name), after.get(name))
        for name in sorted(names)
        if before.get(name) != after.get(name)
        and name not in SESSION_VARIABLES
        and not name.startswith(SESSION_PREFIXES)
    }


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, None]:
    """Note which test first changed each variable; whether the change stayed is decided at the end."""
    before = dict(os.environ)
    yield
    for name in [n for n in os.environ if n.startswith(AIRFLOW_TASK_PREFIXES) and n not in before]:
        del os.environ[name]
    culprits = item.config.stash.setdefault(CULPRITS, {})
    for name in changed_variables(before, os.environ):
        culprits.setdefault(name, item.nodeid)


LEAKS = pytest.StashKey[list[str]]()
CULPRITS = pytest.StashKey[dict[str, str]]()
START = pytest.StashKey[dict[str, str]]()
DATABASES = pytest.StashKey[set[str]]()


def made_databases() -> set[str] | None:
    """The test-made databases on the local server now; None when the server does not answer."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import SQLAlchemyError

    engine = create_engine(SERVER, connect_args={"connect_timeout": 3})
    try:
        with engine.connect() as conn:
            names = {row[0] for row in conn.execute(text("SELECT datname FROM pg_database"))}
    except SQLAlchemyError:
        return None
    finally:
        engine.dispose()
    return {name for name in names if name.startswith(TEST_DATABASE_PREFIXES)}


def leftover_databases(before: set[str] | None, after: set[str] | None) -> list[str]:
    if before is None or after is None:
        return []
    return sorted(after - before)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[START] = dict(os.environ)
    if not _is_worker(session.config):
        session.config.stash[DATABASES] = made_databases() or set()


class WorkerLeaks:
    """Registered with xdist only: a worker's environment leaks travel to the controller in its output."""

    @staticmethod
    def pytest_testnodedown(node: Any, error: Any) -> None:
        leaks = node.workeroutput.get("environment_leaks", []) if hasattr(node, "workeroutput") else []
        node.config.stash.setdefault(LEAKS, []).extend(leaks)


def register(config: pytest.Config) -> None:
    """Called by tests/conftest.py's pytest_configure."""
    import sys

    config.pluginmanager.register(sys.modules[__name__], "contract-platform-leaks")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(WorkerLeaks(), "contract-platform-worker-leaks")


def environment_leaks(config: pytest.Config) -> list[str]:
    """Variables that differ at the end of this process's session from its start (every fixture has been
    finalized by then, so a module's or a session's own settings are gone), each with the test that changed it."""
    culprits = config.stash.get(CULPRITS, {})
    changed = changed_variables(config.stash.get(START, {}), os.environ)
    found = []
    for name, (old, new) in changed.items():
        how = "set" if old is None else "removed" if new is None else "changed"
        found.append(f"{culprits.get(name, 'a fixture or hook')}: {name} ({how})")
    return found


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    leaks = config.stash.get(LEAKS, []) + environment_leaks(config)
    if _is_worker(config):
        config.workeroutput["environment_leaks"] = leaks  # type: ignore[attr-defined]
        return
    problems = [f"environment not restored by {leak}" for leak in leaks]
    left = leftover_databases(config.stash.get(DATABASES, None), made_databases())
    if left:
        message = f"databases made by tests and never dropped: {', '.join(left)}"
        if os.environ.get("CI"):
            problems.append(message)
        else:
            warnings.warn(message + " (a failure in CI; other runs on this server may have made them)", stacklevel=1)
    if problems:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.section("left behind", sep="=", red=True)
            for problem in problems:
                reporter.line(problem, red=True)
        if session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

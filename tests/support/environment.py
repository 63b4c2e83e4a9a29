"""The environment of a platform process a test starts (the main job, ``scripts/airflow-local``).

The test session's own settings (``tests/conftest.py`` sets AIRFLOW_*, CONTRACT_* and PYSPARK_*
for in-process tests) are left out, so the child finds its settings as a user's shell would.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.support.broker import url_of

SESSION_PREFIXES = ("AIRFLOW", "CONTRACT_", "PYSPARK_")


def user_environment(vhost: str, **extra: str) -> dict[str, str]:
    """The caller's environment without the session's settings, on the broker's ``vhost``, this venv first
    on PATH; ``extra`` adds or replaces variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(SESSION_PREFIXES)}
    env["CONTRACT_RABBITMQ_URL"] = url_of(vhost)
    env["PATH"] = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    # The machine's class-data archive (contract_platform.jvm.class_archive) is the one the tests share, not the
    # user's ~/.cache: machine state, like a user's cache, kept with pytest's.
    if os.environ.get("CONTRACT_JVM_CLASS_CACHE"):
        env["CONTRACT_JVM_CLASS_CACHE"] = os.environ["CONTRACT_JVM_CLASS_CACHE"]
    return env | extra

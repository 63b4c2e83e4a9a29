"""Airflow's components and the main job's DAG runs load no deprecation warning a user cannot act on.

Airflow's execution API (every DAG run of the main job, the api-server) imports ``svcs``, whose FastAPI
integration imports starlette's test client for a type; that client warned, in every such process, "Using
`httpx` with `starlette.testclient` is deprecated; install `httpx2` instead" until the platform depended
on httpx2 (pyproject.toml).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(120)

IMPORT_AS_AIRFLOW_DOES = """
import warnings
from starlette.exceptions import StarletteDeprecationWarning
warnings.simplefilter("error", StarletteDeprecationWarning)
import airflow.api_fastapi.execution_api.app
"""


def test_airflow_s_execution_api_imports_without_starlette_s_deprecation_warning() -> None:
    done = subprocess.run([sys.executable, "-c", IMPORT_AS_AIRFLOW_DOES], capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr[-3000:]

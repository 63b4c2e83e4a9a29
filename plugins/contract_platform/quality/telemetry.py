"""Great Expectations sends nothing anywhere: its usage analytics are off wherever the platform runs it.

Great Expectations 1.x releases that carry an analytics client send usage events to their vendor unless
``GX_ANALYTICS_ENABLED`` is false; they read it once, when ``great_expectations`` is first imported (the
client's settings are built at import), so it must be in the environment before that import. The 1.24
the platform installs ships no analytics client: nothing in it reads the variable, and a quality run
opens no connection off the machine (``tests/spark/test_quality_telemetry.py``). The rule stays for any
release of the pinned range that brings a client back, and for an environment that installs another.

The one rule, and where it is applied:

- ``analytics_off()``: in the process that imports GX, before it does (``quality.runner``): ``contractctl
  quality`` and the ``envelope_quality`` Spark job, under Airflow or ``spark-submit`` by hand;
- ``analytics_environment()``: what a process started for GX is given, the Spark jobs' executors
  (``spark.executorEnv``, ``spark_jobs/session.py``) and Airflow's components (``FIXED`` in
  ``contract_platform_airflow.settings``; ``docker-compose.yml``'s ``x-airflow-env``, held to it).

A value already set wins everywhere: a user who opts in (``GX_ANALYTICS_ENABLED=True``) keeps that choice.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

__all__ = ["ANALYTICS_VARIABLE", "OFF", "analytics_environment", "analytics_off"]

ANALYTICS_VARIABLE = "GX_ANALYTICS_ENABLED"
OFF = "False"


def analytics_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{"GX_ANALYTICS_ENABLED": ...}`` as a process started to run GX gets it: the value set in ``environ``
    (default ``os.environ``), else ``False``."""
    env = os.environ if environ is None else environ
    return {ANALYTICS_VARIABLE: env.get(ANALYTICS_VARIABLE) or OFF}


def analytics_off(environ: MutableMapping[str, str] | None = None) -> str:
    """Turn GX's analytics off in ``environ`` (default ``os.environ``) unless a value is already set; call it
    before ``great_expectations`` is imported. Returns the value in force."""
    env = os.environ if environ is None else environ
    env.update(analytics_environment(env))
    return env[ANALYTICS_VARIABLE]

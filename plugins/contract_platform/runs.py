"""A DAG run's id as part of a file name: the one rule every DAG and the migration plan use.

A run id is chosen by whoever triggers the run (the REST API takes any ``dag_run_id``), and a
scheduled run's id holds ``:`` and ``+`` (``scheduled__2026-11-26T00:00:00+00:00``). Reports,
quarantines and parity files are named after it, so it must become one harmless path component:

* every character but letters, digits, ``_``, ``.`` and ``-`` becomes ``_``, one for one (two run ids
  that differ only in unsafe characters of the same count still differ in length or place);
* a name that starts with ``.`` gets a leading ``_`` (``..`` would leave the folder, ``.x`` would hide);
* no run id (a task run outside a DAG run) is ``manual``.
"""

from __future__ import annotations

import re

__all__ = ["run_file_name"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def run_file_name(run_id: str | None) -> str:
    """``run_id`` as one safe path component (see the module docstring)."""
    name = _UNSAFE.sub("_", run_id or "manual")
    return f"_{name}" if name.startswith(".") else name

"""The repository's Python scripts (``scripts/*.py``), for tests that run or import them.

A script is no package (``bash scripts/main-job`` runs ``.venv/bin/python scripts/main_job.py``), so a test
loads it by its path rather than putting ``scripts/`` on ``sys.path`` (docs/contributing.md#test-support):
``load_script("main_job").lifecycle_verdict``.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

__all__ = ["SCRIPTS", "load_script", "script_path"]

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def script_path(name: str) -> Path:
    """``scripts/<name>.py``; a test that runs the script as a user does passes it to ``sys.executable``."""
    path = SCRIPTS / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such script; the Python scripts are {sorted(SCRIPTS.glob('*.py'))}")
    return path


@cache
def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` imported once per process as the module ``scripts.<name>`` (not run as ``__main__``).

    It is registered in ``sys.modules`` before it runs, as an import would: its dataclasses and pickling
    look their module up there."""
    module_name = f"scripts.{name}"
    spec = importlib.util.spec_from_file_location(module_name, script_path(name))
    assert spec is not None and spec.loader is not None, name
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module

"""``contract_platform.lazy.defer_imports``: a deferred module costs nothing until used, then is the module itself.

Each case runs in a fresh interpreter, as ``contractctl`` starts: the test process has imported both already.
"""

from __future__ import annotations

import subprocess
import sys

import pytest


def run(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_an_imported_but_unused_module_is_never_loaded() -> None:
    out = run(
        "import sys\n"
        "from contract_platform.lazy import defer_imports, is_deferred\n"
        "defer_imports(('arrow',))\n"
        "import arrow\n"
        "import isoduration\n"  # imports arrow a second time, as jsonschema's format checker does
        "print(is_deferred('arrow'), 'arrow.arrow' in sys.modules)\n"
    )
    assert out == "True False"


def test_its_first_use_loads_the_module_and_everything_works_as_before() -> None:
    out = run(
        "import sys\n"
        "from contract_platform.lazy import defer_imports, is_deferred\n"
        "defer_imports(('arrow', 'asyncio'))\n"
        "import isoduration, asyncio\n"
        "print(isoduration.parse_duration('P0001-02-03T04:05:06').time.hours)\n"  # arrow parses this form
        "print(is_deferred('arrow'), sys.modules['arrow'].get('2026-11-27').year)\n"
        "import asyncio.events\n"  # a submodule of a deferred package
        "print(asyncio.run(asyncio.sleep(0, result='ran')), is_deferred('asyncio'))\n"
    )
    assert out.splitlines() == ["4", "False 2026", "ran False"]


@pytest.mark.parametrize("name", ["no_such_module_anywhere", "sys"])
def test_a_module_that_is_missing_or_already_loaded_is_left_alone(name: str) -> None:
    out = run(
        "import sys\n"
        "from contract_platform.lazy import defer_imports, is_deferred\n"
        f"before = sys.modules.get({name!r})\n"
        f"defer_imports(({name!r},))\n"
        f"print(sys.modules.get({name!r}) is before, is_deferred({name!r}))\n"
    )
    assert out == "True False"

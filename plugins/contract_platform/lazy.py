"""A package that names its modules' entry points without importing them (PEP 562), written once.

::

    __getattr__, __dir__ = lazy_names(__name__, globals(), {"connection": ("open_connection",), ...})

A name is imported from its module on first use and kept in the package's globals, so a verb that needs
one module of a package (``contractctl migration status`` needs ``retirement.readers_seen``) loads only that
one: start-up stays short (benchmarks/README.md, ``contractctl`` start-up).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, namespace: MutableMapping[str, Any], modules: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's ``__getattr__`` and ``__dir__`` for ``modules``: module -> the names it provides."""
    home = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value  # loaded once
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(home))

    return __getattr__, __dir__

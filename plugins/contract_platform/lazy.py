"""A package that names its modules' entry points without importing them (PEP 562), written once.

::

    __getattr__, __dir__ = lazy_names(__name__, globals(), {"connection": ("open_connection",), ...})

A name is imported from its module on first use and kept in the package's globals, so a verb that needs
one module of a package (``contractctl migration status`` needs ``retirement.readers_seen``) loads only that
one: start-up stays short (benchmarks/README.md, ``contractctl`` start-up).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

__all__ = ["DEFERRABLE", "defer_imports", "is_deferred", "lazy_names"]


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


# Libraries a verb's imports pull in at import time but use only when called: ``pika`` imports ``asyncio``
# for its asyncio adapter (the platform uses the blocking and select ones); ``jsonschema``'s format checker
# imports ``isoduration``, which imports ``arrow`` to parse a ``duration`` string. Deferred, each is loaded on
# its first use, and a verb that uses neither starts without them (benchmarks/README.md, start-up).
DEFERRABLE = ("asyncio", "arrow")


def defer_imports(names: tuple[str, ...] = DEFERRABLE) -> None:
    """Stand a placeholder in for each module of ``names`` not yet imported: ``import name`` binds it at no
    cost, and its first attribute use (PEP 562 ``__getattr__``) imports the module itself, which replaces the
    placeholder in ``sys.modules``. A name that cannot be found is left to fail where it is imported.

    For a short-lived process (``contractctl``): what the module would raise at import time is raised at its
    first use instead. ``importlib.util.LazyLoader`` does not do: on Python 3.11 the import system's look at
    ``__spec__`` when a module is imported a second time already loads it.
    """
    for name in names:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None:
            continue
        placeholder = types.ModuleType(name)
        placeholder.__spec__ = spec
        placeholder.__getattr__ = _loader_of(name, placeholder)  # type: ignore[method-assign]
        sys.modules[name] = placeholder


def _loader_of(name: str, placeholder: types.ModuleType) -> Callable[[str], Any]:
    def __getattr__(attribute: str) -> Any:
        if sys.modules.get(name) is placeholder:
            del sys.modules[name]
        return getattr(importlib.import_module(name), attribute)

    return __getattr__


def is_deferred(name: str) -> bool:
    """Whether ``name`` is still a placeholder of ``defer_imports``: imported, never used."""
    module = sys.modules.get(name)
    return module is not None and "__getattr__" in vars(module) and "__file__" not in vars(module)

"""The amqp package's names: listed for the type checker, for lazy loading and in __all__, all three alike."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import contract_platform.amqp as amqp


def _type_checking_imports() -> set[str]:
    tree = ast.parse(Path(amqp.__file__).read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    return {alias.name for node in ast.walk(block) if isinstance(node, ast.ImportFrom) for alias in node.names}


def test_every_name_is_listed_alike_and_loads_from_its_module() -> None:
    lazy = {name: module for module, names in amqp._MODULES.items() for name in names}
    assert set(amqp.__all__) == set(lazy) == _type_checking_imports()
    for name, module in lazy.items():
        assert getattr(amqp, name) is getattr(importlib.import_module(f"contract_platform.amqp.{module}"), name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        amqp.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("an unknown name loaded")

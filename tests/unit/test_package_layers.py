"""The domain's packages depend on each other in one declared direction (docs/design.md#layout).

Every import in ``plugins/contract_platform`` counts, at module level or inside a function: a deferred
import is still a dependency. Imports under ``if TYPE_CHECKING:`` are for the type checker only and count
for the package graph, not as runtime imports of Airflow or PySpark.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

DOMAIN = Path(__file__).resolve().parents[2] / "plugins" / "contract_platform"
ROOT = "contract_platform"

# The foundation every package may use: plain data and rules, no broker, no services.
FOUNDATION = {
    "errors",
    "settings",
    "limits",
    "durations",
    "signals",
    "catalog",
    "envelope",
    "evidence",
    "archive_record",
}
# package -> everything it may import from the domain (a package not named here is not restricted).
ALLOWED = {
    "archive_record": set(),  # the record's definition: read by everyone, reads nothing of the domain
    "amqp": FOUNDATION,  # transport: nothing above it
    "archiver": FOUNDATION | {"amqp"},
    "activity": FOUNDATION | {"amqp"},  # the recorder: events in, the store (a protocol) out
    "bridge": FOUNDATION | {"amqp", "migration", "validation"},
    "migration": FOUNDATION | {"amqp"},  # a migration is data the bridge runs, never the other way round
}
NO_RUNTIME_IMPORT = ("airflow", "pyspark")  # the domain is pure Python: Spark and Airflow live outside it


@dataclass(frozen=True)
class Import:
    source: str  # importing module, e.g. contract_platform.bridge.relay
    target: str  # imported module or name, e.g. contract_platform.amqp.confirms
    file: Path
    line: int
    module_level: bool  # outside any function (and not only for the type checker)

    def __str__(self) -> str:
        return f"{self.file.relative_to(DOMAIN.parents[1])}:{self.line} imports {self.target}"


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(DOMAIN.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(node: ast.AST, module: str, path: Path, *, module_level: bool, package: bool) -> Iterator[Import]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import):
            for alias in child.names:
                yield Import(module, alias.name, path, child.lineno, module_level)
        elif isinstance(child, ast.ImportFrom):
            base = child.module or ""
            if child.level:  # relative: resolved against the importing package
                anchor = module.split(".") if package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (child.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" for alias in child.names] if base == ROOT else [base]
            for target in targets:
                yield Import(module, target, path, child.lineno, module_level)
        elif (
            isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            or isinstance(child, ast.If)
            and _type_checking(child)
        ):
            yield from _imports(child, module, path, module_level=False, package=package)
        else:
            yield from _imports(child, module, path, module_level=module_level, package=package)


def domain_imports() -> list[Import]:
    found = []
    for path in sorted(DOMAIN.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found += _imports(tree, module_name(path), path, module_level=True, package=path.name == "__init__.py")
    return found


IMPORTS = domain_imports()


def between_packages() -> list[Import]:
    return [
        found
        for found in IMPORTS
        if found.target.startswith(f"{ROOT}.") and package_of(found.target) != package_of(found.source)
    ]


def test_the_walk_sees_both_module_level_and_function_level_imports() -> None:
    targets = {(found.source, found.target, found.module_level) for found in IMPORTS}
    assert ("contract_platform.bridge", "contract_platform.amqp.connection", True) in targets
    assert ("contract_platform.archiving", "contract_platform.archiver", False) in targets


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_a_package_imports_only_what_its_layer_allows(package: str) -> None:
    assert (DOMAIN / package).is_dir() or (DOMAIN / f"{package}.py").is_file(), f"no package {package}"
    wrong = [
        str(found)
        for found in between_packages()
        if package_of(found.source) == package and package_of(found.target) not in ALLOWED[package]
    ]
    assert not wrong, f"{package} may import only {sorted(ALLOWED[package]) or 'nothing of the domain'}:\n" + (
        "\n".join(wrong)
    )


def test_no_cycle_between_packages() -> None:
    edges: dict[str, dict[str, Import]] = {}
    for found in between_packages():
        edges.setdefault(package_of(found.source), {}).setdefault(package_of(found.target), found)
    cycles = []
    for start in sorted(edges):
        path = _path_back(edges, start)
        if path is not None:
            cycles.append(" -> ".join([start, *(package_of(step.target) for step in path)]))
            cycles += [f"    {step}" for step in path]
    assert not cycles, "packages that import each other (break the cycle):\n" + "\n".join(cycles)


def _path_back(edges: dict[str, dict[str, Import]], start: str) -> list[Import] | None:
    """The imports of one way from ``start`` back to itself, or None."""
    stack: list[tuple[str, list[Import]]] = [(start, [])]
    seen: set[str] = set()
    while stack:
        package, path = stack.pop()
        for target, found in sorted(edges.get(package, {}).items()):
            if target == start:
                return [*path, found]
            if target not in seen:
                seen.add(target)
                stack.append((target, [*path, found]))
    return None


def test_the_domain_imports_neither_airflow_nor_pyspark_at_module_level() -> None:
    wrong = [str(found) for found in IMPORTS if found.module_level and found.target.split(".")[0] in NO_RUNTIME_IMPORT]
    assert not wrong, "import these inside the function that needs them:\n" + "\n".join(wrong)


def test_opening_a_connection_loads_neither_the_migration_engine_nor_the_services() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, contract_platform.amqp.connection;"
        "print(sorted(m for m in sys.modules if m.split('.')[1:2] in (['migration'], ['bridge'], ['archiver'])))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"

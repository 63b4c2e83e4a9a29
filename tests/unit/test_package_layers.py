"""The domain's packages depend on each other in one declared direction (docs/design.md#layout).

Every import in ``plugins/contract_platform`` counts, at module level or inside a function: a deferred
import is still a dependency. Imports under ``if TYPE_CHECKING:`` are for the type checker only and count
for the package graph, not as runtime imports of Airflow or PySpark.

Every package of the domain has its layer in ``ALLOWED`` (a new package must be given one), and the
trees around the domain point inwards: the domain imports nothing of ``spark_jobs``, ``dags`` or
``contract_platform_airflow`` (contractctl finds the Spark jobs through entry points,
``contract_platform.cli.on_spark``); ``spark_jobs`` imports no DAG and nothing of Airflow;
``contract_platform_airflow`` imports no DAG, and of ``spark_jobs`` only the package itself, to find the
job files it submits by path; the DAGs import no Spark job (they submit the files by path).
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
    "archive_layout",
    "runs",
    "lazy",
}
# package -> everything it may import from the domain; every package of the domain is named here.
ALLOWED = {
    # plain values: errors, sizes, durations, days, settings, patterns; they know no contract
    "errors": set(),
    "limits": set(),
    "signals": set(),
    "durations": {"errors"},
    "days": {"errors"},
    "settings": {"durations"},
    "patterns": {"errors", "limits"},
    "job_options": {"errors", "days"},  # the Spark jobs' common options: argparse, nothing that runs
    "jvm": set(),
    "lazy": set(),  # a package's names loaded on first use (PEP 562): importlib, nothing of the domain  # what every Spark driver is told at its start: options and environment, nothing that runs
    "archive_record": set(),  # the record's definition: read by everyone, reads nothing of the domain
    "archive_layout": set(),  # where the archive's partitions and files are: the archiver's and every reader's rule
    "runs": set(),  # a run id as a file name: one rule for every DAG and the migration plan
    "release": set(),  # the distribution's name and installed version: contractctl --version, the Airflow provider
    # the catalogue and what reads only the catalogue
    "catalog": {"errors", "limits", "durations", "settings", "patterns"},
    "envelope": {"errors", "catalog"},
    "evidence": {"catalog"},  # no SQL: Spark workers and the guards import it
    "compat": {"errors", "catalog", "patterns"},
    "docs": {"catalog", "durations"},
    "traffic": {"catalog"},
    # the broker, the store, and what runs over them
    "amqp": FOUNDATION,  # transport: nothing above it
    "archiver": FOUNDATION | {"amqp"},
    "archiving": FOUNDATION | {"amqp", "archiver"},
    "activity": FOUNDATION | {"amqp"},  # the recorder: events in, the store (a protocol) out
    "bridge": FOUNDATION | {"amqp", "migration", "validation"},
    "migration": FOUNDATION | {"amqp"},  # a migration is data the bridge runs, never the other way round
    "export": FOUNDATION | {"amqp", "client"},  # the contract bundle is written in the format the client reads
    # the service-side library: guards over the transport, the one validator, the migration engine
    "client": FOUNDATION | {"amqp", "migration", "validation"},
    "store": FOUNDATION,
    "status": FOUNDATION,
    "lifecycle": FOUNDATION | {"days"},
    "quality": FOUNDATION,
    "validation": FOUNDATION | {"days", "patterns", "job_options"},
    "impact": FOUNDATION | {"compat", "migration"},  # which consumers a change breaks
    "retirement": FOUNDATION | {"amqp", "lifecycle", "impact", "migration"},
    "retention": FOUNDATION | {"amqp"},  # the catalogue's retention enforced: archive, holds, dead letters
    # what the platform keeps itself: files and rows, aged out; the Data Docs index built again (quality)
    "housekeeping": {"errors", "settings", "durations", "jvm", "quality"},
    # the checks of a change, over the rules beneath them
    "lint": FOUNDATION | {"impact"},
    "checks": FOUNDATION | {"compat", "impact", "lint"},
    "replay": FOUNDATION | {"amqp", "checks", "compat", "impact", "migration", "retirement", "validation"},
    "change": FOUNDATION | {"amqp", "checks", "impact", "lifecycle", "lint", "migration"},
}
# the edge: contractctl may use every package of the domain, and no package uses it
ALLOWED["cli"] = set(ALLOWED)
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


def packages() -> set[str]:
    """Every package of the domain: its folders with an ``__init__.py`` and its top-level modules."""
    return {
        path.name if path.is_dir() else path.stem
        for path in DOMAIN.iterdir()
        if (path.is_dir() and (path / "__init__.py").is_file()) or (path.suffix == ".py" and path.stem != "__init__")
    }


def test_every_package_of_the_domain_has_its_layer() -> None:
    unnamed = sorted(packages() - set(ALLOWED))
    assert not unnamed, f"name these packages in ALLOWED, with what each may import: {unnamed}"
    assert not sorted(set(ALLOWED) - packages()), "ALLOWED names packages that do not exist"


REPO = DOMAIN.parents[1]
SPARK_JOBS = REPO / "spark_jobs"
DAGS = REPO / "dags"
AIRFLOW_GLUE = REPO / "plugins" / "contract_platform_airflow"


def imports_under(folder: Path) -> list[Import]:
    """Every import of every module under ``folder`` (a package or a folder of scripts), anywhere in it."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        parts = list(path.relative_to(folder.parent).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found += _imports(tree, name, path, module_level=True, package=path.name == "__init__.py")
    return found


def top(found: Import) -> str:
    return found.target.split(".")[0]


def test_the_walk_sees_every_tree_around_the_domain() -> None:
    assert {"contract_platform"} <= {top(found) for found in imports_under(SPARK_JOBS)}
    assert {"airflow", "contract_platform_airflow"} <= {top(found) for found in imports_under(DAGS)}
    assert {"airflow", "spark_jobs"} <= {top(found) for found in imports_under(AIRFLOW_GLUE)}


def test_the_domain_imports_no_spark_job_dag_or_airflow_glue_even_inside_a_function() -> None:
    outside = ("spark_jobs", "dags", "contract_platform_airflow")
    wrong = [str(found) for found in IMPORTS if top(found) in outside]
    assert not wrong, (
        "the domain must not import these; a verb finds a Spark job through contract_platform.cli.on_spark "
        "(entry points contract_platform.spark in pyproject.toml):\n" + "\n".join(wrong)
    )


def test_the_spark_jobs_import_no_dag_and_nothing_of_airflow() -> None:
    wrong = [
        str(found)
        for found in imports_under(SPARK_JOBS)
        if top(found) in ("dags", "contract_platform_airflow", "airflow")
    ]
    assert not wrong, "a Spark job runs without Airflow: import the domain instead:\n" + "\n".join(wrong)


def test_the_airflow_glue_imports_no_dag_and_submits_spark_jobs_by_path() -> None:
    wrong = [
        str(found)
        for found in imports_under(AIRFLOW_GLUE)
        if top(found) == "dags" or (top(found) == "spark_jobs" and found.target != "spark_jobs")
    ]
    assert not wrong, (
        "the Airflow glue imports no DAG, and of spark_jobs only the package, to find the job files it "
        "submits (contract_platform_airflow/spark.py):\n" + "\n".join(wrong)
    )


def test_the_dags_import_no_spark_job() -> None:
    wrong = [str(found) for found in imports_under(DAGS) if top(found) == "spark_jobs"]
    assert not wrong, "a DAG submits a Spark job by its file (contract_platform_airflow.spark.spark_submit):\n" + (
        "\n".join(wrong)
    )


def test_no_cycle_between_modules() -> None:
    """No module reaches itself again through the modules it imports, at module level, inside a function or for
    the type checker. A package's ``__init__`` is left out: it re-exports its modules and they import the names
    it defines, which Python resolves in order."""
    modules = {module_name(path) for path in DOMAIN.rglob("*.py")}
    packages = {module_name(path) for path in DOMAIN.rglob("__init__.py")}

    def resolved(target: str) -> str:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target

    edges: dict[str, dict[str, Import]] = {}
    for found in IMPORTS:
        target = resolved(found.target) if found.target.startswith(f"{ROOT}.") else ""
        if target and target != found.source and target not in packages and found.source not in packages:
            edges.setdefault(found.source, {}).setdefault(target, found)
    cycles = []
    for start in sorted(edges):
        path = _path_back(edges, start)
        if path is not None:
            cycles.append(" -> ".join([start, *(step.target for step in path)]))
            cycles += [f"    {step}" for step in path]
    assert not cycles, "modules that import each other (move the definition they share):\n" + "\n".join(cycles)

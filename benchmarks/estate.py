"""Estate scale: the CLI's cost on a catalogue of thousands of contracts, as whole processes.

    .venv/bin/python benchmarks/estate.py [--contracts 2000] [--deprecated 0] [--only cli] [--root DIR]

``generate_catalog(root, n, deprecated)`` writes a catalogue of ``n`` contracts made from
``contracts/order/order-created/v1`` under new names (distinct domains and names, every one
lint-clean; the first ``deprecated`` of them declared deprecated, each superseded by a later one),
the repository's envelope beside them, in a fresh git repository with one commit, so that
``contractctl check --against HEAD`` sees what is edited afterwards.

Each figure is one whole ``contractctl`` process (wall and CPU seconds and maximum resident memory of
the process, from ``os.wait4``), the way a user or a CI step runs it:

| figure | command |
|---|---|
| `lint` | `contractctl lint CATALOG --format json` |
| `check_one_changed` | one contract's payload schema gets a new description (and a patch version), then `contractctl check CATALOG --against HEAD --format json` |
| `check_envelope_changed` | the envelope gains an optional metadata field instead (every version depends on it), then the same check |
| `check_all` | `contractctl check CATALOG --against HEAD --all --format json`, nothing changed |
| `docs` | `contractctl docs CATALOG --out DIR` |
| `export_asyncapi` | `contractctl export asyncapi --catalog CATALOG --out FILE.json` |
| `export_asyncapi_yaml` | `contractctl export asyncapi --catalog CATALOG --out FILE.yaml` |

Figures are plain functions in ``FIGURES`` (name -> function of an ``Estate``), grouped by
``GROUPS`` for ``--only``; other modules under ``benchmarks/`` add their own groups with
``register(group, name, function)``. Prints one JSON line: the estate, the machine's load, each
figure. Nothing is asserted (the targets and the figures are in benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

__all__ = ["FIGURES", "GROUPS", "Estate", "generate_catalog", "main", "register", "run_process"]

TEMPLATE = ROOT / "contracts" / "order" / "order-created" / "v1"
TEMPLATE_TYPE = "order.order-created.v1"
TEMPLATE_KEY = "order.order.created.v1"
TEMPLATE_EXCHANGE = "order.events"
TEMPLATE_SERVICE = "order-service"
DOMAINS = 40  # contracts are spread over this many domains (one exchange each)
CONTRACTL = str(ROOT / ".venv" / "bin" / "contractctl")


def _names(index: int) -> tuple[str, str, str, str, str]:
    """(domain, messageType, routing key, exchange, owner service) of the index-th generated contract."""
    domain = f"estate{index % DOMAINS:02d}"
    entity = f"item{index:05d}"
    message_type = f"{domain}.{entity}-created.v1"
    return domain, message_type, f"{domain}.{entity}.created.v1", f"{domain}.events", f"{domain}-service"


def generate_catalog(root: Path, n: int, deprecated: int = 0) -> list[str]:
    """Write ``n`` lint-clean contracts under ``root`` (plus the envelope) and commit them in a new git
    repository at ``root``; the first ``deprecated`` are deprecated, superseded by a later contract.
    Returns the message types, in order."""
    if not 0 <= deprecated < max(n, 1):
        raise ValueError("deprecated must be at least 0 and below the number of contracts")
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "contracts" / "envelope", root / "envelope", dirs_exist_ok=True)
    files = {p.relative_to(TEMPLATE).as_posix(): p.read_text("utf-8") for p in TEMPLATE.rglob("*") if p.is_file()}
    types = []
    for index in range(n):
        domain, message_type, key, exchange, service = _names(index)
        folder = root.joinpath(*message_type.split("."))
        for relative, text in files.items():
            text = (
                text.replace(TEMPLATE_TYPE, message_type)
                .replace(TEMPLATE_KEY, key)
                .replace(TEMPLATE_EXCHANGE, exchange)
                .replace(TEMPLATE_SERVICE, service)
            )
            if relative == "contract.yaml" and index < deprecated:
                successor = _names(index + deprecated if index + deprecated < n else n - 1)[1]
                text = text.replace("status: active", "status: deprecated")
                text += f"supersededBy: {successor}\nsunset: '2027-06-01'\n"
            if relative == "payload.schema.json":  # distinct schemas, as in a real estate
                text = text.replace('"$schema"', f'"$comment": "estate contract {index}",\n  "$schema"', 1)
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, "utf-8")
        types.append(message_type)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", f"estate of {n} contracts")
    return types


def _git(root: Path, *args: str) -> None:
    identity = ["-c", "user.email=estate@example.com", "-c", "user.name=estate", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "-C", str(root), *identity, *args], check=True, capture_output=True)


def run_process(command: Sequence[str], *, cwd: Path | None = None) -> dict[str, Any]:
    """Wall and CPU seconds (user + system), maximum resident MB and exit code of one process (``os.wait4`` of
    that child; git processes it starts and waits for are counted in its CPU time). CPU time is what the
    process costs; wall time also says how busy the machine was."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as output, tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(command, stdout=output, stderr=errors, cwd=cwd)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = code = os.waitstatus_to_exitcode(status)
        output.seek(0)
        errors.seek(0)
        stdout = output.read().decode("utf-8", "replace")
        stderr = errors.read().decode("utf-8", "replace")
    result: dict[str, Any] = {
        "wall": round(wall, 2),
        "cpu": round(usage.ru_utime + usage.ru_stime, 2),
        "max_rss_mb": round(usage.ru_maxrss / 1024),
        "exit": code,
    }
    if code not in (0, 1):
        result["stderr_tail"] = stderr.strip().splitlines()[-3:]
    result["_stdout"] = stdout
    return result


@dataclass
class Estate:
    """A generated catalogue and where its figures' outputs go."""

    root: Path
    types: list[str]
    scratch: Path
    figures: dict[str, Any] = field(default_factory=dict)

    def contractctl(self, *args: str) -> dict[str, Any]:
        return run_process([CONTRACTL, *args], cwd=self.root)


def _public(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if not k.startswith("_")}


def _selection(result: dict[str, Any]) -> dict[str, Any]:
    """The check's own account of what it selected (its JSON ``selection``), when it gives one."""
    try:
        document = json.loads(result["_stdout"])
    except ValueError:
        return {}
    selection = document.get("selection") if isinstance(document, dict) else None
    if not isinstance(selection, dict):
        return {}
    return {"selected": selection.get("selected"), "total": selection.get("total")}


def figure_lint(estate: Estate) -> dict[str, Any]:
    return _public(estate.contractctl("lint", str(estate.root), "--format", "json"))


def _edit_payload(estate: Estate) -> Callable[[], None]:
    """One contract's payload schema gets a new description (a patch version); returns the undo."""
    folder = estate.root.joinpath(*estate.types[len(estate.types) // 2].split("."))
    schema_file, manifest = folder / "payload.schema.json", folder / "contract.yaml"
    schema_text, manifest_text = schema_file.read_text("utf-8"), manifest.read_text("utf-8")
    schema = json.loads(schema_text)
    schema["description"] = "An order, as the estate's reviewers now describe it."
    schema_file.write_text(json.dumps(schema, indent=2), "utf-8")
    manifest.write_text(manifest_text.replace("version: 1.2.0", "version: 1.2.1"), "utf-8")

    def undo() -> None:
        schema_file.write_text(schema_text, "utf-8")
        manifest.write_text(manifest_text, "utf-8")

    return undo


def figure_check_one_changed(estate: Estate) -> dict[str, Any]:
    undo = _edit_payload(estate)
    try:
        result = estate.contractctl("check", str(estate.root), "--against", "HEAD", "--format", "json")
    finally:
        undo()
    return {**_public(result), **_selection(result)}


def figure_check_envelope_changed(estate: Estate) -> dict[str, Any]:
    envelope = estate.root / "envelope" / "envelope.v1.schema.json"
    text = envelope.read_text("utf-8")
    schema = json.loads(text)
    schema["properties"]["metadata"]["properties"]["estateRegion"] = {"type": "string", "maxLength": 32}
    envelope.write_text(json.dumps(schema, indent=2), "utf-8")
    try:
        result = estate.contractctl("check", str(estate.root), "--against", "HEAD", "--format", "json")
    finally:
        envelope.write_text(text, "utf-8")
    return {**_public(result), **_selection(result)}


def figure_check_all(estate: Estate) -> dict[str, Any]:
    result = estate.contractctl("check", str(estate.root), "--against", "HEAD", "--all", "--format", "json")
    return {**_public(result), **_selection(result)}


def figure_docs(estate: Estate) -> dict[str, Any]:
    return _public(estate.contractctl("docs", str(estate.root), "--out", str(estate.scratch / "docs")))


def _export(estate: Estate, name: str) -> dict[str, Any]:
    out = estate.scratch / name
    result = estate.contractctl("export", "asyncapi", "--catalog", str(estate.root), "--out", str(out))
    return {**_public(result), "document_mb": round(out.stat().st_size / 2**20, 1) if out.exists() else None}


def figure_export_asyncapi(estate: Estate) -> dict[str, Any]:
    return _export(estate, "asyncapi.json")


def figure_export_asyncapi_yaml(estate: Estate) -> dict[str, Any]:
    return _export(estate, "asyncapi.yaml")


FIGURES: dict[str, Callable[[Estate], dict[str, Any]]] = {}
GROUPS: dict[str, list[str]] = {}


def register(group: str, name: str, function: Callable[[Estate], dict[str, Any]]) -> None:
    """Add a figure to ``FIGURES`` under ``group`` (``--only GROUP`` runs that group alone)."""
    FIGURES[name] = function
    GROUPS.setdefault(group, []).append(name)


for _name, _function in (
    ("lint", figure_lint),
    ("check_one_changed", figure_check_one_changed),
    ("check_envelope_changed", figure_check_envelope_changed),
    ("check_all", figure_check_all),
    ("docs", figure_docs),
    ("export_asyncapi", figure_export_asyncapi),
    ("export_asyncapi_yaml", figure_export_asyncapi_yaml),
):
    register("cli", _name, _function)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--contracts", type=int, default=2000, help="contracts in the estate (default 2000)")
    parser.add_argument("--deprecated", type=int, default=0, help="of them deprecated, with a successor")
    parser.add_argument("--only", action="append", default=None, help="a group or figure name (repeatable)")
    parser.add_argument("--root", type=Path, default=None, help="generate here (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the generated estate")
    args = parser.parse_args(argv)
    wanted = [n for item in (args.only or list(GROUPS)) for n in GROUPS.get(item, [item])]
    unknown = [n for n in wanted if n not in FIGURES]
    if unknown:
        parser.error(f"unknown figure(s) {', '.join(unknown)}; groups: {', '.join(GROUPS)}")
    base = Path(tempfile.mkdtemp(prefix="estate-")) if args.root is None else args.root
    try:
        started = time.perf_counter()
        types = generate_catalog(base / "contracts", args.contracts, args.deprecated)
        estate = Estate(root=base / "contracts", types=types, scratch=base / "out")
        generated = round(time.perf_counter() - started, 1)
        for name in wanted:
            load = os.getloadavg()[0]
            estate.figures[name] = {**FIGURES[name](estate), "load_before": round(load, 2)}
            print(f"{name}: {estate.figures[name]}", file=sys.stderr)
        print(
            json.dumps(
                {
                    "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                    "python": platform.python_version(),
                    "cores": os.cpu_count(),
                    "contracts": args.contracts,
                    "deprecated": args.deprecated,
                    "generate_seconds": generated,
                    "figures": estate.figures,
                }
            )
        )
    finally:
        if args.root is None and not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The AsyncAPI export, checked by the AsyncAPI ecosystem's own parser (@asyncapi/parser 3.x on Node).

``contractctl export asyncapi --out <tmp>/asyncapi.json`` (and ``.yaml``) runs as a user runs it; then
``asyncapi_parse.mjs`` parses the file with ``new Parser().parse(...)`` and prints the diagnostics.
No diagnostic may be an error (severity 0); warnings are printed. A document with a dangling
``$ref`` must fail the same check, so the check cannot pass by parsing nothing.

The parser lives in ``.cache/asyncapi`` (git-ignored); ``scripts/install-asyncapi-parser`` installs it
from the npm registry when it is missing. Skipped only when node or npm is not installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
MODULES = REPO / ".cache" / "asyncapi" / "node_modules"
PARSE_SCRIPT = Path(__file__).with_name("asyncapi_parse.mjs")
INSTALL_SCRIPT = REPO / "scripts" / "install-asyncapi-parser"
ERROR = 0  # @stoplight/types DiagnosticSeverity.Error
SECRET = "n0t-in-the-document"


@pytest.fixture(scope="module")
def parser_modules() -> Path:
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            pytest.skip(
                f"{tool} not found on PATH: install Node.js 18+ with npm to check the AsyncAPI export with @asyncapi/parser"
            )
    if not (MODULES / "@asyncapi" / "parser" / "package.json").exists():
        result = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, f"{INSTALL_SCRIPT} failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    return MODULES


def export(target: Path) -> subprocess.CompletedProcess[str]:
    contractctl = Path(sys.executable).parent / "contractctl"
    env = dict(os.environ, CONTRACT_RABBITMQ_URL=f"amqp://platform:{SECRET}@broker.internal:5672/%2F")
    command = [str(contractctl), "export", "asyncapi", "--catalog", str(REPO / "contracts"), "--out", str(target)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


def parse(document: Path, modules: Path) -> dict[str, Any]:
    result = subprocess.run(
        ["node", str(PARSE_SCRIPT), str(document), str(modules)], capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip(), (
        f"asyncapi_parse.mjs printed nothing (exit {result.returncode}):\n{result.stderr[-3000:]}"
    )
    report: dict[str, Any] = json.loads(result.stdout)
    report["exit"] = result.returncode
    return report


@pytest.mark.parametrize("name", ["asyncapi.json", "asyncapi.yaml"])
def test_export_parses_without_errors(tmp_path, parser_modules, name):
    target = tmp_path / name
    exported = export(target)
    assert exported.returncode == 0, exported.stderr
    assert SECRET not in target.read_text("utf-8")

    report = parse(target, parser_modules)
    errors = [d for d in report["diagnostics"] if d["severity"] == ERROR]
    for diagnostic in report["diagnostics"]:
        if diagnostic["severity"] != ERROR:
            print(f"@asyncapi/parser {report['parser']} [{diagnostic['severity']}] {diagnostic['code']}: "
                  f"{diagnostic['message']} at {diagnostic['path']}")  # fmt: skip
    assert errors == [], json.dumps(errors, indent=2)
    assert report["document"] is True and report["exit"] == 0


def test_the_parser_check_catches_a_dangling_ref(tmp_path, parser_modules):
    target = tmp_path / "asyncapi.json"
    assert export(target).returncode == 0
    document = json.loads(target.read_text("utf-8"))
    payload = document["components"]["messages"]["order.create-order.v1"]["payload"]
    payload["allOf"][1]["properties"]["payload"]["$ref"] = "#/components/schemas/missing"
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(document), "utf-8")

    report = parse(broken, parser_modules)
    assert report["exit"] == 1
    assert any(d["severity"] == ERROR and "missing" in d["message"] for d in report["diagnostics"])

"""Each verb that needs no Spark imports what it uses and nothing else: no other verb's module, no Spark or
Airflow, pika and httpx only where the verb talks AMQP or lists the broker's topology, and never SQLAlchemy:
the registry store queries through its driver and imports SQLAlchemy only to create or upgrade its schema,
and each case's registry has the current schema already (as a user's has, but on the first run). What a
library imports but the verb never calls (``contract_platform.lazy.DEFERRABLE``) is never loaded.

Each case runs one whole ``contractctl`` process, as a user starts it, and lists the modules it ended with.
A heavy import found here is a start-up cost every run of the verb pays (benchmarks/cli_startup.py times it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contract_platform.cli.main import VERBS
from contract_platform.store import SqlRegistry

SPARK_VERBS = {"validate-archive", "quality", "audit"}
NEVER = ("airflow", "pyspark", "py4j", "great_expectations", "pandas", "pyarrow")
STORE = ("sqlalchemy",)
BROKER = ("pika", "httpx")
# For the verbs that talk to the broker, a URL that cannot be parsed: they get as far as connecting and stop
# there (exit 3), or say the tap queue is unknown (migration status), without the management API probe an
# unreachable broker would get. The other verbs only name the broker (the AsyncAPI export's server).
BROKER_VERBS = {"migration", "archive", "bridge", "record-activity"}
NO_BROKER = "amqp://guest:guest@127.0.0.1:notaport/%2F"
NAMED_BROKER = "amqp://guest:guest@127.0.0.1:5672/%2F"
INV = "billing.invoice-issued"
VERB_MODULES = {f"contract_platform.cli.{module}" for module in VERBS.values()}

# case -> (argv, exit code, top-level packages the verb must not import)
CASES: dict[str, tuple[list[str], int, tuple[str, ...]]] = {
    "lint": (["lint", "{catalog}"], 0, STORE + BROKER),
    "diff files": (
        ["diff", f"{{catalog}}/{INV.replace('.', '/')}/v1/payload.schema.json", "{outside}"],
        1,
        STORE + BROKER,
    ),
    "diff messageTypes": (["diff", f"{INV}.v1", f"{INV}.v2", "--catalog", "{catalog}"], 1, STORE + BROKER),
    "check": (["check", "{catalog}"], 0, STORE + BROKER),
    "docs": (["docs", "{catalog}", "--out", "{tmp}/docs"], 0, STORE + BROKER),
    "export asyncapi JSON": (
        ["export", "asyncapi", "--catalog", "{catalog}", "--out", "{tmp}/a.json"],
        0,
        STORE + BROKER,
    ),
    "export asyncapi YAML": (
        ["export", "asyncapi", "--catalog", "{catalog}", "--out", "{tmp}/a.yaml"],
        0,
        STORE + BROKER,
    ),
    "status": (["status", "--catalog", "{catalog}"], 0, STORE + BROKER),
    "transition": (
        ["transition", "order.order-created.v1", "superseded", "--reason", "r", "--catalog", "{catalog}"],
        1,
        STORE + BROKER,
    ),
    "migration status": (["migration", "status", f"{INV}.v1", "--catalog", "{catalog}"], 0, STORE + ("httpx",)),
    "archive": (["archive", "--catalog", "{catalog}"], 3, STORE + ("httpx",)),
    # the holds in force: the catalogue and the holds file, neither store nor broker
    "retention holds": (["retention", "holds", "--catalog", "{catalog}"], 0, STORE + BROKER),
    "bridge": (["bridge", f"{INV}.v2", "--catalog", "{catalog}"], 3, STORE + ("httpx",)),
    # the store and one question to the management API (the recorder's queue): not the recorder, nor its AMQP client
    "record-activity --status": (["record-activity", "--status"], 1, STORE + BROKER),
    # the files, the store, and the airflow command run as a process of its own (never imported)
    "housekeeping --dry-run": (["housekeeping", "--dry-run"], 0, STORE + BROKER),
}

PROBE = (
    "import json, sys\n"
    "from contract_platform.cli.main import main\n"
    "code = main(sys.argv[2:])\n"
    "from contract_platform.lazy import DEFERRABLE, is_deferred\n"
    "loaded = [n for n in DEFERRABLE if n in sys.modules and not is_deferred(n)]\n"
    "with open(sys.argv[1], 'w') as out:\n"
    "    json.dump({'code': code, 'modules': sorted(sys.modules), 'deferred_loaded': loaded}, out)\n"
)


def test_every_verb_without_spark_has_a_case() -> None:
    assert {argv[0] for argv, _, _ in CASES.values()} == set(VERBS) - SPARK_VERBS


@pytest.mark.parametrize("case", CASES)
def test_a_verb_imports_only_what_it_uses(case: str, tmp_path: Path, catalog_dir: Path) -> None:
    template, expected_code, forbidden = CASES[case]
    outside = tmp_path / "schema.json"  # a schema file outside the catalogue: no consumers to judge
    outside.write_text(json.dumps({"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}))
    argv = [word.format(catalog=catalog_dir, tmp=tmp_path, outside=outside) for word in template]
    env = {
        **os.environ,
        "CONTRACT_PLATFORM_HOME": str(tmp_path / "home"),
        "CONTRACT_REGISTRY_URL": f"sqlite:///{tmp_path / 'registry.db'}",
        "CONTRACT_RABBITMQ_URL": NO_BROKER if argv[0] in BROKER_VERBS else NAMED_BROKER,
        "CONTRACT_CATALOG": str(catalog_dir),
    }
    report = tmp_path / "modules.json"
    SqlRegistry.open(env["CONTRACT_REGISTRY_URL"]).close()  # the schema is current: nothing to create

    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(report), *argv], env=env, capture_output=True, text=True, timeout=120
    )

    assert result.returncode == 0 and report.exists(), result.stderr
    found = json.loads(report.read_text())
    assert found["code"] == expected_code, result.stderr
    modules = set(found["modules"])
    heavy = sorted({name.split(".")[0] for name in modules} & set(NEVER + forbidden))
    assert not heavy, f"contractctl {case} imports {heavy}"
    # pika's asyncio adapter and the duration format's date library: imported, but loaded only when used
    assert found["deferred_loaded"] == [], f"contractctl {case} loads {found['deferred_loaded']}"
    own = f"contract_platform.cli.{VERBS[argv[0]]}"
    other_verbs = sorted(modules & (VERB_MODULES - {own}))
    assert not other_verbs, f"contractctl {case} imports the modules of other verbs: {other_verbs}"

"""A reader that leaves (``contractctl check ... | head -5``) ends ``contractctl`` quietly, as it ends git.

Each verb runs as the installed command, its standard output a pipe whose reader is gone: closed before the
first line (``| true``: every write fails, deterministically) or after reading one (``| head -1``). Python
buffers standard output in a pipe unless ``PYTHONUNBUFFERED`` is set, and a closed pipe then fails in the
interpreter's last flush instead of in the verb's write: every case runs buffered (what a user's shell
gives), and one per way of printing (table, JSON, annotations) unbuffered too. The verbs that need the broker are
in ``tests/integration/test_closed_pipe_broker.py``; the Spark-backed ones (``quality``,
``validate-archive``) through their ``--help`` here and ``spark_jobs.quiet`` in ``test_quiet_spark.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.cli import catalogue_repo, into_closed_pipe, reading_one_line
from tests.support.environment import user_environment

from contract_platform.cli.main import READER_GONE, VERBS

pytestmark = pytest.mark.timeout(120)

INV1 = "billing.invoice-issued.v1"
INV2 = "billing.invoice-issued.v2"

# case -> (arguments, with {catalog}, {registry}, {tmp}, {changed} filled in; the verb's own exit code when it can finish)
CASES: dict[str, tuple[list[str], int]] = {
    "lint": (["lint", "{catalog}"], 0),
    "diff": (["diff", INV1, INV2, "--catalog", "{catalog}"], 1),
    "check": (["check", "{catalog}"], 0),
    "check json": (["check", "{catalog}", "--format", "json"], 0),
    "check github against main": (["check", "{changed}", "--against", "main", "--format", "github"], 1),
    "check junit": (["check", "{catalog}", "--format", "junit"], 0),
    "docs": (["docs", "{catalog}", "--out", "{tmp}/docs"], 0),
    "status": (["status", "--catalog", "{catalog}", "--registry", "{registry}"], 0),
    "status of one type": (["status", INV1, "--catalog", "{catalog}", "--registry", "{registry}"], 0),
    "export": (["export", "asyncapi", "--catalog", "{catalog}"], 0),
    "record-activity status": (["record-activity", "--status", "--registry", "{registry}"], 1),  # not recording
}

# unbuffered, every write fails at once (in the verb's first table row, JSON document or annotation)
UNBUFFERED = ["check github against main", "status", "export"]


def pull_request(root: Path, catalog_dir: Path) -> Path:
    """A pull request's checkout of the catalogue whose change breaks billing.invoice-issued.v1 (``--against main``)."""
    changed = catalogue_repo(root, catalog_dir)
    schema = changed / "billing/invoice-issued/v1/payload.schema.json"
    document = json.loads(schema.read_text())
    document["required"] = [*document["required"], "settlementReference"]  # a new required field: a breaking change
    document["properties"]["settlementReference"] = {"type": "string"}
    schema.write_text(json.dumps(document))
    return changed


def argv_of(case: str, tmp_path: Path, catalog_dir: Path) -> list[str]:
    argv = CASES[case][0]
    places = {"catalog": str(catalog_dir), "registry": f"sqlite:///{tmp_path / 'registry.db'}", "tmp": str(tmp_path)}
    if "{changed}" in argv:
        places["changed"] = str(pull_request(tmp_path / "repo", catalog_dir))
    return [part.format(**places) for part in argv]


def environment(tmp_path: Path, *, buffered: bool) -> dict[str, str]:
    env = user_environment("/", CONTRACT_PLATFORM_HOME=str(tmp_path / "home"))
    env.pop("PYTHONUNBUFFERED", None)
    return env if buffered else env | {"PYTHONUNBUFFERED": "1"}


@pytest.mark.parametrize(
    ("case", "buffered"),
    [pytest.param(case, True, id=f"{case}-buffered") for case in CASES]
    + [pytest.param(case, False, id=f"{case}-unbuffered") for case in UNBUFFERED],
)
def test_a_reader_gone_before_the_first_line_ends_the_verb_quietly(
    case: str, buffered: bool, tmp_path: Path, catalog_dir: Path
) -> None:
    left = into_closed_pipe(argv_of(case, tmp_path, catalog_dir), environment(tmp_path, buffered=buffered))

    assert left.stderr == "", left.stderr  # no traceback, no "internal error", no complaint of the interpreter
    assert left.code == READER_GONE


@pytest.mark.parametrize("case", ["check github against main", "export"])  # export: 120 kB, more than a pipe holds
def test_a_reader_that_takes_one_line_and_leaves_ends_the_verb_quietly(
    case: str, tmp_path: Path, catalog_dir: Path
) -> None:
    left = reading_one_line(argv_of(case, tmp_path, catalog_dir), environment(tmp_path, buffered=True))

    assert left.read[0].strip(), "the reader got no line"
    assert left.stderr == "", left.stderr
    assert left.code in (CASES[case][1], READER_GONE)  # its own code when all of it fit in the pipe first


@pytest.mark.parametrize("verb", [None, *VERBS])
def test_help_to_a_reader_gone_says_nothing_more(verb: str | None, tmp_path: Path) -> None:
    """``--help`` is printed by argparse, before any verb runs; buffered, it reached the pipe only at exit."""
    left = into_closed_pipe([verb, "--help"] if verb else ["--help"], environment(tmp_path, buffered=True))

    assert left.stderr == "", left.stderr
    assert left.code == READER_GONE


def test_the_verbs_own_errors_still_reach_stderr_when_only_stdout_is_gone(tmp_path: Path) -> None:
    left = into_closed_pipe(["lint", str(tmp_path / "nope")], environment(tmp_path, buffered=True))

    assert left.code == 2
    assert "catalogue folder does not exist" in left.stderr

"""contractctl reaches the Spark jobs only through their entry points, with the jobs' own arguments.

``contract_platform.cli.on_spark`` declares what the Spark-backed verbs need; the jobs provide it under
the entry point group ``contract_platform.spark``. Without them a verb says how to install them; with
them, ``contractctl validate-archive`` and ``spark-submit spark_jobs/validate_archive.py`` parse the same
arguments into the same request. No JVM starts here.
"""

from __future__ import annotations

from datetime import date
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from contract_platform.cli import on_spark
from contract_platform.cli.main import build_parser
from contract_platform.cli.main import main as contractctl
from contract_platform.validation.request import ValidationRequest

RUNNERS = ("validate_archive", "quality", "last_seen", "replay", "quiet_spark", "run_quietly")
ARGV = [
    "archive/",
    "--catalog",
    "contracts",
    "--since",
    "2026-07-01",
    "--until",
    "2026-07-03",
    "--status",
    "billing.invoice-issued.v1=retired",
    "--oversize-bytes",
    "2048",
    "--registry-url",
    "sqlite:///r.db",
    "--run-id",
    "manual-1",
    "--no-fail-on-findings",
]


def test_every_runner_the_verbs_declare_is_installed_and_loads() -> None:
    installed = {entry.name: entry for entry in entry_points(group=on_spark.GROUP)}
    assert set(RUNNERS) <= set(installed), "reinstall: pip install -e . --no-deps"
    assert all(callable(installed[name].load()) for name in RUNNERS)


def test_contractctl_and_the_job_parse_the_same_arguments_into_the_same_request(capsys) -> None:
    pytest.importorskip("pyspark")
    from spark_jobs import validate_archive as job

    by_contractctl = ValidationRequest.from_args(build_parser().parse_args(["validate-archive", *ARGV]))
    by_the_job = ValidationRequest.from_args(job._parser().parse_args(ARGV))
    assert by_contractctl == by_the_job
    assert by_the_job.since == date(2026, 7, 1) and by_the_job.statuses == {"billing.invoice-issued.v1": "retired"}
    assert by_the_job.oversize_bytes == 2048 and by_the_job.run_id == "manual-1" and by_the_job.no_fail_on_findings

    with pytest.raises(SystemExit):
        build_parser().parse_args(["validate-archive", "--help"])
    assert capsys.readouterr().out.startswith("usage: contractctl validate-archive ")
    assert job.main(["--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: validate_archive ")


def test_without_the_spark_jobs_a_verb_says_how_to_install_them(
    tmp_path: Path, catalog_dir: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(on_spark, "entry_points", lambda **selection: [])  # an install without the Spark jobs

    assert contractctl(["validate-archive", str(tmp_path), "--catalog", str(catalog_dir)]) == 2
    assert contractctl(["quality", str(tmp_path), "--catalog", str(catalog_dir)]) == 2
    for line in capsys.readouterr().err.splitlines():
        assert line.startswith("contractctl: the Spark jobs are not installed") and "pip install -e ." in line

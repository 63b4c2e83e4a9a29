"""The README's main job, end to end, as a user runs it: the whole lifecycle through the real DAGs.

It runs in a fresh working directory (contracts/ and dags/ linked from the checkout, data/ new)
on a RabbitMQ virtual host of its own, so nothing is shared with other tests or earlier runs.

It runs the lifecycle once. Each step's second run is proven where it is cheap: a contract change that
changes nothing (tests/airflow/test_contract_change.py), a validation day run again
(tests/spark/test_incremental_validation.py), a migration whose source is retired
(tests/airflow/test_dual_publish_migration.py), the catalogue watch run again under a real scheduler
(tests/e2e/test_airflow_scheduler.py).
Running the whole job twice here took a third of the suite's longest test (docs/contributing.md#tests).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from tests.support.environment import user_environment
from tests.support.scripts import script_path

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.airflow]

REPO = Path(__file__).resolve().parents[2]


def run_main_job(workdir: Path, vhost: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script_path("main_job")), "--messages", "60"],
        cwd=workdir,
        env=user_environment(vhost),
        capture_output=True,
        text=True,
        timeout=1800,
    )


def assert_one_line_per_step(stdout: str) -> None:
    """Between the first step and the summary the console holds step lines only: no task log, no Spark
    output, no JSON report; those are in the step logs the summary names. No warning is printed twice."""
    lines = stdout.splitlines()
    first = next(n for n, line in enumerate(lines) if line.startswith("[1/"))
    summary = lines.index("Before:")
    steps = [line for line in lines[first:summary] if line.strip()]
    total = len(steps)
    assert all(line.startswith(f"[{n}/{total}] ") for n, line in enumerate(steps, 1)), "\n".join(steps)
    assert not any(line.lstrip().startswith("{") for line in lines), "a JSON report on the console"
    logs = Path(next(line for line in lines if line.strip().startswith("step logs:")).split()[2])
    assert len(list(logs.glob("*.log"))) == total
    validation = [path.read_text() for path in logs.glob("*topic-archive-validation*.log")]
    assert validation and all("SparkSubmitHook" in text for text in validation)
    # The demo's archive is small: its Spark drivers start with the client compiler only (contract_platform.jvm).
    assert all("quick start: " in text and "-XX:TieredStopAtLevel=1" in text for text in validation)
    # ... and map Spark's classes from the machine's class-data archive, which the first quick-start driver wrote
    assert any("maps Spark's classes at " in path.read_text() for path in logs.glob("*.log"))
    warned = [line for line in lines if "warning" in line.lower()]
    assert len(warned) == len(set(warned)), "a warning printed twice"
    # On a clean broker a first run has nothing to warn about: every warning in the summary is one to act on.
    summary = stdout.split("\nWarnings (", 1)
    assert len(summary) == 1, "warnings on a clean first run:\nWarnings (" + summary[-1].split("\n\n", 1)[0]


def test_main_job_runs_the_whole_lifecycle(tmp_path, vhost, request):
    from tests.support.broker import delete_recorder_queues

    from contract_platform.settings import default_registry_url

    workdir = tmp_path / "work"
    workdir.mkdir()
    # The main job runs a broker activity recorder for its registry: its queues go with the test.
    request.addfinalizer(lambda: delete_recorder_queues(default_registry_url((workdir / "data").resolve())))
    for name in ("contracts", "dags"):
        (workdir / name).symlink_to(REPO / name)

    first = run_main_job(workdir, vhost)
    log = first.stdout[-6000:] + "\n" + first.stderr[-6000:]
    (REPO / "test-artifacts").mkdir(exist_ok=True)
    (REPO / "test-artifacts" / "main-job.log").write_text(first.stdout + "\n" + first.stderr)
    assert first.returncode == 0, log
    assert "[20/20]" in first.stdout and "Before:" in first.stdout and "After:" in first.stdout
    assert_one_line_per_step(first.stdout)
    # Two recorders ran and one was restarted mid-run, as a deploy does; v1 still retires (the VERDICT below),
    # which the readers check allows only over a span the recorders covered.
    assert "restarted, 2 running, " in first.stdout
    # The pull-request step names whom its stricter orderId pattern breaks, with their owners.
    assert (
        "consumers: 2 of 2 broken by the change: billing-service (billing-platform, billing-platform@" in first.stdout
    )
    # The way to watch the platform in Airflow, pointed at this run's data (it is not the checkout's data/).
    serve = f"CONTRACT_PLATFORM_HOME={(workdir / 'data').resolve()} bash scripts/airflow-local"
    assert serve in (line.strip() for line in first.stdout.splitlines()), "the serve command is not alone on a line"

    env = {**os.environ, "CONTRACT_PLATFORM_HOME": str(workdir / "data")}
    status = subprocess.run(
        [
            str(Path(sys.executable).parent / "contractctl"),
            "status",
            "--catalog",
            str(workdir / "data/demo/contracts"),
            "--format",
            "json",
        ],
        env={k: v for k, v in env.items() if k != "CONTRACT_REGISTRY_URL"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    effective = {r["messageType"]: r["effective"] for r in json.loads(status.stdout)["contracts"]}
    assert effective == {
        "billing.generate-invoice.v1": "active",
        "billing.invoice-issued.v1": "retired",
        "billing.invoice-issued.v2": "active",
        "order.create-order.v1": "active",
        "order.order-created.v1": "active",
        "quote.quote-approved.v1": "active",
    }, status.stdout + status.stderr
    data = workdir / "data"
    assert (data / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html").exists()
    assert any((data / "retirement-bundles").rglob("*")), "no retirement bundle"
    assert (data / "docs" / "retirement" / "billing.invoice-issued.v1" / "latest.md").exists()
    assert (REPO / "contracts/billing/invoice-issued/v1/contract.yaml").read_text().count("status: deprecated") == 1
    assert_one_answer_per_surface(workdir / "data", vhost)


def assert_one_answer_per_surface(data: Path, vhost: str) -> None:
    """Who moved, asked of the CLI, the Contracts page (its view, which the API serves too) and the retirement
    audit on the main job's data: both consumers read v2 after their last v1 read, so both moved, on every
    surface (docs/consumer-impact.md#has-it-moved); and the guarded services' runtime evidence is on the page."""
    from contract_platform.catalog import load_catalog
    from contract_platform.settings import default_registry_url
    from contract_platform.store import SqlRegistry
    from contract_platform_airflow.ui.views.contract import contract_view

    old, new = "billing.invoice-issued.v1", "billing.invoice-issued.v2"
    env = user_environment(vhost, CONTRACT_PLATFORM_HOME=str(data), CONTRACT_CATALOG=str(data / "demo/contracts"))
    cli = subprocess.run(
        [str(Path(sys.executable).parent / "contractctl"), "migration", "status", new, "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr
    by_cli = {m["service"]: m["state"] for m in json.loads(cli.stdout)["consumerMoves"]}
    audit = json.loads((data / "docs" / "retirement" / old / "latest.json").read_text())
    successor = audit["checks"]["successor_consumers"]
    catalog = load_catalog(data / "demo/contracts")
    # the page as the platform serves it: on the platform's broker URL (its vhost names the consumers' queues)
    with (
        mock.patch.dict(os.environ, {"CONTRACT_RABBITMQ_URL": env["CONTRACT_RABBITMQ_URL"]}),
        SqlRegistry.open(default_registry_url(data.resolve())) as registry,
    ):
        view = contract_view(catalog, registry, old)
        on_page = {m.service: m.state for migration in view.migrations for m in migration.moves}
        runtime = [contract_view(catalog, registry, c.message_type).runtime for c in catalog]
    assert by_cli == on_page == {"accounting-service": "moved", "notification-service": "moved"}, (by_cli, on_page)
    assert successor["figures"]["stillOnSource"] == [], successor  # the audit saw the same
    assert any(window is not None for window in runtime), "no service reported runtime evidence"

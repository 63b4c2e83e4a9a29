"""Without the broker's management API the audit cannot pass, so the CLI and the main job stop first and say the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.contracts import V1, family_copy
from tests.support.scripts import script_path

from contract_platform.amqp.management import ENABLE_COMMAND, ENABLE_EVENTS_COMMAND
from contract_platform.cli.main import main

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def run_main_job(work: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    """The main job in ``work`` with ``settings``; it must stop before preparing anything."""
    env = {
        **os.environ,
        "CONTRACT_PLATFORM_HOME": str(work / "data"),
        "CONTRACT_CATALOG": str(work / "contracts"),
        **settings,
    }
    return subprocess.run(
        [sys.executable, str(script_path("main_job"))],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def test_the_audit_verb_stops_with_exit_3_and_the_command_that_enables_the_plugin(
    rabbitmq_url: str,
    catalog_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    closed_port: int,
) -> None:
    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", rabbitmq_url)
    monkeypatch.setenv("CONTRACT_RABBITMQ_MANAGEMENT_URL", f"http://127.0.0.1:{closed_port}")
    registry = tmp_path / "registry.db"
    family = family_copy(tmp_path / "contracts", catalog_dir)

    code = main(["audit", V1, "--catalog", str(family), "--registry", f"sqlite:///{registry}"])

    assert code == 3
    assert ENABLE_COMMAND in capsys.readouterr().err
    assert not registry.exists()  # stopped before anything else ran


def test_the_main_job_stops_before_it_starts_and_says_the_fix(
    rabbitmq_url: str, tmp_path: Path, closed_port: int
) -> None:
    done = run_main_job(
        tmp_path,
        CONTRACT_RABBITMQ_URL=rabbitmq_url,
        CONTRACT_RABBITMQ_MANAGEMENT_URL=f"http://127.0.0.1:{closed_port}",
    )

    assert done.returncode == 3, done.stdout + done.stderr
    assert "VERDICT: not started" in done.stderr and ENABLE_COMMAND in done.stderr
    assert not (tmp_path / "contracts").exists()  # nothing prepared, no DAG run


# -- the event exchange: the broker activity recorder's source ----------------------------------------------
# A broker whose event exchange plugin is off looks, to the platform, like one whose exchange is not in the
# virtual host it is told to look in: $CONTRACT_RABBITMQ_EVENT_VHOST names one without it.


@pytest.fixture
def events_off(rabbitmq_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    from tests.support import broker

    vhost = f"{broker.prefix()}no-events"
    broker.create_vhost(vhost)
    monkeypatch.setenv("CONTRACT_RABBITMQ_URL", rabbitmq_url)
    monkeypatch.setenv("CONTRACT_RABBITMQ_EVENT_VHOST", vhost)
    yield vhost  # type: ignore[misc]
    broker.delete_vhost(vhost)


def test_without_the_event_exchange_the_audit_verb_stops_with_exit_3_and_the_command(
    events_off: str, catalog_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = tmp_path / "registry.db"
    family = family_copy(tmp_path / "contracts", catalog_dir)

    code = main(["audit", V1, "--catalog", str(family), "--registry", f"sqlite:///{registry}"])

    assert code == 3
    error = capsys.readouterr().err
    assert ENABLE_EVENTS_COMMAND in error and "amq.rabbitmq.event" in error
    assert not registry.exists()


def test_without_the_event_exchange_the_recorder_stops_with_exit_3_and_the_command(
    events_off: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["record-activity", "--registry", f"sqlite:///{tmp_path / 'registry.db'}", "--max-seconds", "20"])

    assert code == 3
    assert ENABLE_EVENTS_COMMAND in capsys.readouterr().err


def test_without_the_event_exchange_the_main_job_stops_before_it_starts(
    events_off: str, rabbitmq_url: str, tmp_path: Path
) -> None:
    done = run_main_job(tmp_path, CONTRACT_RABBITMQ_URL=rabbitmq_url, CONTRACT_RABBITMQ_EVENT_VHOST=events_off)

    assert done.returncode == 3, done.stdout + done.stderr
    assert "VERDICT: not started" in done.stderr and ENABLE_EVENTS_COMMAND in done.stderr
    assert not (tmp_path / "contracts").exists()

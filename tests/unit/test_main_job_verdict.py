"""The main job's last line: whether the lifecycle it demonstrates completed (v1 retired)."""

from __future__ import annotations

from pathlib import Path

from tests.support.scripts import load_script

main_job = load_script("main_job")
NEW, OLD, lifecycle_verdict = main_job.NEW, main_job.OLD, main_job.lifecycle_verdict


def row(message_type: str, effective: str, refusal: str | None = None) -> dict[str, object]:
    return {"messageType": message_type, "effective": effective, "lastRefusal": refusal}


def test_complete_only_when_the_old_major_is_retired() -> None:
    complete, line = lifecycle_verdict([row(OLD, "retired"), row(NEW, "active")])
    assert complete and line.startswith("VERDICT: lifecycle complete")


def test_incomplete_says_where_v1_stopped_and_why() -> None:
    reason = "retirement audit was inconclusive: queues, dead_letters failed"
    complete, line = lifecycle_verdict([row(OLD, "deprecated", reason), row(NEW, "active")])
    assert not complete
    assert "NOT complete" in line and "deprecated" in line and reason in line and "\n" not in line


def test_the_summary_gives_the_serve_command_alone_on_its_line(tmp_path: Path) -> None:
    """A user copies the line as it is: nothing but the command on it, the explanation below."""
    lines = main_job.where_to_serve(tmp_path / "data").splitlines()
    command = next(i for i, line in enumerate(lines) if "scripts/airflow-local" in line)

    assert (
        lines[command].strip() == f"CONTRACT_PLATFORM_HOME={(tmp_path / 'data').resolve()} bash scripts/airflow-local"
    )
    assert "admin login" in " ".join(lines[command + 1 :])

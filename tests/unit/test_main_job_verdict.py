"""The main job's last line: whether the lifecycle it demonstrates completed (v1 retired)."""

from __future__ import annotations

from contract_platform_airflow.main_job import NEW, OLD, lifecycle_verdict


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

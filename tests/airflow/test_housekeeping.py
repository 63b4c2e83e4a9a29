"""housekeeping run in-process (dag.test): what is past its retention goes from the data folder, the class cache and
the registry store, what readers need stays, Airflow's own history is cleaned through its CLI, and a second run
changes nothing."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

pytestmark = pytest.mark.airflow


def _write(path: Path, *, days_old: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x" * 64)
    at = (datetime.now(UTC) - timedelta(days=days_old)).timestamp()
    os.utime(path, (at, at))
    return path


def test_the_daily_run_prunes_each_kind_past_its_retention(
    dagbag, platform_env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contract_platform.store import EvidenceKind, SqlRegistry, Verdict

    home: Path = platform_env["home"]  # type: ignore[assignment]
    cache = tmp_path / "class-cache"
    monkeypatch.setenv("CONTRACT_JVM_CLASS_CACHE", str(cache))
    monkeypatch.setenv("CONTRACT_RETENTION_LOGS", "7d")
    old_log = _write(home / "logs" / "cli" / "validate-archive-old.log", days_old=8)
    new_log = _write(home / "logs" / "cli" / "validate-archive-new.log", days_old=6)
    old_report = _write(home / "reports" / "archive-validation" / "scheduled__old.json", days_old=100)
    new_report = _write(home / "reports" / "archive-validation" / "scheduled__new.json", days_old=1)
    stamp = (datetime.now(UTC) - timedelta(days=45)).strftime("%Y%m%dT%H%M%S.000000Z")
    old_run = _write(home / "gx" / "uncommitted" / "validations" / "envelope_quality" / "v1" / "__none__" / stamp /
                     "r.json", days_old=45).parent  # fmt: skip
    stamp = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y%m%dT%H%M%S.000000Z")
    new_run = _write(home / "gx" / "uncommitted" / "validations" / "envelope_quality" / "v1" / "__none__" / stamp /
                     "r.json", days_old=1).parent  # fmt: skip
    stale_archive = _write(cache / "spark-classes-0000000000000000.jsa", days_old=60)
    mt = f"{platform_env['prefix']}.order.order-created.v1"
    with SqlRegistry.open(platform_env["registry_url"]) as store:
        for days in (500, 400, 1):
            store.add_evidence(mt, contract_version="1.0.0", kind=EvidenceKind.ARCHIVE_VALIDATION, verdict=Verdict.PASS,
                               figures={}, collected_at=datetime.now(UTC) - timedelta(days=days))  # fmt: skip

    dag = dagbag.get_dag("housekeeping")
    first = dag.test()

    assert str(first.state) == "success"
    assert not old_log.exists() and new_log.is_file()
    assert not old_report.exists() and new_report.is_file()
    assert not old_run.exists() and new_run.is_dir()
    assert not stale_archive.exists()
    with SqlRegistry.open(platform_env["registry_url"]) as store:
        assert len(store.evidence(mt, EvidenceKind.ARCHIVE_VALIDATION)) == 1
    states = {ti.task_id: str(ti.state) for ti in first.get_task_instances()}
    assert states == dict.fromkeys(("prune_files", "prune_evidence", "clean_airflow_metadata"), "success")

    _age(first.run_id, days=200)  # the first run, as if it had started 200 days ago
    second = dag.test()
    assert str(second.state) == "success"
    assert new_log.is_file() and new_report.is_file() and new_run.is_dir()
    assert not _runs_exist(first.run_id)  # airflow db clean removed it, with its task instances
    assert _runs_exist(second.run_id)


def _age(run_id: str, *, days: int) -> None:
    from airflow.models import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import update

    with create_session() as session:
        at = datetime.now(UTC) - timedelta(days=days)
        session.execute(update(DagRun).where(DagRun.dag_id == "housekeeping", DagRun.run_id == run_id)
                        .values(start_date=at, end_date=at))  # fmt: skip


def _runs_exist(run_id: str) -> bool:
    from airflow.models import DagRun, TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import func, select

    with create_session() as session:
        runs = session.scalar(select(func.count()).select_from(DagRun).where(DagRun.run_id == run_id,
                                                                             DagRun.dag_id == "housekeeping"))  # fmt: skip
        tasks = session.scalar(select(func.count()).select_from(TaskInstance).where(TaskInstance.run_id == run_id,
                                                                                    TaskInstance.dag_id == "housekeeping"))  # fmt: skip
    assert (runs == 0) == (tasks == 0), (runs, tasks)
    return bool(runs)


def test_a_bad_setting_fails_its_task_at_once_naming_it_and_the_others_run(
    dagbag, platform_env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTRACT_JVM_CLASS_CACHE", "off")
    monkeypatch.setenv("CONTRACT_RETENTION_AIRFLOW_METADATA", "90")  # no unit: not a duration

    run = dagbag.get_dag("housekeeping").test()

    tries = {ti.task_id: (str(ti.state), ti.try_number) for ti in run.get_task_instances()}
    assert tries["clean_airflow_metadata"] == ("failed", 1)  # not retried: a retry cannot fix a setting
    assert tries["prune_files"][0] == tries["prune_evidence"][0] == "success"

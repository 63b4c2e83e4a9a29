"""``contractctl housekeeping``: the housekeeping DAG's three tasks by hand, through the same function; ``--dry-run``
says per kind how many and how many bytes would go and removes nothing; a bad setting stops it before anything goes.
Airflow's metadata is the session's own Airflow home (the ``airflow`` command beside this Python)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.support.cli import run_cli

from contract_platform.store import EvidenceKind, SqlRegistry, Verdict

DAY = timedelta(days=1)


def write(path: Path, size: int, *, days_old: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x" * size)
    at = (datetime.now(UTC) - days_old * DAY).timestamp()
    os.utime(path, (at, at))
    return path


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "data"
    monkeypatch.setenv("CONTRACT_PLATFORM_HOME", str(data))
    monkeypatch.setenv("CONTRACT_JVM_CLASS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CONTRACT_REGISTRY_URL", f"sqlite:///{tmp_path / 'registry.db'}")
    for name in ("CONTRACT_RETENTION_LOGS", "CONTRACT_RETENTION_EVIDENCE", "CONTRACT_DOCS_DIR"):
        monkeypatch.delenv(name, raising=False)
    return data


def test_a_dry_run_counts_what_would_go_then_the_run_removes_it(home: Path, capsys: pytest.CaptureFixture[str]):
    old_log = write(home / "logs" / "cli" / "quality-old.log", 300, days_old=40)
    new_log = write(home / "logs" / "cli" / "quality-new.log", 100, days_old=1)
    stale = write(home.parent / "cache" / "spark-classes-bbbbbbbbbbbbbbbb.jsa", 500, days_old=60)
    mt = "billing.invoice-issued.v1"
    with SqlRegistry.open() as store:
        for days in (400, 300, 1):
            store.add_evidence(mt, contract_version="1.0.0", kind=EvidenceKind.LINT, verdict=Verdict.PASS,
                               figures={"secret": "payload"}, collected_at=datetime.now(UTC) - days * DAY)  # fmt: skip

    code, out, err = run_cli(capsys, "housekeeping", "--dry-run", "--json")

    assert code == 0, err
    report = json.loads(out)
    found = {p["kind"]: p for p in report["pruned"]}
    assert report["dryRun"] is True and all(p["dryRun"] for p in report["pruned"])
    assert (found["logs"]["removed"], found["logs"]["bytes"]) == (1, 300)
    assert (found["class_archives"]["removed"], found["class_archives"]["bytes"]) == (1, 500)
    assert found["evidence"]["removed"] == 2
    assert "airflow db clean --dry-run" in found["airflow_metadata"]["note"]
    assert "payload" not in out and "quality-old" not in out  # counts and bytes, never contents or names
    assert old_log.is_file() and stale.is_file()
    with SqlRegistry.open() as store:
        assert len(store.evidence(mt, limit=10)) == 3

    code, out, err = run_cli(capsys, "housekeeping")

    assert code == 0, err
    assert not old_log.exists() and not stale.exists() and new_log.is_file()
    with SqlRegistry.open() as store:
        assert len(store.evidence(mt, limit=10)) == 1
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:-1]}
    assert set(rows) == {"data_docs", "logs", "reports", "quarantine", "audit_copies", "class_archives", "evidence",
                         "airflow_metadata"}  # fmt: skip
    assert rows["logs"][3:5] == ["1", "300"] and rows["evidence"][3] == "2"
    assert out.splitlines()[-1].startswith("removed 4 files, folders and rows (800 bytes of files)")


@pytest.mark.parametrize("raw", ["30", "0d", "a month"])
def test_a_bad_setting_exits_2_naming_it_and_nothing_is_removed(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, raw: str
):
    old_log = write(home / "logs" / "cli" / "quality-old.log", 300, days_old=40)
    monkeypatch.setenv("CONTRACT_RETENTION_EVIDENCE", raw)

    code, out, err = run_cli(capsys, "housekeeping")

    assert code == 2 and out == ""
    assert err.startswith("contractctl: CONTRACT_RETENTION_EVIDENCE: ") and "default, 180d" in err, err
    assert "Traceback" not in err
    assert old_log.is_file()

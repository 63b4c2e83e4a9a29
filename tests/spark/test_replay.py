"""Replay on Spark (docs/replay.md): order.order-created.v1 traffic against a stricter ``orderId`` pattern."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.support.replay import NOW, ORDER, check_replay_args, tighten, write_archive

from contract_platform.catalog import load_catalog
from contract_platform.cli.main import main as contractctl
from contract_platform.replay.decision import Decision
from contract_platform.replay.run import replay_targets
from contract_platform.store import SqlRegistry
from spark_jobs import replay as job


@pytest.fixture()
def catalogue(tmp_path: Path, catalog_dir: Path) -> Path:
    return Path(shutil.copytree(catalog_dir, tmp_path / "contracts"))


def replay(spark: Any, archive: Path, catalog_dir: Path, old: dict[str, Any]) -> job.ReplayResult:
    catalog = load_catalog(catalog_dir)
    results = job.replay_archive(
        spark,
        str(archive),
        str(catalog_dir),
        catalog,
        lambda c: [("1.2.0", old)] if c.message_type == ORDER else [],
        only=[ORDER],
        in_flight=False,
        now=NOW,
    )
    assert [r.message_type for r in results] == [ORDER]
    return results[0]


def test_three_percent_violating_the_stricter_pattern_refuse_it_naming_pointer_keyword_and_count(
    spark, catalogue: Path, tmp_path: Path
):
    catalog_dir, old = tighten(catalogue, compatibility={"mode": "BACKWARD", "tightening": "evidence"})
    numbers = [10_000 + n for n in range(194)] + list(range(100, 106))  # 6 of 200: three digits only
    archive = write_archive(tmp_path / "archive", catalog_dir, numbers)

    result = replay(spark, archive, catalog_dir, old)

    figures = result.figures()
    assert result.decision.decision is Decision.REFUSED
    assert (figures["replayed"], figures["rejected"], figures["rejection_rate"]) == (200, 6, 0.03)
    assert figures["top_pointers"] == [{"pointer": "/payload/orderId", "keyword": "pattern", "count": 6}]
    assert len(figures["sample_message_ids"]) == 6
    assert not result.compatibility_ok
    assert any("/payload/orderId (pattern) in 6 messages" in p for p in result.problems())


def test_no_violation_under_the_opt_in_accepts_the_narrowing_as_a_minor_version(spark, catalogue, tmp_path):
    setting = {"mode": "BACKWARD", "tightening": "evidence", "window": "30d", "minMessages": 50}
    catalog_dir, old = tighten(catalogue, compatibility=setting)
    archive = write_archive(
        tmp_path / "archive", catalog_dir, [10_000 + n for n in range(60)], NOW - timedelta(days=20)
    )

    result = replay(spark, archive, catalog_dir, old)

    assert result.target.static.value == "breaking"
    assert result.decision.decision is Decision.ACCEPTED_ON_EVIDENCE
    assert result.compatibility_ok and result.problems() == []
    assert result.figures()["window_days"] == 30


def test_too_few_messages_in_the_window_is_unknown_never_a_pass(spark, catalogue, tmp_path):
    setting = {"tightening": "evidence", "minMessages": 100}
    catalog_dir, old = tighten(catalogue, compatibility=setting)
    archive = write_archive(tmp_path / "archive", catalog_dir, [10_000 + n for n in range(40)])
    write_archive(tmp_path / "archive", catalog_dir, [10_000 + n for n in range(500)], NOW - timedelta(days=8))

    result = replay(spark, archive, catalog_dir, old)

    assert result.figures()["replayed"] == 40  # the day before the 7-day window is not read
    assert result.decision.decision is Decision.UNKNOWN
    assert not result.compatibility_ok  # breaking stands
    assert "replay: no evidence (40 of 100 messages)" in result.figures()["reasons"]


def test_without_opt_in_the_static_verdict_stands_with_the_figures(spark, catalogue, tmp_path):
    catalog_dir, old = tighten(catalogue)
    archive = write_archive(tmp_path / "archive", catalog_dir, [10_000 + n for n in range(30)])

    result = replay(spark, archive, catalog_dir, old)

    assert result.decision.decision is Decision.NOT_APPLICABLE
    assert result.figures()["replayed"] == 30 and not result.compatibility_ok


def test_job_records_replay_and_compatibility_evidence_and_exits_1_when_refused(
    spark, catalogue: Path, tmp_path: Path, capsys
):
    catalog_dir, old = tighten(catalogue, compatibility={"tightening": "evidence"})
    today = datetime.now(UTC)
    archive = write_archive(tmp_path / "archive", catalog_dir, [10_000, 10_001, 12, 10_003], today)
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    registry = SqlRegistry.open(url)
    registry.snapshot_schema(ORDER, "1.2.0", old)
    registry.close()
    report = tmp_path / "replay.json"

    code = job.main(
        [str(archive), "--catalog", str(catalog_dir), "--registry-url", url, "--report", str(report), "--no-in-flight"]
    )

    assert code == 1
    written = json.loads(report.read_text(encoding="utf-8"))
    (order,) = [r for r in written["results"] if r["messageType"] == ORDER]
    assert written["ok"] is False and order["figures"]["rejected"] == 1
    registry = SqlRegistry.open(url)
    try:
        (replayed,) = registry.evidence(ORDER, "replay", limit=5)
        compatibility = registry.evidence(ORDER, "compatibility", limit=5)
    finally:
        registry.close()
    assert replayed.verdict == "fail" and replayed.figures["decision"] == "refused"
    assert compatibility[0].verdict == "fail" and compatibility[0].figures["decided_by"] == "replay"


def test_check_replay_format_json_shows_the_figures_per_version_and_fails(spark, catalogue, tmp_path, capsys):
    catalog_dir, old = tighten(catalogue, compatibility={"tightening": "evidence"})
    today = datetime.now(UTC)
    archive = write_archive(tmp_path / "archive", catalog_dir, [10_000 + n for n in range(97)] + [1, 2, 3], today)
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    registry = SqlRegistry.open(url)
    registry.snapshot_schema(ORDER, "1.2.0", old)
    registry.close()

    code = contractctl(check_replay_args(catalog_dir, url, archive))

    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["ok"] is False
    (replayed,) = [r for r in out["replay"] if r["messageType"] == ORDER]
    assert replayed["figures"]["decision"] == "refused"
    assert replayed["figures"]["top_pointers"] == [{"pointer": "/payload/orderId", "keyword": "pattern", "count": 3}]
    assert replayed["figures"]["in_flight"]["inspected"] is None  # not checked: said, never clean


def test_targets_are_versions_with_an_earlier_version_of_their_major(catalog_dir: Path):
    catalog = load_catalog(catalog_dir)
    old = catalog.get(ORDER).payload_schema  # type: ignore[union-attr]
    targets = replay_targets(catalog, lambda c: [("1.1.0", old)] if c.message_type == ORDER else [])
    assert ORDER in [t.contract.message_type for t in targets]


def test_a_new_major_replays_the_previous_majors_messages_migrated_through_its_spec(spark, catalog_dir, tmp_path):
    """billing.invoice-issued.v2: v1 traffic migrated by migration.yaml, then checked as v2 messages."""
    from benchmarks.generate_archive import archive_record

    catalog = load_catalog(catalog_dir)
    v1 = catalog.get("billing.invoice-issued.v1")
    assert v1 is not None
    template = json.loads(
        (catalog_dir / "billing/invoice-issued/v1/fixtures/valid/eur-issued-net30-inv-10001.json").read_text()
    )
    folder = tmp_path / "archive" / v1.transport.exchange / f"date={NOW.date().isoformat()}"
    folder.mkdir(parents=True)
    lines = []
    for number, amount in enumerate(["129.95"] * 19 + ["129.955"]):  # three decimals: no EUR minor units
        envelope = json.loads(json.dumps(template))
        envelope["metadata"]["messageId"] = f"m-{number}"
        envelope["payload"]["amount"] = amount
        lines.append(json.dumps(archive_record(v1, envelope, NOW.isoformat())))
    (folder / "part-0000.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    (result,) = job.replay_archive(
        spark,
        str(tmp_path / "archive"),
        str(catalog_dir),
        catalog,
        lambda _c: [],
        only=["billing.invoice-issued.v2"],
        in_flight=False,
        now=NOW,
    )

    figures = result.figures()
    assert (figures["source_type"], figures["migrated"]) == ("billing.invoice-issued.v1", True)
    assert (figures["replayed"], figures["rejected"]) == (20, 1)
    assert figures["top_pointers"] == [{"pointer": "/payload/amount", "keyword": "migration", "count": 1}]
    assert figures["sample_message_ids"] == ["m-19"] and result.decision.decision is Decision.REFUSED


def test_check_replay_of_an_archive_that_does_not_exist_says_where_and_exits_2(catalog_dir, tmp_path, capsys):
    missing = tmp_path / "no-such-archive"
    url = f"sqlite:///{tmp_path / 'registry.db'}"

    code = contractctl(["check", str(catalog_dir), "--registry-url", url, "--replay", str(missing), "--no-in-flight"])

    assert code == 2
    assert f"no archive at {missing}" in capsys.readouterr().err


def test_a_run_with_nothing_to_replay_reports_so_without_starting_a_jvm(catalog_dir: Path, tmp_path: Path):
    """A change that narrowed no schema (no earlier version of its major, no migration) has nothing to replay:
    the job writes its empty report and exits 0, and the process never launched a JVM."""
    import subprocess
    import sys

    report = tmp_path / "replay.json"
    (tmp_path / "archive").mkdir()
    args = [str(tmp_path / "archive"), "--catalog", str(catalog_dir), "--report", str(report), "--no-in-flight"]
    probe = (
        "import sys; from pyspark import SparkContext; from spark_jobs import replay; "
        f"code = replay.main({[*args, '--only', 'quote.quote-approved.v1']!r}); "
        "print('jvm' if SparkContext._gateway is not None else 'no jvm'); sys.exit(code)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "no jvm"
    assert json.loads(report.read_text(encoding="utf-8")) == {"ok": True, "results": [], "problems": [], "lifted": []}

"""The parity job on small generated v1/v2 archives: a clean migration, then every defect counted exactly.

v2 messages are built from the v2 fixtures (the catalogue's README: a v1 fixture migrated is the v2
fixture of the same name), not by the migration engine, so the job's re-migration is checked against
an independent truth. One archive per scenario; each is judged once per module.
"""

from __future__ import annotations

import copy
import json
import math
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from contract_platform.migration import ParityReport
from contract_platform.store import SqlRegistry
from spark_jobs import dual_publish_parity as job

pytestmark = pytest.mark.spark

V1 = "billing.invoice-issued.v1"
V2 = "billing.invoice-issued.v2"
EXCHANGE = "billing.events"
FIXTURES = ("eur-issued-net30-inv-10001", "jpy-prepaid-paid-inv-10002", "kwd-three-decimals-inv-10003")
START = datetime(2026, 7, 1, 10, 0, tzinfo=UTC)


def received(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass
class Archive:
    """Archive records in the order they are written, and what the generator knows about each twin."""

    root: Path
    lines: list[dict[str, Any]] = field(default_factory=list)
    lags_ms: dict[str, int] = field(default_factory=dict)  # messageId -> v2 - v1 receivedAt of the first copies

    def add(self, envelope: dict[str, Any], at: datetime, *, redelivered: bool = False) -> None:
        metadata = envelope["metadata"]
        self.lines.append(
            {
                "exchange": EXCHANGE,
                "routingKey": f"billing.invoice.issued.v{metadata['schemaVersion']}",
                "receivedAt": received(at),
                "redelivered": redelivered,
                "properties": {"messageId": metadata["messageId"], "type": metadata["messageType"]},
                "body": json.dumps(envelope),
                "bodyBase64": None,
            }
        )

    def write(self) -> Path:
        folder = self.root / EXCHANGE / f"date={START.date().isoformat()}"
        folder.mkdir(parents=True, exist_ok=True)
        half = len(self.lines) // 2  # two files, as two archiver batches would leave
        for n, part in enumerate((self.lines[:half], self.lines[half:])):
            (folder / f"archiver-{n}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in part))
        (self.root / "order.events").mkdir(exist_ok=True)  # another exchange: never read
        return self.root


def twins(catalog, count: int, keys: int = 3) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``count`` v1/v2 pairs from the fixtures: new messageIds, ``keys`` partition keys, increasing versions."""
    v1, v2 = catalog.get(V1), catalog.get(V2)
    pairs = []
    for n in range(count):
        name = FIXTURES[n % len(FIXTURES)]
        old = json.loads((v1.directory / "fixtures" / "valid" / f"{name}.json").read_text())
        new = json.loads((v2.directory / "fixtures" / "valid" / f"{name}.json").read_text())
        message_id = str(uuid.UUID(int=n + 1))
        for envelope in (old, new):
            envelope["metadata"].update(messageId=message_id, partitionKey=f"inv-{n % keys}")
            envelope["payload"]["aggregateVersion"] = n // keys + 1
        pairs.append((old, new))
    return pairs


def percentile(values: list[int], p: float) -> float:
    """percentile_approx on a few values: the smallest value with at least p of them at or below it."""
    ordered = sorted(values)
    return float(ordered[max(math.ceil(p * len(ordered)) - 1, 0)])


def clean_archive(root: Path, catalog, *, count: int = 24, dual_publish: bool = False) -> Archive:
    archive = Archive(root)
    for n, (old, new) in enumerate(twins(catalog, count)):
        at = START + timedelta(seconds=n)
        lag = 5 + 3 * n
        if dual_publish:  # the producer publishes v2 itself, a moment later, as 2.0.0
            new["metadata"].update(publishedAt=received(at + timedelta(milliseconds=lag)), messageVersion="2.0.0")
        archive.add(old, at)
        archive.add(new, at + timedelta(milliseconds=lag))
        archive.lags_ms[old["metadata"]["messageId"]] = lag
    return archive


@dataclass
class Defects:
    archive: Archive
    missing: list[str]
    not_migratable: str
    extra: str
    duplicated: list[str]
    mismatched: dict[str, str]
    out_of_order: str


def defective_archive(root: Path, catalog) -> Defects:
    """30 v1 messages over 3 keys with: 2 missing (1 not migratable), 1 extra, 2 extra copies (1 redelivered),
    2 mismatches (payload, metadata), 1 pair of the same key whose v2 copies arrive swapped."""
    archive = Archive(root)
    pairs = twins(catalog, 30)
    ids = [old["metadata"]["messageId"] for old, _ in pairs]
    missing, not_migratable = [ids[4], ids[9]], ids[9]
    pairs[9][0]["payload"]["amount"] = "129.955"  # EUR with 3 decimals: the bridge parks it
    duplicated = [ids[2], ids[5]]
    mismatched = {ids[7]: "/payload/amountMinorUnits", ids[11]: "/metadata/traceId"}
    pairs[7][1]["payload"]["amountMinorUnits"] += 1
    pairs[11][1]["metadata"]["traceId"] = "f" * 32
    swapped = (12, 15)  # both key inv-0: v1 12 before 15, v2 15 before 12
    times = {n: START + timedelta(seconds=n) for n in range(30)}
    v2_times = {n: times[n] + timedelta(milliseconds=10 + n) for n in range(30)}
    v2_times[swapped[0]], v2_times[swapped[1]] = v2_times[swapped[1]] + timedelta(milliseconds=1), v2_times[swapped[0]]
    for n, (old, _) in enumerate(pairs):
        archive.add(old, times[n])
    for n in sorted(range(30), key=lambda n: v2_times[n]):
        if ids[n] in missing:
            continue
        archive.add(pairs[n][1], v2_times[n])
        archive.lags_ms[ids[n]] = round((v2_times[n] - times[n]).total_seconds() * 1000)
    archive.add(pairs[2][1], v2_times[2] + timedelta(seconds=40), redelivered=True)  # the archiver got it again
    archive.add(pairs[5][1], v2_times[5] + timedelta(seconds=41))  # published again (a bridge restart)
    stray = copy.deepcopy(pairs[0][1])
    stray["metadata"]["messageId"] = extra = str(uuid.UUID(int=999))
    archive.add(stray, START + timedelta(seconds=42))
    return Defects(archive, missing, not_migratable, extra, duplicated, mismatched, ids[swapped[0]])


# -- scenarios ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def clean(spark, catalog, catalog_dir, tmp_path_factory) -> tuple[Archive, int, dict[str, Any], Path]:
    """The clean bridge archive, through ``main`` (report file + evidence in a registry)."""
    tmp = tmp_path_factory.mktemp("clean")
    archive = clean_archive(tmp / "archive", catalog)
    archive.write()
    registry_url = f"sqlite:///{tmp / 'registry.db'}"
    argv = [V1, "--archive", str(archive.root), "--catalog", str(catalog_dir), "--report", str(tmp / "report.json")]
    code = job.main([*argv, "--registry-url", registry_url, "--run-id", "run-clean"])
    return archive, code, json.loads((tmp / "report.json").read_text()), tmp


@pytest.fixture(scope="module")
def defects(spark, catalog, catalog_dir, tmp_path_factory) -> tuple[Defects, ParityReport]:
    generated = defective_archive(tmp_path_factory.mktemp("defects") / "archive", catalog)
    generated.archive.write()
    return generated, job.run_parity(spark, V1, generated.archive.root, catalog_dir, mode="bridge")


def test_clean_migration_has_full_parity_and_records_passing_evidence(clean):
    archive, code, report, tmp = clean
    assert code == 0
    assert (report["verdict"], report["parity"], report["v1_total"], report["v2_total"]) == ("pass", 1.0, 24, 24)
    for kind in ("missing", "extra", "duplicates", "redeliveries", "mismatches", "out_of_order"):
        assert report[kind] == 0, kind
    assert report["ordering_checked"] is True
    lags = list(archive.lags_ms.values())
    assert (report["lag_p50_ms"], report["lag_p99_ms"]) == (percentile(lags, 0.5), percentile(lags, 0.99))
    assert report["window"]["first"] == "2026-07-01T10:00:00.000Z"
    with SqlRegistry.open(f"sqlite:///{tmp / 'registry.db'}") as registry:
        evidence = registry.latest_evidence(V1, "migration_parity")
    assert str(evidence.verdict) == "pass" and evidence.run_id == "run-clean"
    assert evidence.figures["mode"] == "bridge" and evidence.figures["parity"] == 1.0
    assert evidence.reference == str(tmp / "report.json")


def test_each_defect_is_counted_exactly(defects):
    generated, report = defects
    assert (report.v1_total, report.v2_total) == (30, 29)  # 28 twins + 1 extra
    assert (report.missing, report.missing_not_migratable) == (2, 1)
    assert report.extra == 1
    assert (report.duplicates, report.redeliveries) == (2, 1)
    assert report.mismatches == 2
    assert report.out_of_order == 1
    assert report.matched == 26 and report.parity == pytest.approx(26 / 30)
    assert str(report.verdict) == "fail" and report.exit_code == 1


def test_samples_name_the_messages_and_say_what_is_wrong(defects):
    generated, report = defects
    assert report.samples["missing"] == sorted(generated.missing)
    assert report.samples["extra"] == [generated.extra]
    assert report.samples["duplicates"] == sorted(generated.duplicated)
    assert report.samples["mismatches"] == sorted(generated.mismatched)
    assert report.samples["out_of_order"] == [generated.out_of_order]
    for message_id, pointer in generated.mismatched.items():
        assert pointer in report.details[message_id]
    assert "not migratable: /payload/amount" in report.details[generated.not_migratable]
    problems = " ".join(report.problems())
    assert "2 billing.invoice-issued.v1 messages have no billing.invoice-issued.v2 twin" in problems


def test_lag_percentiles_are_over_the_twins(defects):
    generated, report = defects
    lags = list(generated.archive.lags_ms.values())
    assert len(lags) == 28
    assert (report.lag_p50_ms, report.lag_p99_ms) == (percentile(lags, 0.5), percentile(lags, 0.99))


def test_dual_publish_in_a_window(spark, catalog, catalog_dir, tmp_path):
    """Producers publish both (own publishedAt, 2.0.0): parity holds; the window bounds what is judged."""
    archive = clean_archive(tmp_path / "archive", catalog, count=12, dual_publish=True)
    archive.write()
    since, until = START + timedelta(seconds=3), START + timedelta(seconds=9)  # v1 messages 3..8
    report = job.run_parity(spark, V1, archive.root, catalog_dir, mode="dual-publish", since=since, until=until)
    assert (report.v1_total, report.matched, report.v2_total) == (6, 6, 6)
    assert report.holds and report.extra == 0 and report.figures()["mode"] == "dual-publish"
    assert report.window["since"] == since.isoformat() and report.window["last"] == "2026-07-01T10:00:08.000Z"


def test_bad_input_exits_2_before_spark_runs(spark, tmp_path, catalog_dir, capsys):
    assert job.main([V2, "--catalog", str(catalog_dir), "--archive", str(tmp_path)]) == 2
    assert "no successor" in capsys.readouterr().err
    assert job.main([V1, "--since", "yesterday"]) == 2
    assert job.main([V1, "--catalog", str(catalog_dir), "--archive", str(tmp_path / "nowhere")]) == 2
    assert "archive root does not exist" in capsys.readouterr().err

"""The Spark archive validation on generated archives with known defects of every kind.

One archive (a few hundred records, gzipped and plain, 2 exchanges, 2 dates, empty files, an empty
partition) is validated once per module; the tests check the report against what the generator
injected, the quarantine, the verdicts against the jsonschema library, and the job's bad inputs.
"""

from __future__ import annotations

import gzip
import importlib.metadata
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pyspark
import pytest
from benchmarks.generate_archive import DEFECTS, ArchiveSpec, GeneratedArchive, archive_record, generate_archive
from pyspark.sql import functions as F

from contract_platform.archive_record import record_type
from contract_platform.catalog import Catalog
from contract_platform.envelope import EnvelopeValidator
from contract_platform.errors import ArchiveError, UsageError
from contract_platform.store import SqlRegistry
from contract_platform.validation import Keyed, Reason, ValidationReport, sequence_findings
from contract_platform.validation.arrow import finding_of
from contract_platform.validation.report import NO_TYPE
from contract_platform.validation.request import ValidationRequest
from spark_jobs import archive_splits as cutting
from spark_jobs import validate_archive as job

pytestmark = pytest.mark.spark

TYPES = ("billing.invoice-issued.v1", "billing.invoice-issued.v2", "order.order-created.v1")  # 2 exchanges
STATUSES = {"billing.invoice-issued.v1": "retired", "order.order-created.v1": "deprecated"}
TEN_MB = 10_000_000


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory, catalog: Catalog) -> GeneratedArchive:
    defects = {kind: 2 for kind in DEFECTS}
    defects.update({"OVERSIZE": 1, "MALFORMED:nested-10000-deep": 1})
    spec = ArchiveSpec(
        messages=320,
        defects=defects,
        message_types=TYPES,
        compression="mixed",
        oversize_body_bytes=TEN_MB,
        statuses=STATUSES,
        seed=11,
    )
    root = tmp_path_factory.mktemp("archive")
    generated = generate_archive(root, catalog, spec)
    (root / "billing.events" / "date=2026-07-01" / "part-empty.jsonl").write_bytes(b"")
    with gzip.open(root / "order.events" / "date=2026-07-02" / "part-empty.jsonl.gz", "wb"):
        pass
    (root / "order.events" / "date=2026-07-03").mkdir()  # a partition with nothing in it
    (root / "billing.events" / "README.txt").write_text("not an archive file", encoding="utf-8")
    return generated


@pytest.fixture(scope="module")
def validated(spark, archive: GeneratedArchive, catalog_dir: Path, tmp_path_factory) -> tuple[ValidationReport, Path]:
    out = tmp_path_factory.mktemp("validated")
    report = job.run_validation(
        spark,
        ValidationRequest(
            archive.root,
            catalog=catalog_dir,
            report=out / "report.json",
            quarantine=out / "quarantine",
            statuses=STATUSES,
        ),
    )
    return report, out


def read_lines(path: Path) -> list[str]:
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            return lines.read().splitlines()
    return path.read_text(encoding="utf-8").splitlines()


def by_type_and_reason(report: ValidationReport) -> Counter[tuple[str, str | None]]:
    found: Counter[tuple[str, str | None]] = Counter()
    for name, figures in report.by_type.items():
        found[(name, None)] += figures.totals.valid
        for reason, count in figures.by_reason.items():
            found[(name, str(reason))] += count
    return +found


def test_the_archive_has_every_kind_of_defect(archive: GeneratedArchive):
    assert set(archive.defects) == set(DEFECTS)
    reasons = {reason for _, reason in archive.expected if reason}
    # Every reason code is expected at least once, but UNCHECKABLE: it means a rule raised, which no archive
    # can be made to do on purpose (tests/unit/validation/test_records_hostile.py makes one raise).
    assert reasons == {str(r) for r in Reason} - {str(Reason.UNCHECKABLE)}


def test_counts_per_reason_and_per_type_are_exact(validated, archive: GeneratedArchive):
    report, _ = validated
    assert by_type_and_reason(report) == +archive.expected
    assert {str(r): n for r, n in report.by_reason.items()} == archive.expected_by_reason
    totals = report.totals
    assert totals.records == archive.records
    assert (
        totals.records
        == totals.valid + totals.invalid + totals.counted_only
        == totals.valid + sum(report.by_reason.values())
    )  # nothing dropped without being counted
    assert set(report.figures.by_type[NO_TYPE].by_reason) == {Reason.MALFORMED}
    assert report.input.files == len(archive.files) + 2  # the two empty files count, README.txt does not
    assert report.exit_code == 1


def test_the_report_file_and_quarantine_hold_every_invalid_record_with_all_its_reasons(validated):
    report, out = validated
    assert json.loads((out / "report.json").read_text(encoding="utf-8")) == json.loads(json.dumps(report.to_dict()))
    lines = [
        json.loads(line)
        for part in sorted((out / "quarantine").glob("part-*"))
        for line in part.read_text(encoding="utf-8").splitlines()
    ]
    assert len(lines) == report.totals.invalid
    firsts = Counter(line["reasons"][0]["code"] for line in lines)
    assert firsts == {str(r): n for r, n in report.by_reason.items() if r.invalid}
    for line in lines:
        ranks = [Reason(r["code"]).rank for r in line["reasons"]]
        assert ranks == sorted(ranks) and all(r["path"] is not None and r["message"] for r in line["reasons"])
        assert ("exchange" in line) != ("rawLine" in line)  # the original record, or the raw text of a broken line
    several = [line for line in lines if len({r["code"] for r in line["reasons"]}) > 1]
    assert several, "records of retired or deprecated types carry two reasons at least"


def test_verdicts_equal_the_jsonschema_library_message_by_message(spark, tmp_path: Path, catalog: Catalog, catalog_dir):
    """Valid and invalid generated traffic: every fixture, and random changes of each, archived and checked."""
    rng = random.Random(5)
    strange: list[Any] = [None, 0, -1, 1.5, "", "x", "2026-06-30T23:59:60Z", "2026-02-30", "a@", [], {}, "EUR\n"]
    lines = []
    for contract in catalog:
        valid = next(f.document for f in contract.fixtures if f.valid)
        record = archive_record(contract, valid, "2026-07-01T10:00:00Z")
        for fixture in contract.fixtures:
            for number in range(8):
                envelope = json.loads(json.dumps(fixture.document))
                if number:
                    section = envelope[rng.choice(["metadata", "payload", "payload"])]
                    section[rng.choice(sorted(section))] = rng.choice(strange)
                lines.append(json.dumps(record | {"body": json.dumps(envelope)}))
    path = tmp_path / "x.events" / "date=2026-07-01" / "part-0000.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    _, splits = cutting.archive_splits(spark, cutting.list_archive(spark, str(path)))
    rows = job.check_records(splits, catalog_dir, keep_lines=True).collect()
    reference = EnvelopeValidator(catalog)
    compared = invalid = 0
    for row in rows:
        archived = json.loads(row["line"])  # keep_lines: every line is there
        document = json.loads(archived["body"])
        message_type = record_type(archived, document)  # a broken messageType: the type property's contract
        found = [finding_of(f) for f in row["findings"] or []]
        envelope = [(f.path, f.message) for f in found if f.code is Reason.ENVELOPE_INVALID]
        payload = [(f.path, f.message) for f in found if f.code is Reason.PAYLOAD_INVALID]
        assert envelope == [(i.pointer, i.message) for i in reference.envelope_issues(document)]
        contract = catalog.get(message_type) if isinstance(message_type, str) else None
        known = contract is not None and isinstance(document.get("payload"), dict)
        expected = reference.payload_issues(contract, document["payload"]) if known else []
        assert payload == [(i.pointer, i.message) for i in expected]
        compared += 1
        invalid += bool(envelope or payload)
    assert compared == len(lines) and invalid > len(lines) // 3


def test_cross_record_rules_equal_the_plain_python_reference(spark, archive: GeneratedArchive, catalog, catalog_dir):
    _, splits = cutting.archive_splits(spark, cutting.list_archive(spark, str(archive.root)))
    checked = job.check_records(splits, catalog_dir).cache()
    paths = {c.message_type: c.ordering.sequence for c in catalog if c.ordering is not None}
    duplicates = job.find_duplicates(checked)
    flagged = duplicates.unionByName(job.find_out_of_order(checked, paths, duplicates)).collect()
    spark_found = {row["record_id"]: finding_of(row["finding"]) for row in flagged}
    assert len(spark_found) == len(flagged)  # one cross-record finding per record at most
    rows = checked.drop("line").collect()
    keyed = [
        Keyed(
            r["record_id"],
            r["message_type"],
            r["message_id"],
            r["payload_hash"],
            r["received_at"],
            r["received_us"],
            r["order_key"],
            r["sequence"],
        )
        for r in rows
    ]
    expected = sequence_findings(keyed, paths)
    assert spark_found == expected
    assert Counter(f.code for f in expected.values()) == {
        Reason.DUPLICATE: 2,
        Reason.CONFLICTING_DUPLICATE: 2,
        Reason.OUT_OF_ORDER: 2,
    }
    checked.unpersist()


def test_plain_files_cut_into_many_splits_give_the_same_report(spark, archive, catalog_dir, validated, tmp_path):
    report, _ = validated
    plain = [p for p in archive.files if p.suffix == ".jsonl"]
    assert plain and max(p.stat().st_size for p in plain) > 8192  # several splits per file at 4 KiB
    spark.conf.set("spark.sql.files.maxPartitionBytes", "4k")
    try:
        splits, _ = cutting.archive_splits(spark, cutting.list_archive(spark, str(archive.root)))
        again = job.run_validation(
            spark, ValidationRequest(archive.root, catalog=catalog_dir, quarantine=tmp_path / "q", statuses=STATUSES)
        )
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert len(splits) > len(archive.files) + 2
    assert again.figures == report.figures
    assert sum(1 for p in (tmp_path / "q").glob("part-*") for _ in p.open()) == report.totals.invalid


def test_main_writes_report_quarantine_and_evidence_with_a_catalogue_that_has_lint_findings(
    spark, archive: GeneratedArchive, catalog_copy: Path, tmp_path: Path, capsys
):
    schema_file = catalog_copy / "order" / "order-created" / "v1" / "payload.schema.json"
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    del schema["properties"]["orderId"]["description"]  # a lint finding, not a loading problem
    schema_file.write_text(json.dumps(schema), encoding="utf-8")
    date_folder = archive.root / "order.events" / "date=2026-07-02"
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    report_file, quarantine = tmp_path / "report.json", tmp_path / "quarantine"

    code = job.main(
        [
            str(date_folder),
            "--catalog",
            str(catalog_copy),
            "--report",
            str(report_file),
            "--quarantine",
            str(quarantine),
        ]
        + ["--registry-url", url, "--status", "order.order-created.v1=deprecated"]
    )

    report = json.loads(report_file.read_text(encoding="utf-8"))
    expected_lines = sum(len(read_lines(p)) for p in date_folder.glob("*.jsonl*"))
    assert report["totals"]["records"] == expected_lines > 0
    assert code == (1 if report["totals"]["invalid"] else 0)
    assert json.loads(capsys.readouterr().out)["totals"] == report["totals"]
    assert sum(1 for p in quarantine.glob("part-*") for _ in p.open()) == report["totals"]["invalid"]
    with SqlRegistry.open(url) as registry:
        evidence = registry.latest_evidence("order.order-created.v1", "archive_validation")
    assert evidence is not None and evidence.figures["total"] == report["by_type"]["order.order-created.v1"]["records"]
    assert evidence.reference == str(report_file)


def test_a_path_that_does_not_exist_exits_2_with_a_clear_message(spark, tmp_path: Path, catalog_dir: Path, capsys):
    missing = tmp_path / "no-such-archive"
    assert job.main([str(missing), "--catalog", str(catalog_dir)]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and "does not exist" in err and "Traceback" not in err


def test_a_catalogue_that_does_not_load_exits_2_one_line_per_problem(catalog_copy: Path, tmp_path: Path, capsys):
    (catalog_copy / "order" / "order-created" / "v1" / "contract.yaml").write_text("messageType: [", encoding="utf-8")
    (catalog_copy / "quote" / "quote-approved" / "v1" / "payload.schema.json").write_text("{", encoding="utf-8")
    assert job.main([str(tmp_path), "--catalog", str(catalog_copy)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)
    assert "contract.yaml" in err[0] + err[1] and "payload.schema.json" in err[0] + err[1]


def test_a_quarantine_folder_with_other_files_is_refused(spark, archive, catalog_dir: Path, tmp_path: Path):
    (tmp_path / "keep.txt").write_text("someone's file", encoding="utf-8")
    single = next(p for p in archive.files if p.suffix == ".jsonl")
    with pytest.raises(UsageError, match="not empty"):
        job.run_validation(spark, ValidationRequest(single, catalog=catalog_dir, quarantine=tmp_path))
    assert (tmp_path / "keep.txt").exists()


def test_python_udfs_run_so_pyspark_and_pyspark_client_agree(spark):
    assert pyspark.__version__ == importlib.metadata.version("pyspark") == importlib.metadata.version("pyspark-client")
    plus_one = F.udf(lambda x: x + 1, "long")
    assert [row[0] for row in spark.range(3).select(plus_one("id")).collect()] == [1, 2, 3]


def test_an_archive_file_gone_before_it_is_read_stops_the_job_with_its_name(
    spark, archive, catalog_dir: Path, tmp_path: Path, monkeypatch
):
    gone = tmp_path / "billing.events" / "date=2026-07-01" / "part-9999.jsonl"
    listed = cutting.list_archive(spark, str(archive.root))
    monkeypatch.setattr(job, "list_archive", lambda spark, path, *_range: [*listed, (gone.as_uri(), 100)])
    with pytest.raises(ArchiveError, match="part-9999.jsonl: cannot open the archive file"):
        job.run_validation(spark, ValidationRequest(archive.root, catalog=catalog_dir))


@pytest.mark.parametrize(
    ("setting", "expected"),
    [("134217728", 134217728), ("128m", 128 * 2**20), ("4k", 4096), ("1g", 2**30), ("64MB", 64 * 2**20), ("", 7)],
)
def test_split_size_settings_are_read_as_spark_writes_them(setting: str, expected: int):
    assert cutting.bytes_setting(setting, 7) == expected


def test_many_records_to_read_again_are_grouped_by_spark_with_the_same_quarantine(
    spark, archive, catalog_dir: Path, validated, tmp_path: Path, monkeypatch
):
    _, out = validated
    monkeypatch.setattr(job, "_COLLECT_ROWS", 0)  # every record invalid only by a cross-record rule: Spark's way
    job.run_validation(
        spark, ValidationRequest(archive.root, catalog=catalog_dir, quarantine=tmp_path / "q", statuses=STATUSES)
    )

    def lines(folder: Path) -> list[str]:
        return sorted(line for part in folder.glob("part-*") for line in part.read_text(encoding="utf-8").splitlines())

    assert lines(tmp_path / "q") == lines(out / "quarantine")
    reasons = Counter(json.loads(line)["reasons"][0]["code"] for line in lines(tmp_path / "q"))
    assert reasons["CONFLICTING_DUPLICATE"] and reasons["OUT_OF_ORDER"]


def test_a_damaged_gzip_file_is_read_as_far_as_it_goes_and_the_rest_is_counted(
    spark, catalog: Catalog, catalog_dir: Path, tmp_path: Path
):
    contract = catalog.get("order.order-created.v1")
    valid = next(f.document for f in contract.fixtures if f.valid)
    line = json.dumps(archive_record(contract, valid, "2026-07-01T10:00:00Z")).encode()
    path = tmp_path / "order.events" / "date=2026-07-01" / "part-0000.jsonl.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(gzip.compress(line + b"\n") + b"not gzip at all")
    report = job.run_validation(spark, ValidationRequest(tmp_path, catalog=catalog_dir, quarantine=tmp_path / "q"))
    assert report.totals.records == 2 and report.totals.valid == 1
    assert report.by_reason[Reason.MALFORMED] == 1
    [quarantined] = [json.loads(x) for p in (tmp_path / "q").glob("part-*") for x in p.read_text().splitlines()]
    assert quarantined["rawLine"].startswith("<archive file damaged: bytes ") and "not read" in quarantined["rawLine"]


def test_messages_received_after_a_retirement_are_reported_per_producer(
    spark, catalog: Catalog, catalog_dir: Path, tmp_path: Path
):
    """order.order-created.v1 retired on 2026-07-02: what arrived before is history, what arrived after is named
    per producer with its count and times, in the report and as retired_traffic evidence."""
    import copy

    from contract_platform.evidence.figures import ProducerTraffic, RetiredTrafficFigures
    from contract_platform.validation import record_evidence

    contract = catalog.get("order.order-created.v1")
    valid = next(f.document for f in contract.fixtures if f.valid)
    sent = [
        ("2026-07-01T23:00:00Z", "order-service"),
        ("2026-07-02T08:00:00Z", "order-service"),
        ("2026-07-02T09:30:00Z", "order-service"),
        ("2026-07-02T10:00:00Z", "legacy-order-feed"),
    ]
    lines = []
    for number, (received, producer) in enumerate(sent):
        envelope = copy.deepcopy(valid)
        envelope["metadata"].update(messageId=f"m-{number}", producer=producer, partitionKey=f"ord-{number}")
        lines.append(json.dumps(archive_record(contract, envelope, received)))
    path = tmp_path / "archive" / "order.events" / "date=2026-07-02" / "part-0000.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    statuses = {"order.order-created.v1": "retired@2026-07-02T00:00:00+00:00"}

    report = job.run_validation(spark, ValidationRequest(tmp_path / "archive", catalog=catalog_dir, statuses=statuses))

    figures = report.by_type["order.order-created.v1"]
    assert figures.by_reason[Reason.DEPRECATED_TYPE] == 1 and figures.retired_traffic is not None
    assert [(p.producer, p.messages) for p in figures.retired_traffic.producers] == [
        ("order-service", 2),
        ("legacy-order-feed", 1),
    ]
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    with SqlRegistry.open(url) as registry:
        record_evidence(report, catalog, registry)
        alarm = registry.latest_evidence("order.order-created.v1", "retired_traffic")
    assert alarm is not None and str(alarm.verdict) == "fail"
    assert RetiredTrafficFigures.of(alarm).by_producer[0] == ProducerTraffic(
        "order-service", 2, "2026-07-02T08:00:00.000000Z", "2026-07-02T09:30:00.000000Z"
    )

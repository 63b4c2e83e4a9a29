"""How records are counted: once, under their first reason; records == valid + invalid + counted_only."""

from __future__ import annotations

import json

from contract_platform.validation import Figures, Group, Reason, ValidationReport
from contract_platform.validation.report import NO_TYPE, InputFigures

R = Reason
GROUPS = [
    Group("order.order-created.v1", None, 90, 90_000, 1782900000000000, 1782900900000000),
    Group("order.order-created.v1", R.PAYLOAD_INVALID.rank, 6, 6_000, 1782900100000000, 1782900200000000),
    Group("order.order-created.v1", R.DUPLICATE.rank, 4, 4_000, 1782900300000000, 1782900400000000),
    Group("billing.invoice-issued.v1", R.DEPRECATED_TYPE.rank, 50, 50_000, 1782800000000000, 1782800000000000),
    Group("billing.invoice-issued.v1", R.OUT_OF_ORDER.rank, 1, 1_000, None, None),
    Group(None, R.MALFORMED.rank, 3, 300, None, None),
]


def test_totals_buckets_add_up_to_the_records():
    figures = Figures.from_groups(GROUPS)
    totals = figures.totals
    assert (totals.records, totals.valid, totals.invalid, totals.counted_only) == (154, 90, 10, 54)
    assert totals.records == totals.valid + sum(figures.by_reason.values())
    assert figures.by_reason == {
        R.MALFORMED: 3,
        R.PAYLOAD_INVALID: 6,
        R.DUPLICATE: 4,
        R.OUT_OF_ORDER: 1,
        R.DEPRECATED_TYPE: 50,
    }
    assert figures.line_bytes == 151_300


def test_per_type_figures_and_invalid_rate():
    by_type = Figures.from_groups(GROUPS).by_type
    assert list(by_type) == [NO_TYPE, "billing.invoice-issued.v1", "order.order-created.v1"]
    order = by_type["order.order-created.v1"]
    assert (order.totals.records, order.totals.invalid, order.totals.counted_only) == (100, 6, 4)
    assert order.invalid_rate == 0.06
    assert order.window.first_received_at == "2026-07-01T10:00:00.000000Z"
    assert by_type["billing.invoice-issued.v1"].invalid_rate == 1 / 51


def test_window_and_top_paths():
    paths = [(f"/payload/f{i}", i) for i in range(30)] + [("/payload/a", 29)]
    figures = Figures.from_groups(GROUPS, paths)
    assert figures.window.first_received_at == "2026-06-30T06:13:20.000000Z"
    assert figures.window.last_received_at == "2026-07-01T10:15:00.000000Z"
    assert len(figures.top_error_paths) == 20
    assert [(p.path, p.count) for p in figures.top_error_paths[:3]] == [
        ("/payload/a", 29),  # ties by path
        ("/payload/f29", 29),
        ("/payload/f28", 28),
    ]


def test_the_json_report_has_every_field_and_every_reason():
    report = ValidationReport(
        archive="/data/archive",
        catalog="/data/contracts",
        catalog_fingerprint="sha256:00",
        figures=Figures.from_groups(GROUPS, [("/payload/x", 6)]),
        input=InputFigures(files=3, bytes=4_000),
        elapsed_seconds=2.0,
        quarantine="/data/quarantine",
    )
    data = json.loads(json.dumps(report.to_dict()))
    assert set(data) >= {
        "archive", "catalog", "totals", "by_reason", "by_type", "top_error_paths", "window", "input",
        "elapsed_seconds", "throughput", "quarantine", "options",
    }  # fmt: skip
    assert list(data["by_reason"]) == [str(r) for r in Reason]
    assert data["by_type"]["order.order-created.v1"]["invalid_rate"] == 0.06
    assert data["throughput"] == {"records_per_second": 77.0, "megabytes_per_second": 0.076}
    assert data["input"] == {"files": 3, "bytes": 4_000, "line_bytes": 151_300}
    assert data["quarantine"] == {"path": "/data/quarantine", "records": 10}
    assert report.exit_code == 1
    assert ValidationReport("a", "c", "f", Figures.from_groups(GROUPS[:1]), InputFigures(), 1.0).exit_code == 0

"""``contractctl quality`` in a terminal says which expectations were skipped for a type, and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from contract_platform.cli.main import main as contractctl
from contract_platform.quality import ExpectationId as E
from contract_platform.quality import ExpectationResult, QualityReport, TypeQuality

GENERATE = "billing.generate-invoice.v1"
WHY = "billing.generate-invoice.v1 is a command without callers in contract.yaml: declare callers: [...]"


def test_the_summary_names_each_skipped_expectation_with_its_reason(
    catalog_dir: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
):
    pytest.importorskip("pyspark")
    from spark_jobs import envelope_quality as job
    from spark_jobs import session

    judged = ExpectationResult(E.MESSAGE_ID_NOT_NULL, "expect_column_values_to_not_be_null", 1.0, True, 8, 0, 1.0)
    quality = TypeQuality(GENERATE, "1.0.0", 8, (judged,), skipped={E.PRODUCER_IS_OWNER_SERVICE: WHY})
    report = QualityReport(types=(quality,), data_docs=None, gx_root=str(tmp_path))
    monkeypatch.setattr(session, "build_session", lambda *args, **kwargs: (object(), False))  # no JVM
    monkeypatch.setattr(job, "run_quality", lambda *args, **kwargs: report)

    assert contractctl(["quality", str(tmp_path), "--catalog", str(catalog_dir)]) == 0
    out = capsys.readouterr().out
    assert f"{GENERATE}: pass (8 envelopes, 0 failed)" in out
    assert f"  {E.PRODUCER_IS_OWNER_SERVICE} skipped: {WHY}" in out

"""envelope_quality run in-process (dag.test): the Spark job through spark-submit on local[2], then the lifecycle.

One run (a spark-submit costs tens of seconds): an archive with one defect, under CONTRACT_ARCHIVE_DIR,
for a type that is effective *experimental* with every other guard of experimental -> active passing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.unit.quality import quality_traffic as traffic

pytestmark = pytest.mark.airflow

ORDER_CREATED = "order.order-created.v1"


def task_states(dag_run) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {ti.task_id: str(ti.state) for ti in dag_run.get_task_instances()}


def test_the_dag_records_evidence_builds_data_docs_and_refuses_promotion_on_a_failed_expectation(
    dagbag, platform_env, rabbitmq_url, monkeypatch, tmp_path: Path
):
    # rabbitmq_url: platform_env deletes its topology from the broker afterwards
    from contract_platform.catalog import load_catalog
    from contract_platform.catalog.model import Status
    from contract_platform.evidence import EvidenceKind
    from contract_platform.store import SqlRegistry

    catalog = load_catalog(platform_env["catalog"])
    contract = catalog.contracts[ORDER_CREATED]
    deliveries = traffic.clean_traffic(contract, 10)
    traffic.apply_defects(deliveries, {3: traffic.metadata(producer="billing-service")})
    archive = traffic.write_archive(tmp_path / "archive", deliveries)
    monkeypatch.setenv("CONTRACT_ARCHIVE_DIR", str(archive))
    with SqlRegistry.open(platform_env["registry_url"]) as registry:
        state = registry.register(ORDER_CREATED, contract.version, actor="setup")
        registry.apply_transition(ORDER_CREATED, expected=state, to=Status.EXPERIMENTAL, actor="setup", reason="")
        for kind, figures in (
            (EvidenceKind.COMPATIBILITY, {}),
            (EvidenceKind.ARCHIVE_VALIDATION, {"invalid": 0, "total": 10}),
        ):
            registry.add_evidence(
                ORDER_CREATED, contract_version=contract.version, kind=kind, verdict="pass", figures=figures
            )

    dag_run = dagbag.get_dag("envelope_quality").test()

    # The Spark task succeeds although an expectation failed (evidence, not a crash); the run ends red.
    assert task_states(dag_run) == {
        "plan_run": "success",
        "check_envelopes": "success",
        "reconcile_lifecycle": "success",
        "report_findings": "failed",
    }
    assert dag_run.state == "failed"
    index = Path(platform_env["home"]) / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
    results_page = index.with_name("envelope_quality.html")  # the results as they open offline
    assert index.exists() and results_page.exists()
    with SqlRegistry.open(platform_env["registry_url"]) as registry:
        evidence = registry.latest_evidence(ORDER_CREATED, EvidenceKind.ENVELOPE_QUALITY)
        assert evidence is not None and str(evidence.verdict) == "fail"
        assert evidence.figures["failed_expectations"] == ["producer-is-owner-service"]
        assert (evidence.figures["rows"], evidence.figures["unexpected"]["producer-is-owner-service"]) == (10, 1)
        assert (evidence.run_id, evidence.reference) == (dag_run.run_id, str(results_page))
        assert evidence.figures["skipped"].keys() == {"partition-key-cardinality"}  # 10 envelopes: too few to judge
        assert registry.effective(ORDER_CREATED).status is Status.EXPERIMENTAL
        [refusal] = registry.refusals(ORDER_CREATED)
        assert (str(refusal.from_status), str(refusal.to_status)) == ("experimental", "active")
        assert any("producer-is-owner-service" in reason for reason in refusal.reasons)

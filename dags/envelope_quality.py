"""
### Envelope quality

Daily (the envelopes received in the data interval's day) and on demand (trigger form:
*archive* path, empty = the platform's archive root; *since*/*until* `YYYY-MM-DD`, until exclusive,
both empty = everything):
Great Expectations over the archived envelopes, one suite per message type built from the
catalogue (`contract_platform.quality.suite` documents every expectation id).

1. **plan_run** — the catalogue must load and the archive path must exist; otherwise the run
   fails at once, without retry, saying what to fix.
2. **check_envelopes** — the `envelope_quality` Spark job through the Spark provider
   (`spark_default`). It records one `envelope_quality` evidence per type in the registry and
   renders the Data Docs (`<data>/gx/uncommitted/data_docs/local_site/index.html`). Failing
   expectations are *findings, not a crash*: the job runs with `--no-fail-on-findings`, so this
   task fails only when the job could not run.
3. **reconcile_lifecycle** — reads the latest evidence of each type the job covered and
   reconciles their lifecycle, so a passing result can promote *experimental -> active* when the
   other guards pass (a failing one is recorded as a refusal naming the failed expectations).
4. **report_findings** — ends the run red when any type missed an expectation on the envelopes of
   the run's days, listing the expectation ids per type and where the Data Docs are; evidence and
   lifecycle are already done (the same convention as `topic_archive_validation`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from airflow.sdk import get_current_context, task

from contract_platform_airflow.dags import platform_dag
from contract_platform_airflow.intervals import DAILY, archive_param, interval_params, run_range
from contract_platform_airflow.runtime import actor_of, fail_if, fail_on_bad_input, registry, run_id_of
from contract_platform_airflow.spark import spark_submit

PLAN = "plan_run"


def _planned(key: str) -> str:
    return "{{ ti.xcom_pull(task_ids='" + PLAN + "')['" + key + "'] }}"


@platform_dag(
    __doc__,
    schedule=DAILY,
    tags=["quality", "spark"],
    retries=2,
    retry_delay=timedelta(seconds=30),
    params={
        **archive_param("archive root, exchange or date folder, or one file"),
        **interval_params(),
    },
)
def envelope_quality() -> None:
    @task(task_id=PLAN, retries=0)
    @fail_on_bad_input
    def plan_run(params: Mapping[str, Any] | None = None) -> dict[str, str]:
        from pathlib import Path

        from contract_platform import settings
        from contract_platform.catalog import load_catalog
        from contract_platform.errors import ArchiveError
        from contract_platform.quality.runner import default_context_root
        from contract_platform.runs import run_file_name

        context = get_current_context()
        given: dict[str, Any] = dict(params or {})
        catalog = load_catalog()
        archive = str(given.get("archive") or settings.archive_dir())
        if "://" not in archive and not Path(archive).exists():
            raise ArchiveError(f"{archive}: archive path does not exist; give another in the trigger form")
        since, until = run_range(dict(context), given)
        run = run_file_name(run_id_of(context))
        return {
            "archive": archive,
            "catalog": str(catalog.root),
            "gx_root": str(default_context_root()),
            "report": str(settings.data_dir() / "reports" / "envelope_quality" / f"{run}.json"),
            "since": since,
            "until": until,
        }

    check_envelopes = spark_submit(
        task_id="check_envelopes",
        job="envelope_quality",
        reads=_planned("archive"),
        application_args=[
            _planned("archive"),
            "--catalog",
            _planned("catalog"),
            "--gx-root",
            _planned("gx_root"),
            "--report",
            _planned("report"),
            "--since",
            _planned("since"),
            "--until",
            _planned("until"),
            "--run-id",
            "{{ run_id }}",
            "--no-fail-on-findings",
        ],
        # No registry URL here: a templated field is rendered into the UI. The operator sets the tasks' registry
        # (contract_registry_default) in the job's environment when it runs, like every other Spark task.
        retries=1,
    )

    @task
    @fail_on_bad_input
    def reconcile_lifecycle(plan: dict[str, str]) -> dict[str, Any]:
        import json
        from pathlib import Path

        from contract_platform.catalog import load_catalog
        from contract_platform.change import reconcile_catalog
        from contract_platform.evidence import EvidenceKind

        report = json.loads(Path(plan["report"]).read_text(encoding="utf-8"))
        types = [entry["message_type"] for entry in report["types"]]
        context = get_current_context()
        with registry() as store:
            latest = {name: store.latest_evidence(name, EvidenceKind.ENVELOPE_QUALITY) for name in types}
            summary = reconcile_catalog(
                load_catalog(plan["catalog"]), store, actor=actor_of(context), run_id=run_id_of(context), only=types
            )
        return {
            "data_docs": report.get("data_docs"),
            "evidence": {
                name: {
                    "id": record.id,
                    "verdict": str(record.verdict),
                    "failed_expectations": record.figures.get("failed_expectations", []),
                }
                for name, record in latest.items()
                if record is not None
            },
            "reconcile": summary.to_dict(),
        }

    @task(retries=0)
    def report_findings(outcome: dict[str, Any]) -> None:
        docs = outcome.get("data_docs") or "the Data Docs"
        fail_if(
            [
                f"{name}: {', '.join(found['failed_expectations']) or found['verdict']} (evidence #{found['id']}, {docs})"
                for name, found in outcome["evidence"].items()
                if found["verdict"] != "pass"
            ],
            "envelope expectations were not met",
        )

    # Wiring: each call passes the XComArg of an upstream task, resolved to the value its parameter declares
    # when the task runs; Airflow's @task types the call with those parameters, hence arg-type ignores here.
    plan = plan_run()
    outcome = reconcile_lifecycle(plan)  # type: ignore[arg-type]
    plan >> check_envelopes >> outcome
    report_findings(outcome)  # type: ignore[arg-type]


envelope_quality()

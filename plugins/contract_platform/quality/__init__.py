"""Envelope quality (docs/design.md#envelope-quality): Great Expectations suites derived from the catalogue.

    suite_for(contract)          -> [ExpectationSpec]   the table in ``quality.suite`` (ids documented there)
    run_suite(envelopes, catalog) -> QualityReport      GX on Spark, file context, Data Docs
    record_quality(report, ...)  -> evidence            ``envelope_quality`` per type, read by the guards
    telemetry.analytics_off()    -> "False"             GX's usage analytics off before GX is imported

The envelopes frame (``quality.columns``) is built by ``spark_jobs/envelope_quality.py``; the
``envelope_quality`` DAG and ``contractctl quality`` run that job. Importing this package imports
neither Great Expectations nor PySpark: ``run_suite`` does, when it runs. Data Docs land in
``<data>/gx/uncommitted/data_docs/local_site/index.html`` and open offline: ``offline_site.make_offline``
points their pages at the scripts and styles in ``quality/assets/``, copied into ``local_site/static/vendor/``.
"""

from contract_platform.quality.evidence import evidence_figures, record_quality
from contract_platform.quality.report import ExpectationResult, QualityReport, TypeQuality
from contract_platform.quality.runner import data_docs_index, default_context_root, run_suite
from contract_platform.quality.suite import RULES, ExpectationId, ExpectationSpec, suite_for

__all__ = [
    "RULES",
    "ExpectationId",
    "ExpectationResult",
    "ExpectationSpec",
    "QualityReport",
    "TypeQuality",
    "data_docs_index",
    "default_context_root",
    "evidence_figures",
    "record_quality",
    "run_suite",
    "suite_for",
]

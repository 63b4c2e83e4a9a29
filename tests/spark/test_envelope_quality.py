"""Envelope quality (GX on the shared SparkSession) on generated archives with known defects.

One archive of four types is judged once per module, by the job's ``main`` on a copy of the
catalogue whose quote contract tolerates 10 % wrong producers (``quality.mostly``): two types with
defects of every kind (clock skew, wrong producer, reused messageIds, missing correlation ids,
oversize bodies, a routing key with entity ids...), one whose partition keys are minted per message,
and one clean. The tests compare each type's failed expectations and unexpected counts with what
was injected, use the evidence the job recorded for the lifecycle guard, and run the CLI.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.support.offline_browser import (
    CHROMIUM_MISSING,
    chromium_installed,
    offline_chromium,
    open_page,
    screenshot,
    script_errors,
)
from tests.unit.quality import quality_traffic as traffic

from contract_platform.catalog import Catalog, load_catalog
from contract_platform.catalog.model import Status
from contract_platform.cli.main import main as contractctl
from contract_platform.evidence import EvidenceKind
from contract_platform.lifecycle import GuardContext, reconcile
from contract_platform.quality import ExpectationId as E
from contract_platform.quality import QualityReport, suite_for
from contract_platform.store import SqlRegistry
from spark_jobs import envelope_quality as job

pytestmark = pytest.mark.spark

ORDER_CREATED = "order.order-created.v1"  # event, tenancy, ordered by partitionKey
QUOTE = "quote.quote-approved.v1"  # event, maxBodyBytes 131072, no ordering
INVOICE = "billing.invoice-issued.v2"  # event, ordered by partitionKey
GENERATE = "billing.generate-invoice.v1"  # command: clean traffic

# What the archive injects: type -> expectation id -> unexpected envelopes. Every other id: 0.
# Quote also has 2 wrong producers of 40 (5 %), tolerated by its contract copy's mostly 0.9.
EXPECTED = {
    ORDER_CREATED: {
        E.OCCURRED_NOT_AFTER_PUBLISHED: 2,
        E.PUBLISHED_NOT_AFTER_RECEIVED: 1,
        E.CORRELATION_ID_PRESENT: 3,
        E.MESSAGE_ID_UNIQUE: 2,  # one reused id: both envelopes count
        E.TENANT_ID_PRESENT: 1,
        E.PUBLISHED_AT_UTC: 1,
        E.TRACE_ID_LOWERCASE_HEX: 1,
        E.MESSAGE_TYPE_REGISTERED: 1,
        E.PRODUCER_IS_OWNER_SERVICE: 2,  # 2 of 41 (5 %) with mostly 1.0: fails
    },
    QUOTE: {
        E.BODY_WITHIN_BUDGET: 1,
        E.ROUTING_KEY_SINGLE_VALUE: 3,
        E.DELIVERY_MODE_PERSISTENT: 2,  # one transient, one without a delivery mode
        E.CONTENT_TYPE_JSON: 1,
        E.SCHEMA_VERSION_EQUALS_MAJOR: 1,
        E.MESSAGE_VERSION_SEMVER_MAJOR: 1,
        E.CAUSATION_ID_PRESENT: 1,
    },
    INVOICE: {E.PARTITION_KEY_PRESENT: 1, E.PARTITION_KEY_CARDINALITY: 23},
    GENERATE: {},
}
TOLERATED = {QUOTE: {E.PRODUCER_IS_OWNER_SERVICE: 2}}  # unexpected, but within the contract copy's mostly 0.9
ROWS = {ORDER_CREATED: 41, QUOTE: 40, INVOICE: 24, GENERATE: 8}


def order_created_traffic(catalog: Catalog) -> list[traffic.Delivery]:
    contract = catalog.contracts[ORDER_CREATED]
    deliveries = traffic.clean_traffic(contract, 40, per_key=4)
    traffic.apply_defects(
        deliveries,
        {
            1: traffic.occurred_after_published(60),
            2: traffic.occurred_after_published(30),
            3: traffic.occurred_after_published(4),  # within the 5 s clock skew: fine
            4: traffic.received_before_published(60),
            5: traffic.received_before_published(3),  # within the skew
            6: traffic.without("correlationId"),
            7: traffic.without("correlationId"),
            8: traffic.metadata(correlationId=""),  # empty counts as absent
            10: traffic.metadata(messageId=deliveries[0].message_id),
            11: traffic.without("tenantId"),
            12: traffic.published_in_local_time,
            13: traffic.upper_case_trace_id,
            14: traffic.metadata(producer="billing-service"),
            15: traffic.metadata(producer="billing-service"),
        },
    )
    [stray] = traffic.clean_traffic(contract, 1, seed=99)  # on the type's route, with a type nobody registered
    stray.metadata.update(messageType="order.order-creatd.v1", partitionKey=deliveries[0].metadata["partitionKey"])
    redelivered = [
        deliveries[0].redelivery(),  # same messageId again: not a reuse
        deliveries[20].redelivery(producer="rogue-service"),
        deliveries[30].redelivery(correlationId=None),
    ]
    return [*deliveries, stray, *redelivered]


def quote_traffic(catalog: Catalog) -> list[traffic.Delivery]:
    contract = catalog.contracts[QUOTE]
    deliveries = traffic.clean_traffic(contract, 40)
    traffic.apply_defects(
        deliveries,
        {
            1: traffic.metadata(producer="pricing-service"),
            2: traffic.metadata(producer="pricing-service"),
            3: traffic.oversize(contract.max_body_bytes),
            4: traffic.routing_key_with_entity_id,
            5: traffic.routing_key_with_entity_id,
            6: traffic.routing_key_with_entity_id,
            7: traffic.amqp(deliveryMode=1),
            8: traffic.amqp(contentType="text/plain"),
            9: traffic.metadata(schemaVersion=2),
            10: traffic.metadata(messageVersion="2.0.0"),
            11: traffic.without("causationId"),
            12: traffic.amqp(deliveryMode=None),
        },
    )
    return deliveries


def invoice_traffic(catalog: Catalog) -> list[traffic.Delivery]:
    deliveries = traffic.clean_traffic(catalog.contracts[INVOICE], 24, per_key=1)  # a key minted per message
    traffic.apply_defects(deliveries, {0: traffic.without("partitionKey")})
    return deliveries


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory, catalog: Catalog) -> Path:
    deliveries = [
        *order_created_traffic(catalog),
        *quote_traffic(catalog),
        *invoice_traffic(catalog),
        *traffic.clean_traffic(catalog.contracts[GENERATE], 8),
    ]
    unknown = traffic.clean_traffic(catalog.contracts[GENERATE], 1, seed=7)[0]
    unknown.exchange, unknown.routing_key = "marketing.events", "marketing.campaign.sent.v1"
    unknown.metadata["messageType"] = "marketing.campaign-sent.v1"
    root = tmp_path_factory.mktemp("quality-archive")
    return traffic.write_archive(root, [*deliveries, unknown], raw_lines={"billing.events": ['{"exchange": "billi']})


@pytest.fixture(scope="module")
def tolerant_catalog(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Path:
    """The catalogue, with the quote contract tolerating 10 % of envelopes from another producer."""
    copy = shutil.copytree(catalog_dir, tmp_path_factory.mktemp("catalogue") / "contracts")
    contract_file = copy / "quote" / "quote-approved" / "v1" / "contract.yaml"
    text = contract_file.read_text(encoding="utf-8")
    contract_file.write_text(text + "quality: {mostly: {producer-is-owner-service: 0.9}}\n", encoding="utf-8")
    return copy


@pytest.fixture(scope="module")
def run(spark, archive: Path, tolerant_catalog: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``envelope_quality.main`` over the archive: its exit code, report file, Data Docs and registry."""
    out = tmp_path_factory.mktemp("run")
    registry_url = f"sqlite:///{out / 'registry.db'}"
    code = job.main(
        [
            str(archive),
            "--catalog",
            str(tolerant_catalog),
            "--gx-root",
            str(out / "gx"),
            "--report",
            str(out / "report.json"),
            "--registry-url",
            registry_url,
            "--run-id",
            "quality-test",
        ]
    )
    return {"code": code, "out": out, "registry_url": registry_url, "catalog": load_catalog(tolerant_catalog)}


@pytest.fixture(scope="module")
def report(run: dict[str, Any]) -> QualityReport:
    return QualityReport.from_dict(json.loads((run["out"] / "report.json").read_text(encoding="utf-8")))


def test_the_job_exits_1_when_an_expectation_fails(run: dict[str, Any], report: QualityReport):
    assert run["code"] == 1 and not report.success


def test_each_expectation_fails_exactly_where_the_archive_has_defects(report: QualityReport, catalog: Catalog):
    assert [t.message_type for t in report.types] == sorted(EXPECTED)
    for name, expected in EXPECTED.items():
        quality = report.of(name)
        assert quality.rows == ROWS[name], name
        assert sorted(quality.failed) == sorted(expected), name
        found = {**expected, **TOLERATED.get(name, {})}
        assert quality.unexpected == {spec_id: found.get(spec_id, 0) for spec_id in quality.unexpected}, name
        assert quality.evaluated == len(suite_for(catalog.contracts[name])) and not quality.skipped


def test_clean_traffic_from_the_fixtures_meets_every_expectation(report: QualityReport):
    clean = report.of(GENERATE)
    assert clean.success and str(clean.verdict) == "pass"
    assert clean.evaluated == 17  # a command: no causation, no tenancy, no partition key
    assert all(result.observed == 1.0 and result.judged == ROWS[GENERATE] for result in clean.results)
    ordered = report.of(ORDER_CREATED).result(E.PARTITION_KEY_CARDINALITY)
    assert ordered.success and ordered.observed == 1.0  # 4 messages per key (5 for one) pass the rule


def test_gx_on_pandas_in_process_judges_as_gx_on_spark(
    spark, archive: Path, tolerant_catalog: Path, tmp_path: Path, report: QualityReport
):
    """A small window is judged by GX's pandas engine in the job's process (quality.runner.choose_engine), a large
    one by GX on Spark: every type's outcome, figures and samples are the same on both."""
    on_spark = job.run_quality(
        spark, archive, tolerant_catalog, gx_root=tmp_path / "gx", data_docs=False, in_process_rows=0
    )
    assert (report.engine, on_spark.engine) == ("in-process", "spark")
    assert "at most 100,000" in (report.engine_reason or "") and "over 0" in (on_spark.engine_reason or "")
    assert [t.to_dict() for t in on_spark.types] == [t.to_dict() for t in report.types]
    assert (on_spark.unassigned, on_spark.redeliveries) == (report.unassigned, report.redeliveries)


def test_redeliveries_and_unjudged_envelopes_are_left_out_and_counted(report: QualityReport):
    assert report.redeliveries == 3
    assert report.unassigned == {"(none)": 1, "marketing.campaign-sent.v1": 1}
    order_created = report.of(ORDER_CREATED)
    # The redelivered copies (one reusing its messageId, one from a rogue producer, one without a
    # correlationId) would each add one; counted are only the defects of first deliveries.
    assert order_created.rows == 41
    assert order_created.result(E.MESSAGE_ID_UNIQUE).unexpected == 2
    assert order_created.result(E.PRODUCER_IS_OWNER_SERVICE).unexpected == 2
    assert order_created.result(E.CORRELATION_ID_PRESENT).unexpected == 3


def test_samples_are_the_message_ids_of_the_failing_envelopes(report: QualityReport, archive: Path):
    bodies = [
        json.loads(json.loads(line)["body"])
        for path in (archive / "order.events").rglob("*.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    wrong = {b["metadata"]["messageId"] for b in bodies if b["metadata"]["producer"] == "billing-service"}
    assert len(wrong) == 2 and set(report.of(ORDER_CREATED).samples[E.PRODUCER_IS_OWNER_SERVICE]) == wrong
    assert len(report.of(INVOICE).samples[E.PARTITION_KEY_CARDINALITY]) == 10  # at most 10 of 23


def test_mostly_from_the_contract_is_honoured(report: QualityReport):
    tolerated = report.of(QUOTE).result(E.PRODUCER_IS_OWNER_SERVICE)  # contract copy: mostly 0.9
    assert (tolerated.mostly, tolerated.unexpected, tolerated.observed, tolerated.success) == (0.9, 2, 0.95, True)
    strict = report.of(ORDER_CREATED).result(E.PRODUCER_IS_OWNER_SERVICE)  # the same 5 % at the default 1.0
    assert (strict.mostly, strict.unexpected, strict.success) == (1.0, 2, False)
    assert strict.observed == pytest.approx(39 / 41)


def test_data_docs_are_built_in_the_context(report: QualityReport, run: dict[str, Any]):
    index = run["out"] / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
    assert report.data_docs == str(index) and index.exists()
    assert "envelope_quality.order.order-created.v1" in index.read_text(encoding="utf-8")


def test_the_results_page_beside_the_data_docs_holds_every_expectation_of_the_run(
    report: QualityReport, run: dict[str, Any]
):
    """``envelope_quality.html`` (what the main job's summary points to) carries the same outcomes as the report,
    needs nothing from a network, and the Data Docs index links to it; the evidence references it."""
    import re

    page = run["out"] / "gx" / "uncommitted" / "data_docs" / "local_site" / "envelope_quality.html"
    assert report.results_page == str(page)
    text = page.read_text(encoding="utf-8")
    sections = {
        chunk.split('"', 1)[0]: dict(
            re.findall(r'data-expectation="([^"]+)">.*?class="verdict \w+">([^<]+)<', chunk, re.S)
        )
        for chunk in text.split('<section class="message-type" id="')[1:]
    }
    assert set(sections) == {quality.message_type for quality in report.types}
    for quality in report.types:
        expected = {
            r.id: "met" if r.success else ("could not be evaluated" if r.error else "missed") for r in quality.results
        }
        assert sections[quality.message_type] == expected
    assert "missed" in sections["order.order-created.v1"].values()  # the archive has defects
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text) and "<script" not in text
    assert 'href="envelope_quality.html"' in (page.parent / "index.html").read_text(encoding="utf-8")
    with SqlRegistry.open(run["registry_url"]) as registry:
        recorded = registry.evidence("order.order-created.v1", EvidenceKind.ENVELOPE_QUALITY)
    assert [r.reference for r in recorded if r.run_id == "quality-test"] == [str(page)]


def _site(run: dict[str, Any]) -> Path:
    return run["out"] / "gx" / "uncommitted" / "data_docs" / "local_site"


def test_the_data_docs_load_nothing_from_the_network_and_what_they_load_is_in_the_site(run: dict[str, Any]):
    """Every page GX built for the run points at the copies in ``static/vendor`` (quality.offline_site)."""
    from contract_platform.quality.offline_site import CDN_FILES, VENDOR_FOLDER, external_references, loaded_references

    site = _site(run)
    pages = [page for page in site.rglob("*.html") if not page.is_relative_to(site / VENDOR_FOLDER)]
    assert len(pages) >= 1 + 2 * len(EXPECTED)  # the index, a suite and a validation page per type, the results
    vendored = {f"{VENDOR_FOLDER}/{package.folder}/{path}" for package, path in CDN_FILES.values()}
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert external_references(text) == set(), page.relative_to(site)
        for url in loaded_references(text):
            target = (page.parent / url).resolve()
            if target.relative_to(site.resolve()).as_posix() in vendored or "logo-long.png" in url:
                assert target.is_file(), f"{page.relative_to(site)} loads {url}: not there"


@pytest.mark.skipif(not chromium_installed(), reason=CHROMIUM_MISSING)
def test_the_data_docs_and_the_results_page_open_offline_in_a_browser(run: dict[str, Any], tmp_path: Path):
    """The site GX built for the run, opened from disk by a Chromium that reaches no network: the index, a
    failing validation page and ``envelope_quality.html`` run their scripts (jQuery, bootstrap-table, vega...,
    the versions vendored), their tables render, Font Awesome's icons load, and no page asks the network for
    anything. Screenshots: ``<tmp_path>/screenshots/{data-docs-index,data-docs-validation,envelope-quality}.png``
    (pytest's tmp folder of this test, kept for the last three runs)."""
    import tempfile

    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By

    site = _site(run)
    [validation] = sorted(site.glob("validations/envelope_quality/order/order-created/v1/**/*.html"))
    shots = tmp_path / "screenshots"
    loaded = """
        const $ = window.jQuery, table = $ && $.fn.bootstrapTable;
        return {
          jquery: $ && $.fn.jquery, bootstrapTable: table && table.VERSION, popper: typeof window.Popper,
          filterControl: !!(table && 'filterControl' in table.defaults), datepicker: !!($ && $.fn.datepicker),
          modal: !!($ && $.fn.modal), vega: window.vega && vega.version, vegaLite: window.vegaLite && vegaLite.version,
          vegaEmbed: typeof window.vegaEmbed, tables: document.querySelectorAll('div.bootstrap-table table').length,
          navbar: getComputedStyle(document.querySelector('nav.navbar')).display,
          icons: document.querySelectorAll('i.fas, i.far, i.fa').length,
          fontAwesome: document.fonts.check('900 16px "Font Awesome 6 Free"'),
        };"""
    with tempfile.TemporaryDirectory(prefix="chromium-offline-") as user_data:
        driver = offline_chromium(user_data)
        try:
            with pytest.raises(WebDriverException, match="ERR_"):  # the network really is out of reach
                driver.get("https://cdn.jsdelivr.net/npm/vega@5")
            for page, name in ((site / "index.html", "data-docs-index"), (validation, "data-docs-validation")):
                requests = open_page(driver, page)
                state = driver.execute_script(loaded)
                screenshot(driver, shots / f"{name}.png")
                assert [r for r in requests if not r.local] == [], name  # nothing asked of the network
                assert any(r.url.endswith("vega.min.js") and r.failed is None for r in requests), name
                assert script_errors(driver) == [], name
                assert (state["jquery"], state["bootstrapTable"], state["vega"], state["vegaLite"]) == (
                    "3.7.1",
                    "1.19.1",
                    "5.33.1",
                    "5.23.0",
                ), name
                assert state["popper"] == state["vegaEmbed"] == "function", name
                assert state["filterControl"] and state["datepicker"] and state["modal"], name
                assert state["tables"] >= 1 and state["navbar"] == "flex", (name, state)  # bootstrap's styles
            assert state["icons"] >= 1 and state["fontAwesome"], state  # the failed expectations' icons

            requests = open_page(driver, site / "envelope_quality.html")
            screenshot(driver, shots / "envelope-quality.png")
            assert [r for r in requests if not r.local] == [] and script_errors(driver) == []
            assert driver.find_element(By.ID, "overall").text == "fail"
            shown = {
                row.get_attribute("data-expectation") for row in driver.find_elements(By.CSS_SELECTOR, "tr.missed")
            }
            assert set(EXPECTED[ORDER_CREATED]) <= shown
        finally:
            driver.quit()
    assert all((shots / f"{name}.png").stat().st_size > 10_000 for name in ("data-docs-index", "envelope-quality"))


def _seed_other_guards(registry: SqlRegistry, catalog: Catalog, name: str) -> None:
    """``name`` effective experimental, with passing evidence for the other experimental -> active guards."""
    contract = catalog.contracts[name]
    state = registry.register(name, contract.version, actor="setup")
    registry.apply_transition(name, expected=state, to=Status.EXPERIMENTAL, actor="setup", reason="")
    registry.add_evidence(
        name, contract_version=contract.version, kind=EvidenceKind.COMPATIBILITY, verdict="pass", figures={}
    )
    figures = {"invalid": 0, "total": 500}
    registry.add_evidence(
        name, contract_version=contract.version, kind=EvidenceKind.ARCHIVE_VALIDATION, verdict="pass", figures=figures
    )


def test_the_guard_refuses_on_failing_quality_naming_the_expectations_and_allows_a_pass(
    run: dict[str, Any], report: QualityReport
):
    catalog: Catalog = run["catalog"]
    with SqlRegistry.open(run["registry_url"]) as registry:
        recorded = {name: registry.latest_evidence(name, EvidenceKind.ENVELOPE_QUALITY) for name in EXPECTED}
        assert {name: str(r.verdict) for name, r in recorded.items() if r} == {
            ORDER_CREATED: "fail",
            QUOTE: "fail",
            INVOICE: "fail",
            GENERATE: "pass",
        }
        failing = recorded[ORDER_CREATED]
        assert (
            failing is not None
            and failing.reference == (report.results_page or report.data_docs)
            and failing.run_id == "quality-test"
        )
        assert sorted(failing.figures["failed_expectations"]) == sorted(EXPECTED[ORDER_CREATED])
        assert failing.figures["unexpected"][E.CORRELATION_ID_PRESENT] == 3 and failing.figures["rows"] == 41

        for name in (ORDER_CREATED, GENERATE):
            _seed_other_guards(registry, catalog, name)
        now = datetime.now(UTC) + timedelta(seconds=1)
        contract = catalog.contracts[ORDER_CREATED]
        refused = reconcile(contract, Status.EXPERIMENTAL, GuardContext(contract, registry, now))
        assert refused.refused is not None and not refused.steps
        [reason] = refused.refused.reasons
        assert reason.startswith("envelope quality failed on real traffic")
        assert all(expectation in reason for expectation in EXPECTED[ORDER_CREATED])

        contract = catalog.contracts[GENERATE]
        allowed = reconcile(contract, Status.EXPERIMENTAL, GuardContext(contract, registry, now))
        assert allowed.refused is None
        assert [(s.from_status, s.to_status) for s in allowed.steps] == [(Status.EXPERIMENTAL, Status.ACTIVE)]


# -- the job and the CLI on tiny archives -----------------------------------------------------------


def test_the_job_exits_2_on_bad_input_in_one_line(spark, catalog_copy: Path, tmp_path: Path, capsys):
    assert job.main([str(tmp_path / "missing"), "--catalog", str(catalog_copy), "--gx-root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "archive path does not exist" in err and err.strip().count("\n") == 0
    (catalog_copy / "quote" / "quote-approved" / "v1" / "contract.yaml").write_text("messageType: [", encoding="utf-8")
    assert job.main([str(tmp_path), "--catalog", str(catalog_copy)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.strip().count("\n") == 0 and "Traceback" not in err
    assert job.main([str(tmp_path), "--since", "yesterday"]) == 2


def test_contractctl_quality_exit_codes(
    spark, report: QualityReport, archive: Path, catalog_dir: Path, tmp_path: Path, capsys, monkeypatch
):
    args = ["quality", str(archive), "--catalog", str(catalog_dir), "--gx-root", str(tmp_path / "gx")]
    assert contractctl([*args, "--since", "2026-07-02", "--format", "json"]) == 0  # a real local run: none since
    nothing = QualityReport.from_dict(json.loads(capsys.readouterr().out))
    # Only the truncated line is left: no receivedAt to leave it out by, and no type to judge it as.
    assert (nothing.types, nothing.since, nothing.unassigned) == ((), "2026-07-02", {"(none)": 1})

    calls = []

    def judged(spark, archive_path, catalog, **options):  # type: ignore[no-untyped-def]
        calls.append((archive_path, catalog, options))
        return report  # the module's run: expectations failed

    monkeypatch.setattr(job, "run_quality", judged)
    assert contractctl([*args, "--format", "json"]) == 1
    assert QualityReport.from_dict(json.loads(capsys.readouterr().out)) == report
    assert contractctl(args) == 1  # the summary table
    assert calls[0] == (archive, catalog_dir, {"gx_root": tmp_path / "gx", "since": None})

    assert contractctl(["quality", str(tmp_path / "missing"), "--catalog", str(catalog_dir)]) == 2
    assert contractctl(["quality", str(archive), "--catalog", str(tmp_path / "nowhere")]) == 2
    assert contractctl(["quality", str(archive), "--since", "last week"]) == 2


def test_a_broken_great_expectations_folder_exits_2_naming_it(
    spark, archive: Path, catalog_dir: Path, tmp_path: Path, capsys
):
    gx_root = tmp_path / "gx"
    gx_root.mkdir()
    (gx_root / "great_expectations.yml").write_text("config_version: [\n", encoding="utf-8")
    assert job.main([str(archive), "--catalog", str(catalog_dir), "--gx-root", str(gx_root), "--no-data-docs"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(gx_root) in err and "great_expectations.yml" in err
    assert "Traceback" not in err
